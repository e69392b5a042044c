/* Calibration wizard: six steps, each a POST to /api/calibrate/...; the server keeps the state. */
"use strict";
(function () {
  var esc = DT.esc;
  var root = document.getElementById("cal");
  var state = null; // the session as the server last described it
  var editors = {};
  var SVGNS = "http://www.w3.org/2000/svg";

  function $(id) { return document.getElementById(id); }
  function fail(error) { DT.toast(DT.explain(error), "error"); if (error && typeof error === "object") error.told = true; }
  // busy() passes a failure on for callers that show it in place; one already told to the user
  // in a toast is no page error when nobody else handles it.
  window.addEventListener("unhandledrejection", function (event) { if (event.reason && event.reason.told) event.preventDefault(); });

  function busy(button, promise) {
    button.disabled = true;
    button.classList.add("busy");
    return promise.then(function (value) { button.disabled = false; button.classList.remove("busy"); return value; },
      function (error) { button.disabled = false; button.classList.remove("busy"); fail(error); throw error; });
  }

  function post(path, body) { return DT.hostApi("POST", "/api/calibrate" + path, body === undefined ? {} : body); }

  // ---- steps ----------------------------------------------------------------------------------

  function show(step) {
    Array.prototype.forEach.call(document.querySelectorAll(".calstep"), function (el) {
      el.classList.toggle("hidden", el.getAttribute("data-step") !== step);
    });
    Array.prototype.forEach.call(document.querySelectorAll("#steps li"), function (li) {
      var s = li.getAttribute("data-step");
      li.classList.toggle("current", s === step);
      li.classList.toggle("done", !!(state && state.done[s]));
    });
    $("startcard").classList.toggle("hidden", !!step);
    root.setAttribute("data-step", step || "");
    var preview = $("livepreview");
    // The preview holds a connection open: only while step 1 shows it.
    if (step === "camera") preview.src = "/preview.mjpg"; else preview.removeAttribute("src");
  }

  function refresh() {
    return DT.hostApi("GET", "/api/calibrate").then(function (data) {
      state = data.session;
      renderProfiles(data.profiles, data.active);
      var cam = $("camerastate");
      if (data.camera) {
        cam.className = "live " + (data.camera.state === "live" ? "on" : "off");
        cam.textContent = (data.camera.state === "live" ? "● " : "○ ") + "camera " + data.camera.state;
      }
      return data;
    });
  }

  function renderProfiles(profiles, active) {
    var list = $("profiles");
    if (!profiles.length) { list.innerHTML = '<li class="muted">None yet: the wizard makes the first one.</li>'; return; }
    list.innerHTML = profiles.map(function (p) {
      return '<li data-profile="' + esc(p.name) + '"><div class="what"><b>' + esc(p.name) + "</b>" +
        (p.active ? ' <span class="badge in">active</span>' : "") +
        (p.ok ? '<br><span class="muted">' + esc((p.created || "").replace("T", " ").slice(0, 16)) +
          (p.taught_tally ? " · Tally Dice taught" : "") + "</span>"
          : '<br><span class="outcome bad">' + esc(p.error) + "</span>") + "</div>" +
        (p.ok && !p.active ? '<button type="button" data-activate="' + esc(p.name) + '">Use</button>' : "") + "</li>";
    }).join("");
  }

  $("profiles").addEventListener("click", function (event) {
    var name = event.target.getAttribute("data-activate");
    if (!name) return;
    busy(event.target, post("/profiles/" + encodeURIComponent(name) + "/activate")).then(function () {
      DT.toast("Now using " + name); refresh();
    });
  });

  $("startform").addEventListener("submit", function (event) {
    event.preventDefault();
    $("starterror").textContent = "";
    busy($("startcal"), post("/start", { name: $("profilename").value.trim() })).then(function (data) {
      state = data.session;
      show("camera");
    }).catch(function (e) { $("starterror").textContent = "⚠ " + DT.explain(e); });
  });

  Array.prototype.forEach.call(document.querySelectorAll("button.next"), function (button) {
    button.addEventListener("click", function () { refresh().then(function () { show(button.getAttribute("data-next")); }); });
  });

  // ---- 1 camera -------------------------------------------------------------------------------

  $("checkcamera").addEventListener("click", function () {
    $("hints").innerHTML = '<li class="muted">Checking the picture…</li>';
    busy($("checkcamera"), post("/camera")).then(function (data) {
      var f = data.framing;
      $("hints").innerHTML = f.hints.length ? f.hints.map(function (h) { return '<li class="warn">⚠ ' + esc(h) + "</li>"; }).join("")
        : '<li class="good">✓ The picture looks good: sharp, light enough, the whole tray in view.</li>';
    }).catch(function (error) {
      // The toast fades; the reason stays where the verdict would have been.
      $("hints").innerHTML = '<li class="warn">⚠ The picture could not be checked: ' + esc(DT.explain(error)) + "</li>";
    });
  });

  // ---- 2 empty tray ---------------------------------------------------------------------------

  var corners = null;
  $("captureempty").addEventListener("click", function () {
    busy($("captureempty"), post("/empty")).then(function (data) {
      corners = data.tray;
      $("emptywrap").classList.remove("hidden");
      $("savetray").classList.remove("hidden");
      $("traynote").textContent = data.note || (data.cut_off.length ? "The tray runs off the picture at the " +
        data.cut_off.join(" and ") + ": move the camera (step 1) if dice can lie there." : "Tray found.");
      var img = $("emptyphoto");
      img.onload = drawTray;
      img.src = data.shot.url;
    });
  });

  function drawTray() {
    var img = $("emptyphoto"), svg = $("trayoverlay");
    if (!corners || !img.naturalWidth) return;
    svg.setAttribute("viewBox", "0 0 " + img.naturalWidth + " " + img.naturalHeight);
    var r = Math.round(img.naturalWidth / 45);
    svg.innerHTML = '<polygon id="traypoly" points="' + corners.map(function (c) { return c[0] + "," + c[1]; }).join(" ") +
      '" vector-effect="non-scaling-stroke"/>' + corners.map(function (c, i) {
        return '<circle class="handle" data-corner="' + i + '" cx="' + c[0] + '" cy="' + c[1] + '" r="' + r + '"/>';
      }).join("");
  }

  function svgPoint(svg, event) {
    var p = svg.createSVGPoint();
    p.x = event.clientX; p.y = event.clientY;
    var q = p.matrixTransform(svg.getScreenCTM().inverse());
    return [Math.round(q.x * 10) / 10, Math.round(q.y * 10) / 10];
  }

  (function dragCorners() {
    var svg = $("trayoverlay"), dragging = null;
    svg.addEventListener("pointerdown", function (event) {
      var i = event.target.getAttribute("data-corner");
      if (i === null) return;
      dragging = +i;
      svg.setPointerCapture(event.pointerId);
      event.preventDefault();
    });
    svg.addEventListener("pointermove", function (event) {
      if (dragging === null) return;
      corners[dragging] = svgPoint(svg, event);
      drawTray();
    });
    function end() { dragging = null; }
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
  })();

  $("savetray").addEventListener("click", function () {
    busy($("savetray"), post("/tray", { corners: corners })).then(function (data) {
      corners = data.tray; drawTray();
      $("traynote").textContent = "Tray outline saved.";
    });
  });

  // ---- 3 exposure -----------------------------------------------------------------------------

  $("lockexposure").addEventListener("click", function () {
    busy($("lockexposure"), post("/exposure", { relock: true })).then(function (data) {
      var e = data.exposure;
      $("exposurenote").innerHTML = e.locked
        ? "✓ Locked: exposure " + esc(e.ExposureTime) + " µs, gain " + esc(Number(e.AnalogueGain).toFixed(2)) +
          ", colour gains " + esc((e.ColourGains || []).map(function (g) { return Number(g).toFixed(2); }).join(" / "))
        : '<span class="warn">ⓘ ' + esc(e.note) + "</span>";
    });
  });

  // ---- rolls: read, correct, confirm ----------------------------------------------------------

  var TOSSUP_CHOICES = [["tossup", "green"], ["tossup", "yellow"], ["tossup", "red"]];
  function tallyChoices() {
    var out = [];
    DT.TALLY_DICE.concat(["up"]).forEach(function (die) {
      DT.TALLY_FACES[die].forEach(function (face) { out.push([die, face]); });
    });
    return out;
  }

  // One tap: which die and face this is, or "not a die". Resolves {die, face}, "remove" or null.
  function chooseDie(kind, title, removable) {
    return new Promise(function (resolve) {
      var choices = kind === "tossup" ? TOSSUP_CHOICES : tallyChoices();
      var overlay = document.createElement("div");
      overlay.className = "modal";
      overlay.setAttribute("role", "dialog");
      overlay.setAttribute("aria-modal", "true");
      overlay.innerHTML = '<div class="sheet"><h2>' + esc(title) + '</h2><div class="pick ' + kind + '">' +
        choices.map(function (c) {
          return '<button type="button" class="pickface" data-die="' + esc(c[0]) + '" data-face="' + esc(c[1]) + '">' +
            DT.dieTile(c[0], c[1], "", kind === "tossup" ? "big" : "small") + "</button>";
        }).join("") + "</div>" + (removable ? '<button type="button" class="button bad" data-remove="1">Not a die</button> ' : "") +
        '<button type="button" class="button ghost cancel">Cancel</button></div>';
      function done(value) { document.body.removeChild(overlay); resolve(value); }
      overlay.addEventListener("click", function (event) {
        var pick = event.target.closest("[data-face]");
        if (pick) return done({ die: pick.getAttribute("data-die"), face: pick.getAttribute("data-face") });
        if (event.target.closest("[data-remove]")) return done("remove");
        if (event.target === overlay || event.target.closest(".cancel")) done(null);
      });
      document.body.appendChild(overlay);
    });
  }

  function Editor(kind, box, onConfirmed) {
    this.kind = kind; this.box = box; this.onConfirmed = onConfirmed;
    this.shot = null; this.dice = [];
  }

  Editor.prototype.load = function (shot) {
    this.shot = shot;
    this.dice = shot.dice.map(function (d, i) {
      return { die: d.die, face: d.face, center: d.center, corners: d.corners, index: i };
    });
    this.render();
  };

  Editor.prototype.render = function () {
    var self = this, shot = this.shot;
    var unsure = this.dice.filter(function (d) { return !d.die || !d.face || d.face === "unsure" || d.die === "unsure"; }).length;
    // Dice whose faces the lamp's reflection washed out, or that lay in a wall's deep shadow: naming
    // them here teaches nothing, moving or adding light helps.
    var glare = shot.dice.filter(function (d) { return d.glare; }).length;
    var shade = shot.dice.filter(function (d) { return d.shade; }).length;
    this.box.classList.remove("hidden");
    this.box.innerHTML = '<div class="photowrap calphoto"><img class="photo" alt="the roll" src="' + esc(shot.url) + '">' +
      '<svg class="overlay rolloverlay" viewBox="0 0 ' + shot.width + " " + shot.height + '" aria-label="the roll; tap where a die was missed">' +
      this.dice.map(function (d, i) {
        var points = d.corners ? d.corners.map(function (c) { return c[0] + "," + c[1]; }).join(" ") : "";
        return points ? '<polygon data-i="' + i + '" points="' + points + '" vector-effect="non-scaling-stroke"/>'
          : '<circle data-i="' + i + '" cx="' + d.center[0] + '" cy="' + d.center[1] + '" r="' + shot.width / 60 + '"/>';
      }).join("") + "</svg></div>" +
      '<p class="muted">' + this.dice.length + " dice" + (unsure ? " · <b>" + unsure + " to name</b>" : "") + "</p>" +
      (glare ? '<p class="warn glarenote">The lamp\'s reflection washed ' + (glare === 1 ? "1 die" : glare + " dice") +
        " out white: move the lamp off to one side of the tray, then roll again.</p>" : "") +
      (shade ? '<p class="warn shadenote">' + (shade === 1 ? "1 die lay" : shade + " dice lay") +
        " in the shadow of the tray's wall, too dark to read: light that side of the tray too, or raise the lamp, then roll again.</p>" : "") +
      '<div class="dice rolldice">' + this.dice.map(function (d, i) {
        var attrs = 'data-i="' + i + '" data-x="' + d.center[0] + '" data-y="' + d.center[1] + '" data-die="' +
          esc(d.die || "") + '" data-face="' + esc(d.face || "") + '" tabindex="0"';
        return d.die && d.face && d.face !== "unsure" && d.die !== "unsure"
          ? DT.dieTile(d.die, d.face, attrs, "tappable") : DT.blankDie(d.die === "unsure" || !d.die ? (self.kind === "tossup" ? "tossup" : "up") : d.die, attrs);
      }).join("") + "</div>" +
      '<div class="row"><button type="button" class="primary confirm"' + (unsure ? " disabled" : "") + ">✓ These are right</button></div>";
  };

  Editor.prototype.fix = function (i) {
    var self = this;
    chooseDie(this.kind, "What does this die show?", true).then(function (choice) {
      if (!choice) return;
      if (choice === "remove") self.dice.splice(i, 1);
      else { self.dice[i].die = choice.die; self.dice[i].face = choice.face; }
      self.render();
    });
  };

  Editor.prototype.add = function (point) {
    var self = this;
    chooseDie(this.kind, "A die was missed here: what does it show?", false).then(function (choice) {
      if (!choice || choice === "remove") return;
      self.dice.push({ die: choice.die, face: choice.face, center: point });
      self.render();
    });
  };

  Editor.prototype.confirm = function (button) {
    var self = this;
    var dice = this.dice.map(function (d) {
      var out = { die: d.die, face: d.face, center: d.center };
      if (d.corners) out.corners = d.corners;
      if (d.index !== undefined) out.index = d.index;
      return out;
    });
    return busy(button, post("/confirm", { shot: this.shot.id, dice: dice })).then(function (data) {
      self.box.classList.add("hidden");
      self.box.innerHTML = "";
      self.onConfirmed(data);
    });
  };

  function wire(editor) {
    editor.box.addEventListener("click", function (event) {
      var target = event.target.closest("[data-i]");
      if (event.target.closest("button.confirm")) return editor.confirm(event.target.closest("button.confirm"));
      if (target) return editor.fix(+target.getAttribute("data-i"));
      var svg = event.target.closest("svg.rolloverlay");
      if (svg) editor.add(svgPoint(svg, event));
    });
  }

  editors.tossup = new Editor("tossup", $("tossupeditor"), function (data) {
    var l = data.learned;
    $("tossuplearned").innerHTML = "✓ Learned from " + esc(l.confirmed) + " dice: a die is " + esc(l.die_size) +
      " px wide; the calibrated reader finds " + esc(l.found) + " of them" + (l.false ? " and " + esc(l.false) + " extra" : "") +
      "." + (l.light_gains ? " The light is dim for the camera: pictures are brightened up to " +
        esc(Math.max.apply(null, l.light_gains).toFixed(1)) + "× (a brighter lamp reads better still)." : "") +
      " Roll again to add another roll, or go on.";
  });
  editors.tallyup = new Editor("tallyup", $("tallyeditor"), function (data) { renderCoverage(data.coverage); });
  wire(editors.tossup);
  wire(editors.tallyup);

  function readRoll(kind, button) {
    busy(button, post("/roll", { dice: kind })).then(function (data) { editors[kind].load(data.shot); });
  }
  $("rolltossup").addEventListener("click", function () { readRoll("tossup", $("rolltossup")); });
  $("rolltally").addEventListener("click", function () { readRoll("tallyup", $("rolltally")); });

  function renderCoverage(c) {
    $("tallyprogress").value = c.progress;
    $("tallypercent").textContent = Math.round(c.progress * 100) + " %";
    // In the order of the rule sheet (the JSON object's keys arrive sorted).
    var rows = DT.TALLY_DICE.concat(["up"]).filter(function (die) { return c.dice[die]; }).map(function (die) {
      return '<div class="covrow"><span class="covdie">' + esc(die) + "</span>" + DT.TALLY_FACES[die].map(function (face) {
        var n = c.dice[die][face] || 0;
        return '<span class="cov ' + (n >= c.need ? "seen" : n ? "some" : "none") + '" data-die="' + esc(die) + '" data-face="' +
          esc(face) + '" title="seen ' + n + " of " + c.need + '">' + DT.faceText(face) + " <small>" + Math.min(n, c.need) +
          "/" + c.need + "</small></span>";
      }).join("") + "</div>";
    });
    $("coverage").innerHTML = rows.join("") + (c.complete ? '<p class="good">✓ Every face seen ' + c.need + " times.</p>"
      : '<p class="muted">Still needed: ' + c.missing.length + " faces.</p>");
    $("teach").classList.toggle("hidden", !c.complete);
  }

  $("teach").addEventListener("click", function () {
    busy($("teach"), post("/teach")).then(function (data) {
      $("teachnote").innerHTML = "✓ Your Tally Dice are learned" + (data.problems.length ? " (" + data.problems.length +
        " photo problem(s): " + esc(data.problems.join("; ")) + ")" : "") + ".";
    });
  });

  // ---- 6 check and save -----------------------------------------------------------------------

  $("runcheck").addEventListener("click", function () {
    busy($("runcheck"), post("/check")).then(function (data) {
      var c = data.check;
      $("verdict").className = "verdict " + (c.ready ? "good" : "bad");
      $("verdict").textContent = c.ready ? "✓ Ready: the scanner reads this table." : "Not ready yet: fix what is listed below.";
      $("problems").innerHTML = c.problems.map(function (p) { return '<li class="warn">⚠ ' + esc(p) + "</li>"; }).join("");
      $("confusion").innerHTML = ["tossup", "tallyup"].filter(function (set) { return c.confusion[set]; }).map(function (set) {
        return confusionTable(set, c.summary[set], c.confusion[set]);
      }).join("");
      $("saveprofile").classList.remove("hidden");
    });
  });

  function confusionTable(set, summary, confusion) {
    var reads = {};
    Object.keys(confusion).forEach(function (t) { Object.keys(confusion[t]).forEach(function (r) { reads[r] = 1; }); });
    var cols = Object.keys(reads).sort();
    return '<h3>' + (set === "tossup" ? "Toss Up" : "Tally") + '</h3><p class="muted">Dice found ' +
      pct(summary.detection_recall) + ", faces right " + pct(summary.face_accuracy) + " over " + esc(summary.labelled_dice) +
      ' dice.</p><div class="tablewrap"><table class="confusion" data-set="' + set + '"><thead><tr><th>true \\ read</th>' +
      cols.map(function (r) { return "<th>" + esc(r) + "</th>"; }).join("") + "</tr></thead><tbody>" +
      Object.keys(confusion).sort().map(function (t) {
        return "<tr><th>" + esc(t) + "</th>" + cols.map(function (r) {
          var n = confusion[t][r] || 0;
          return '<td class="' + (n && r !== t ? "off" : n ? "on" : "") + '">' + (n || "") + "</td>";
        }).join("") + "</tr>";
      }).join("") + "</tbody></table></div>";
  }

  function pct(v) { return v === null || v === undefined ? "–" : Math.round(v * 1000) / 10 + " %"; }

  $("saveprofile").addEventListener("click", function () {
    busy($("saveprofile"), post("/save", { activate: true })).then(function (data) {
      state = data.session;
      $("savednote").innerHTML = "✓ Saved as <b>" + esc(data.saved) + "</b> and in use. <a href=\"/\">Back to the games</a>";
      refresh();
    });
  });

  refresh().then(function () { show(null); }).catch(fail);
})();
