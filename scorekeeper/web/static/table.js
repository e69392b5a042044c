/* Table page (tablet beside the tray): the whole game, live, with every host control. */
"use strict";
(function () {
  var root = document.getElementById("app");
  var gameId = root.getAttribute("data-game");
  var base = "/api/games/" + encodeURIComponent(gameId);
  var main = document.getElementById("main");
  var esc = DT.esc;

  var view = null;         // the latest stream message
  var secret = null;       // who has chosen IN/OUT (never what)
  var pad = null;          // what the dice pad holds, reset on every new version
  var padVersion = -1;
  var revealOut = [];      // players the table marks OUT for a direct reveal
  // The game version an action was sent from, until the server answers it. A second tap on
  // that same screen is dropped (a double tap), but once the stream has brought the next
  // screen its taps go through at once: the server's version check keeps them in order.
  var busyAt = null;
  var camera = null;       // the live table's state (camera, pending reading), when a camera is configured
  var fix = null;          // the host's corrections to the pending reading: {id, dice: [{index, die, face, out}]}
  var noticeShown = null;  // the last notice toasted, so each shows once
  var lastCameraState = null;

  var live = DT.live(gameId, {
    onView: function (v) {
      if (view && v.version < view.version) return;  // a late refresh must not undo newer news
      // A rematch started while this finished game is on show: the table follows it.
      if (v.rematch && view && !view.rematch) return followRematch(v.rematch);
      view = v;
      secret = v.secret;
      render();
    },
    onChoices: function (p) { if (view && p && p.version === view.version) { secret = p; render(); } },
    onLive: function (l) { camera = l; renderLive(); },
  });

  // ---- actions -----------------------------------------------------------------------------

  function act(method, url, body, done) {
    var at = view ? view.version : -1;
    if (busyAt === at) return;
    busyAt = at;
    document.body.classList.add("busy");
    DT.hostApi(method, url, body).then(function (result) {
      if (done) done(result);
      var seen = result.version;
      setTimeout(function () { if (view && seen !== undefined && view.version < seen) live.refresh(); }, 1500);
    }).catch(function (error) {
      DT.toast(DT.explain(error), "error");
      if (error.status === 409) live.refresh();
    }).then(function () {
      if (busyAt === at) {
        busyAt = null;
        document.body.classList.remove("busy");
      }
      updateHostUi();
    });
  }

  function sendEvent(event) { act("POST", base + "/events", { event: event, version: view.version }); }

  document.getElementById("undo").addEventListener("click", function () {
    if (!view) return;
    act("POST", base + "/undo", { version: view.version }, function () { DT.toast("Undone ↶"); });
  });
  document.getElementById("becomehost").addEventListener("click", function () {
    DT.hostApi("GET", "/api/whoami").then(function (who) {
      if (who.role !== "host") { DT.forgetHost(); DT.toast("That is not the host token.", "error"); }
      updateHostUi(); render();
    }).catch(function (e) { DT.toast(DT.explain(e), "error"); });
  });

  function updateHostUi() {
    var host = DT.isHost();
    document.getElementById("undo").classList.toggle("hidden", !host);
    document.getElementById("undo").disabled = busyAt !== null || !view || view.events === 0;
    document.getElementById("watchnote").classList.toggle("hidden", host);
    var over = view && view.state.over;
    if (host && !over && !document.getElementById("joincode").textContent) loadInvite();
    if (over) document.getElementById("joincard").classList.add("hidden");
  }

  var inviteAsked = false;
  function loadInvite() {
    if (inviteAsked) return;
    inviteAsked = true;
    DT.api("GET", base + "/invite", undefined, "host").then(function (invite) {
      document.getElementById("joincode").textContent = invite.code;
      document.getElementById("joinurl").textContent = invite.url;
      document.getElementById("qr").innerHTML = invite.svg;
      document.getElementById("joincard").classList.remove("hidden");
    }).catch(function () { inviteAsked = false; /* not the host (yet): no invite shown */ });
  }


  // ---- the camera ------------------------------------------------------------------------------

  var cameraButton = document.getElementById("camera");
  var cameraPanel = document.getElementById("camerapanel");
  var pendingCard = document.getElementById("pending");

  cameraButton.addEventListener("click", function () {
    var open = cameraPanel.classList.contains("hidden");
    cameraPanel.classList.toggle("hidden", !open);
    cameraButton.setAttribute("aria-expanded", String(open));
    // The preview costs the Pi an encoder and a connection: only while someone looks at it.
    document.getElementById("preview").src = open ? "/preview.mjpg" : "";
  });

  var CAMERA_TEXT = {
    live: "◉ camera live", starting: "◌ camera starting…", lost: "✕ camera lost", stalled: "✕ camera stalled",
    ended: "◌ replay ended", stopped: "◌ camera off",
  };

  function renderLive() {
    if (!camera || !camera.enabled) return;
    var c = camera.camera;
    var ok = c.state === "live";
    cameraButton.classList.remove("hidden");
    cameraButton.className = "camera " + (ok ? (camera.scoring && camera.readable ? "on" : "idle") : "off");
    cameraButton.textContent = (CAMERA_TEXT[c.state] || "camera " + c.state) + (ok && !camera.scoring ? " (another game)" : "");
    cameraButton.setAttribute("data-state", c.state);
    var note = [];
    if (!ok) note.push((c.message ? c.message + ". " : "") + "Enter rolls by hand; the camera reconnects by itself.");
    if (camera.reader_message) note.push(camera.reader_message);
    if (ok && !camera.scoring) note.push("The camera scores another game.");
    if (c.skipped) note.push(c.skipped + " unusable frame(s) skipped.");
    var host = DT.isHost();
    document.getElementById("cameranote").innerHTML = esc(note.join(" ")) +
      (host && !camera.scoring && view && !view.state.over ? ' <button type="button" id="scorehere">Score this game with the camera</button>' : "");
    document.body.setAttribute("data-camera", c.state);
    if (c.state !== lastCameraState) {
      if (!ok && lastCameraState !== null && c.state !== "starting") DT.toast((CAMERA_TEXT[c.state] || c.state) + ": enter rolls by hand", "error");
      else if (ok && (lastCameraState === "lost" || lastCameraState === "stalled")) DT.toast("◉ camera back");
      lastCameraState = c.state;
    }
    if (camera.notice && camera.notice.at !== noticeShown) {
      noticeShown = camera.notice.at;
      DT.toast("Camera: " + camera.notice.message);
    }
    renderPending();
  }

  function renderPending() {
    var p = camera && camera.pending;
    if (!p || (view && view.state.over)) {
      pendingCard.classList.add("hidden");
      pendingCard.innerHTML = "";
      fix = null;
      return;
    }
    if (!fix || fix.id !== p.id) {
      fix = { id: p.id, dice: p.reading.dice.map(function (d, i) {
        return { index: i, die: d.die || "tossup", face: d.face || "unsure", out: false };
      }) };
    }
    var flagged = {};
    p.problems.forEach(function (problem) { problem.dice.forEach(function (i) { flagged[i] = true; }); });
    var host = DT.isHost();
    var used = fix.dice.filter(function (d) { return !d.out; }).length;
    var html = "<h3>Camera: this reading needs a look</h3><ul class=\"problems\" id=\"problems\">" +
      p.problems.map(function (problem) { return '<li data-code="' + esc(problem.code) + '">' + esc(problem.message) + "</li>"; }).join("") + "</ul>";
    if (p.reading.image) {
      html += '<div class="photowrap" data-zoom="pending" role="button" tabindex="0" aria-label="show the photo full screen">' +
        '<img class="photo" id="pendingphoto" alt="photo of the doubtful roll" src="' + esc(p.reading.image) +
        '"><svg class="outlines" id="pendingoutlines" aria-hidden="true"></svg></div>';
    }
    html += '<div class="dice" id="pendingdice">' + fix.dice.map(function (d, i) {
      var cls = (flagged[d.index] ? "flagged " : "") + (d.out ? "left-out " : "") + (host ? "tappable" : "");
      var attrs = host ? 'data-pfix="' + i + '" tabindex="0"' : "";
      var tile = DT.dieTile(d.die, d.face, attrs + ' aria-description="' + (flagged[d.index] ? "check this die" : "") + '"', cls);
      return '<span class="pdie">' + tile + (host ? '<button type="button" data-pout="' + i + '">' + (d.out ? "put back" : "not rolled") + "</button>" : "") + "</span>";
    }).join("") + "</div>";
    if (host) {
      html += '<div class="row"><button type="button" class="primary huge" id="applypending">Apply these ' + used + " dice</button>" +
        '<button type="button" class="ghost" id="dismisspending">Dismiss</button></div>' +
        '<p class="muted small">Tap a die to set its face, or fix the dice in the tray: the camera reads them again.</p>';
    } else {
      html += '<p class="muted small">Waiting for the host to confirm the roll.</p>';
    }
    pendingCard.innerHTML = html;
    pendingCard.classList.remove("hidden");
    drawOutlines("pendingphoto", "pendingoutlines", p.reading.dice);
  }

  function resolvePending(action) {
    var body = { action: action };
    if (action === "apply") {
      body.dice = fix.dice.filter(function (d) { return !d.out; }).map(function (d) {
        return { index: d.index, die: d.die, face: d.face };
      });
    }
    act("POST", "/api/live/pending/" + encodeURIComponent(fix.id), body, function (r) {
      DT.toast(r.applied ? "Camera roll applied ✔" : "Reading dismissed");
    });
  }

  pendingCard.addEventListener("click", function (event) {
    if (!fix || !DT.isHost()) return;
    var t = event.target, el;
    if (t.closest("#applypending")) return resolvePending("apply");
    if (t.closest("#dismisspending")) return resolvePending("dismiss");
    if ((el = t.closest("[data-pout]"))) {
      var d = fix.dice[+el.getAttribute("data-pout")];
      d.out = !d.out;
      return renderPending();
    }
    if ((el = t.closest("[data-pfix]"))) return fixPending(+el.getAttribute("data-pfix"));
  });

  function fixPending(position) {
    var die = fix.dice[position];
    DT.pickFace(die.die, die.face, "What does this die show?").then(function (face) {
      if (face) { die.face = face; die.out = false; renderPending(); }
    });
  }

  // ---- the roll's photo, full screen: every die outlined, tap one to check or correct it -------

  document.addEventListener("click", function (event) {
    var wrap = event.target.closest(".photowrap[data-zoom]");
    if (wrap) openPhoto(wrap.getAttribute("data-zoom"));
  });
  document.addEventListener("keydown", function (event) {
    var wrap = event.target.closest && event.target.closest(".photowrap[data-zoom]");
    if (wrap && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); openPhoto(wrap.getAttribute("data-zoom")); }
  });

  function openPhoto(kind) {
    var pending = kind === "pending";
    var reading = pending ? camera && camera.pending && camera.pending.reading : view && view.last_roll && view.last_roll.reading;
    if (!reading || typeof reading.image !== "string") return;
    var all = pending ? reading.dice : (reading.dice_applied || reading.dice || []);
    var targets = pending ? all.map(function (d, i) { return i; }) : eventPositions(all, view.last_roll.event);
    var tappable = DT.isHost() && (pending ? !!fix : !view.state.over);
    var overlay = document.createElement("div");
    overlay.className = "modal photomodal";
    overlay.id = "photoview";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", "the roll's photo");
    overlay.innerHTML = '<div class="photobig"><img id="bigphoto" alt="the roll\'s photo, full size" src="' + esc(reading.image) + '">' +
      '<svg class="outlines" id="bigoutlines"></svg></div><div class="row photobar"><span class="muted">' +
      (tappable ? "Tap a die to check or correct it." : "Every die the camera found, outlined.") + "</span>" +
      '<button type="button" id="closephoto">Close</button></div>';
    document.body.appendChild(overlay);
    drawOutlines("bigphoto", "bigoutlines", all, tappable ? targets : null);
    function close() { if (overlay.parentNode) overlay.parentNode.removeChild(overlay); }
    overlay.addEventListener("click", function (event) {
      var hit = event.target.closest("[data-target]");
      if (hit) {
        close();
        var position = +hit.getAttribute("data-target");
        return pending ? fixPending(position) : correct(position);
      }
      if (event.target === overlay || event.target.closest("#closephoto")) close();
    });
    overlay.querySelector("#closephoto").focus();
  }

  // Which die of the roll's event each outlined die is: the same die (Tally), or one of the same
  // face (Toss Up dice are all alike); a die corrected since takes a position left over.
  function eventPositions(dice, event) {
    if (event.type === "up") return dice.map(function () { return 0; });
    var faces = event.dice.map(function (d) { return typeof d === "string" ? { die: "tossup", face: d } : d; });
    var taken = {};
    function free(test) {
      for (var i = 0; i < faces.length; i++) if (!taken[i] && test(faces[i])) { taken[i] = true; return i; }
      return -1;
    }
    var found = dice.map(function (d) {
      return free(function (f) { return (f.die === "tossup" || f.die === d.die) && f.face === d.face; });
    });
    return found.map(function (at, i) {
      if (at >= 0) return at;
      var die = dice[i].die;
      at = free(function (f) { return f.die === "tossup" || f.die === die; });
      return at >= 0 ? at : free(function () { return true; });
    });
  }

  document.getElementById("cameranote").addEventListener("click", function (event) {
    if (!event.target.closest("#scorehere")) return;
    act("POST", "/api/live/target", { game: gameId }, function () { DT.toast("The camera now scores this game"); });
  });

  // ---- rendering -----------------------------------------------------------------------------

  function render() {
    if (!view) return;
    var s = view.state;
    if (padVersion !== view.version) { pad = null; padVersion = view.version; revealOut = []; }
    var tossup = s.game === "tossup";
    document.getElementById("subtitle").textContent = s.over ? "game over" :
      (tossup ? "turn " + s.turn : "round " + s.round) + (s.options.high_stakes ? " · high stakes" : "");
    document.getElementById("target").textContent = tossup ? "Game ends after someone is over " + s.options.target +
      (s.final_round && !s.over ? " — last turns: " + s.last_turns_left.join(", ") : "") :
      (s.options.one_turn_each ? "One turn each" : "Target " + s.options.target);
    renderScores(s);
    var html = s.over ? gameOver(s) : (tossup ? tossupMain(s) : tallyMain(s));
    main.innerHTML = html;
    outlineDice();
    if (camera) renderLive();
    document.body.setAttribute("data-version", String(view.version));
    document.body.setAttribute("data-phase", s.over ? "over" : (s.phase || s.expects.join(",")));
    updateHostUi();
  }

  function renderScores(s) {
    var tally = s.game === "tallyup";
    var reveal = tally && s.phase === "reveal";
    document.getElementById("scores").innerHTML = s.players.map(function (p) {
      var active = !s.over && p.name === s.active;
      var badges = "";
      if (tally && !s.over) {
        var isIn = s["in"].indexOf(p.name) >= 0;
        badges += isIn ? '<span class="badge in">IN</span>' : '<span class="badge out">OUT</span>';
        if (reveal && isIn && secret) {
          badges += secret.chosen.indexOf(p.name) >= 0 ? '<span class="badge chosen">chosen ✓</span>' :
            '<span class="badge waiting">thinking…</span>';
        }
      }
      var winner = s.over && s.winners.indexOf(p.name) >= 0;
      return '<li class="' + (active ? "active" : "") + (winner ? " winner" : "") + '" data-player="' + esc(p.name) + '">' +
        '<span class="turnmark" aria-label="' + (active ? "their turn" : "") + '">' + (active ? "▶" : "") + "</span>" +
        '<span class="pl"><span class="name">' + esc(p.name) + '</span><span class="badges">' + badges + "</span></span>" +
        '<span class="score">' + p.score + "</span></li>";
    }).join("");
  }

  // Once only: the host's own button and the stream both tell of the rematch.
  var following = false;
  function followRematch(id) {
    if (following) return;
    following = true;
    window.location.href = "/games/" + encodeURIComponent(id);
  }

  function rematchButton() {
    if (view.rematch) return '<a class="button primary huge" id="rematchlink" href="/games/' + esc(view.rematch) + '">Rematch in play ▶</a>';
    return DT.isHost() ? '<button type="button" class="primary huge" id="rematch">Rematch: same players ▶</button>' : "";
  }

  function gameOver(s) {
    var best = Math.max.apply(null, s.players.map(function (p) { return p.score; }));
    var text = s.winners.length > 1 ? s.winners.join(" & ") + " share the win with " + best + "!" :
      s.winners[0] + " wins with " + best + "!";
    return '<div class="banner" id="winner">★ ' + esc(text) + "</div>" + '<section class="card">' + lastPanel(s) + "</section>" +
      '<div class="row">' + rematchButton() + '<a class="button huge" href="/">New game</a>' +
      '<a class="button huge" href="/games/' + esc(gameId) + '/history">History &amp; dice stats</a></div>';
  }

  function oddsPanel() {
    if (!view.odds.length) return "";
    return '<div class="odds" id="odds">' + view.odds.map(function (line) {
      var value = line.percent !== undefined ? line.percent.toFixed(1) + " %" : (line.value > 0 ? "+" : "") + line.value;
      return '<div class="odd" data-key="' + esc(line.key) + '"><b>' + esc(value) + "</b><span>" + esc(line.label) + "</span></div>";
    }).join("") + "</div>";
  }

  // The latest roll (tap a die to correct it) and what the latest event did.
  function lastPanel(s) {
    var html = '<div class="lastroll" id="last">';
    var message = outcomeText(s);
    if (message) html += '<p class="outcome ' + message[1] + '" id="outcome">' + esc(message[0]) + "</p>";
    var roll = view.last_roll;
    if (roll) {
      var host = DT.isHost() && !s.over;
      html += '<div class="muted small">Last roll' + (roll.edited ? ' <span class="edited">corrected</span>' : "") +
        (host ? " · tap a die to correct it" : "") + "</div>";
      if (roll.reading && typeof roll.reading.image === "string") {
        html += '<div class="photowrap" data-zoom="roll" role="button" tabindex="0" aria-label="show the photo full screen">' +
          '<img class="photo" id="rollphoto" alt="photo of the last roll" src="' +
          esc(roll.reading.image) + '"><svg class="outlines" id="outlines" aria-hidden="true"></svg></div>';
      }
      html += '<div class="dice" id="lastdice">' + rollTiles(roll.event, host) + "</div>";
    } else if (!message) {
      html += '<p class="muted">No roll yet.</p>';
    }
    return html + "</div>";
  }

  // Outline every die the camera found on the roll's photo, labelled with its reading.
  function outlineDice() {
    if (!document.getElementById("rollphoto")) return;
    var reading = view.last_roll.reading;
    // A reading the host corrected shows the dice as applied, in the places the camera saw them.
    drawOutlines("rollphoto", "outlines", reading.dice_applied || reading.dice || []);
  }

  // `targets` (one event position per die, or null): the outlines become taps that name it.
  function drawOutlines(imgId, svgId, all, targets) {
    var img = document.getElementById(imgId);
    if (!img) return;
    var dice = (all || []).filter(function (d) { return d.corners && d.corners.length; });
    function draw() {
      var svg = document.getElementById(svgId);
      var w = img.naturalWidth, h = img.naturalHeight;
      if (!svg || !w) return;
      var size = Math.max(12, Math.round(w / 30));
      svg.setAttribute("viewBox", "0 0 " + w + " " + h);
      svg.innerHTML = dice.map(function (d) {
        var points = d.corners.map(function (c) { return c[0] + "," + c[1]; }).join(" ");
        var top = d.corners.reduce(function (a, c) { return c[1] < a[1] ? c : a; });
        // Short labels: the printed face, and a question mark only where the camera is unsure.
        var label = (d.face || "?").replace("x2", "×2") + (d.cocked ? " cocked?" : d.confidence < 0.8 ? " ?" : "");
        var target = targets && targets[all.indexOf(d)] >= 0 ? ' data-target="' + targets[all.indexOf(d)] + '" role="button" tabindex="0"' +
          ' aria-label="' + esc((d.die || "die") + " " + (d.face || "unsure")) + '"' : "";
        return '<polygon class="' + (d.cocked ? "cocked" : "") + '" points="' + esc(points) + '" vector-effect="non-scaling-stroke"' + target + "/>" +
          '<text x="' + top[0] + '" y="' + Math.max(size, top[1] - 4) + '" font-size="' + size + '">' + esc(label) + "</text>";
      }).join("");
    }
    if (img.complete) draw(); else img.addEventListener("load", draw);
  }

  function rollTiles(event, tappable) {
    var attrs = function (i) { return tappable ? 'data-fix="' + i + '" tabindex="0"' : ""; };
    var cls = tappable ? "tappable" : "";
    if (event.type === "up") return DT.dieTile("up", event.face, attrs(0), cls);
    return event.dice.map(function (d, i) {
      return typeof d === "string" ? DT.dieTile("tossup", d, attrs(i), cls) : DT.dieTile(d.die, d.face, attrs(i), cls);
    }).join("");
  }

  function outcomeText(s) {
    var last = s.last;
    if (!last) return null;
    if (s.game === "tossup") {
      if (last.outcome === "red_light") return ["✗ RED LIGHT! " + last.player + " scores nothing this turn.", "bad"];
      if (last.outcome === "caution") return ["⚠ Caution: no green, no red. Roll again or stop.", "warn"];
      if (last.outcome === "greens") return ["✔ " + last.player + " set aside " + last.points + " green" + (last.points === 1 ? "" : "s") + ".", "good"];
      if (last.outcome === "stop") return [""+ last.player + " stopped and banked " + last.points + ".", "good"];
      return null;
    }
    var over = last.round_over ? " The round is over." : "";
    if (last.kind === "choose") return [last.player + " chose " + last.dice.join(", ") + ".", "good"];
    if (last.kind === "main_roll" || last.kind === "bonus_roll") {
      var what = last.kind === "bonus_roll" ? "Bonus roll" : "Roll";
      if (last.outcome === "bust") return ["✗ BUST! " + what + " shows " + last.stars + " stars." + over, "bad"];
      if (last.outcome === "tally_up") return ["★★★ TALLY UP! Shout it!", "warn"];
      return ["✔ " + what + " +" + last.points + (last.circled ? " · circled: the Up Die comes" : "") + ".", "good"];
    }
    if (last.kind === "tally_up") return ["★ " + last.player + " shouted Tally Up! first (+200; everyone still IN +100).", "good"];
    if (last.kind === "reveal") {
      return [(last.out.length ? "Revealed: " + last.out.join(", ") + " OUT, banking " + last.banked + "." :
        "Revealed: everyone stays IN.") + (last.round_over ? " Everyone is OUT: the round is over." : ""), "good"];
    }
    if (last.kind === "up") return ["Up Die: " + last.face.replace("x2", "×2") + ".", "good"];
    return null;
  }

  // ---- Toss Up -------------------------------------------------------------------------------

  function tossupMain(s) {
    var host = DT.isHost();
    var html = '<section class="card now"><div class="nowleft">' +
      '<div class="who" id="who"><em>' + esc(s.active) + "</em>’s turn" + (s.final_round ? ' <span class="badge waiting">final round</span>' : "") + "</div>" +
      '<div class="status"><div class="bignum" id="turnpoints"><small>turn points</small>' + s.turn_points + "</div>" +
      '<div class="bignum" id="inhand"><small>dice in hand</small>' + s.dice_in_hand + "</div></div>" +
      (s.dice_set_aside ? '<div class="dice setaside" aria-label="' + s.dice_set_aside + ' set aside">' +
        repeat(DT.dieTile("tossup", "green", "", "mini"), s.dice_set_aside) + '<span class="muted small">set aside</span></div>' : "") +
      '</div><div class="nowright">' + lastPanel(s) + "</div></section>";
    var canStop = s.expects.indexOf("stop") >= 0;
    html += '<div class="row actions">' + oddsPanel() + (host ? '<button type="button" class="good huge" id="stop"' +
      (canStop ? "" : " disabled") + ">Stop &amp; bank " + s.turn_points + "</button>" : "") + "</div>";
    if (host) html += tossupPad(s);
    return html;
  }

  function repeat(text, n) { var out = ""; for (var i = 0; i < n; i++) out += text; return out; }

  function tossupPad(s) {
    if (!pad) pad = { green: 0, yellow: 0, red: 0 };
    var total = pad.green + pad.yellow + pad.red;
    var need = s.dice_in_hand;
    var html = '<section class="card pad" id="pad"><div class="steppers">';
    ["green", "yellow", "red"].forEach(function (face) {
      html += '<div class="stepper"><div class="row">' + DT.dieTile("tossup", face, "", "small") + '<span class="facename">' + face + "</span></div>" +
        '<div class="row"><button type="button" data-step="' + face + '" data-by="-1" aria-label="one ' + face + ' fewer"' + (pad[face] ? "" : " disabled") + ">−</button>" +
        '<span class="count" id="count-' + face + '">' + pad[face] + "</span>" +
        '<button type="button" data-step="' + face + '" data-by="1" aria-label="one ' + face + ' more"' + (total < need ? "" : " disabled") + ">+</button></div></div>";
    });
    var ready = total === need;
    html += '</div><div class="row"><button type="button" class="primary huge" id="enterroll"' + (ready ? "" : " disabled") + ">Enter roll: " +
      total + " of " + need + " dice</button>" +
      '<button type="button" id="fillrest" class="ghost"' + (total < need ? "" : " disabled") + ">Rest yellow</button>" +
      '<button type="button" id="clearpad" class="ghost">Clear</button></div></section>';
    return html;
  }

  // ---- Tally Up ------------------------------------------------------------------------------

  function tallyMain(s) {
    var host = DT.isHost();
    var html = '<section class="card now"><div class="nowleft">' +
      '<div class="who" id="who"><em>' + esc(s.active) + "</em> rolls</div>" +
      '<div class="status"><div class="bignum' + (s.running_total < 0 ? " neg" : "") + '" id="running"><small>running total</small>' + s.running_total + "</div>" +
      (s.chosen.length ? '<div><div class="muted small">chosen dice</div><div class="dice">' +
        s.chosen.map(function (d) { return chosenTile(d); }).join("") + "</div></div>" : "") +
      '</div></div><div class="nowright">' + lastPanel(s) + "</div></section>";
    html += '<div class="row actions">' + oddsPanel() + "</div>";
    var phase = s.phase;
    if (phase === "choose") html += host ? choosePad(s) : prompt(s.active + " chooses three dice.");
    else if (phase === "main_roll") html += host ? rollPad(s, s.chosen, 3, "Roll the three chosen dice") : prompt("Waiting for the roll.");
    else if (phase === "tally_up") html += tallyUpPanel(s, host);
    else if (phase === "reveal") html += revealPanel(s, host);
    else if (phase === "up") html += host ? upPad() : prompt("Roll the Up Die.");
    else if (phase === "bonus_roll") html += host ? rollPad(s, s.unchosen, s.bonus_dice, "Bonus roll: " + s.bonus_dice + " of the unchosen dice") : prompt("Bonus roll.");
    return html;
  }

  function chosenTile(die) {
    return '<span class="die small tally d-' + esc(die) + '" role="img" aria-label="' + esc(die) + ' die"><i class="tag"></i><b class="face">' +
      esc(die.charAt(0).toUpperCase()) + "</b></span>";
  }

  function prompt(text) { return '<p class="prompt">' + esc(text) + "</p>"; }

  function choosePad(s) {
    if (!pad) pad = { chosen: [] };
    var html = '<section class="card pad" id="pad"><p class="prompt">' + esc(s.active) + ": choose three dice for this round</p><div class=\"padrow\">";
    DT.TALLY_DICE.forEach(function (die) {
      var sel = pad.chosen.indexOf(die) >= 0;
      html += '<button type="button" class="choosebtn' + (sel ? " sel" : "") + '" data-choose="' + die + '" aria-pressed="' + sel + '">' +
        chosenTile(die) + "<span>" + die + "</span></button>";
    });
    return html + '</div><button type="button" class="primary huge" id="confirmchoose"' + (pad.chosen.length === 3 ? "" : " disabled") +
      ">Play these three ▶</button></section>";
  }

  // Face buttons per die; `count` of the listed dice must get a face (a bonus roll uses only some).
  function rollPad(s, dice, count, title) {
    if (!pad) pad = { faces: {} };
    var picked = Object.keys(pad.faces).length;
    var html = '<section class="card pad" id="pad"><h3>' + esc(title) + "</h3>";
    dice.forEach(function (die) {
      html += '<div class="padrow" data-die="' + die + '"><span class="label">' + die + "</span>";
      DT.TALLY_FACES[die].forEach(function (face) {
        var sel = pad.faces[die] === face;
        html += '<button type="button" class="facebtn' + (sel ? " sel" : "") + '" data-die="' + die + '" data-face="' + esc(face) +
          '" aria-pressed="' + sel + '" aria-label="' + die + " " + esc(DT.faceName(face)) + '">' + DT.dieTile(die, face, "", "") + "</button>";
      });
      html += "</div>";
    });
    var ready = picked === count;
    return html + '<button type="button" class="primary huge" id="enterroll"' + (ready ? "" : " disabled") + ">Enter roll" +
      (ready ? "" : " (" + picked + " of " + count + " dice)") + "</button></section>";
  }

  function upPad() {
    return '<section class="card pad" id="pad"><p class="prompt">Roll the Up Die and tap what it shows</p><div class="padrow">' +
      DT.TALLY_FACES.up.map(function (face) {
        return '<button type="button" class="facebtn" data-up="' + esc(face) + '" aria-label="Up Die ' + esc(face) + '">' +
          DT.dieTile("up", face, "", "big") + "</button>";
      }).join("") + "</div></section>";
  }

  function tallyUpPanel(s, host) {
    var html = '<div class="banner shout" id="tallyup">★ ★ ★ TALLY UP! Who shouted first?</div>';
    if (!host) return html;
    return html + '<section class="card"><div class="padrow">' + s.players.map(function (p) {
      return '<button type="button" class="huge" data-shout="' + esc(p.name) + '">★ ' + esc(p.name) + "</button>";
    }).join("") + "</div></section>";
  }

  function revealPanel(s, host) {
    var before = s.reveal_before === "up" ? "before the Up Die" : "before the next roll";
    var waiting = secret ? secret.waiting : s["in"];
    var html = '<section class="card" id="reveal"><p class="prompt">IN or OUT? Everyone still IN decides ' + before + ".</p>" +
      '<p class="small">Phones choose in secret; all choices show at once.' +
      (waiting.length ? ' Still thinking: <b id="waiting">' + esc(waiting.join(", ")) + "</b>" : "") + "</p>";
    if (host) {
      html += '<div class="padrow"><span class="label small">No phone?</span>' + waiting.map(function (name) {
        return '<button type="button" data-secret="' + esc(name) + '">Secret: ' + esc(name) + "</button>";
      }).join("") + "</div>";
      html += '<div class="padrow"><span class="label small">Or tap who goes OUT</span>' + s["in"].map(function (name) {
        var out = revealOut.indexOf(name) >= 0;
        return '<button type="button" class="toggle' + (out ? " sel" : "") + '" data-toggle="' + esc(name) + '" aria-pressed="' + out + '">' + esc(name) + "</button>";
      }).join("") + '</div><div class="row" style="margin-top:10px"><button type="button" class="primary huge" id="revealnow">Reveal: ' +
        (revealOut.length ? esc(revealOut.join(", ")) + " OUT" : "everyone stays IN") + "</button></div>";
    }
    return html + "</section>";
  }

  function secretChoice(name) {
    var overlay = document.createElement("div");
    overlay.className = "modal";
    overlay.innerHTML = '<div class="sheet"><h2>' + esc(name) + ", choose in secret</h2>" +
      '<p class="muted">Others, look away! The choice stays hidden until everyone has chosen.</p>' +
      '<div class="decide"><button type="button" class="good" data-c="in">IN ✓<small>keep playing</small></button>' +
      '<button type="button" class="bad" data-c="out">OUT ✗<small>bank ' + view.state.running_total + "</small></button></div>" +
      '<button type="button" class="button ghost cancel" style="margin-top:12px">Cancel</button></div>';
    overlay.addEventListener("click", function (event) {
      var b = event.target.closest("[data-c]");
      if (b) {
        document.body.removeChild(overlay);
        act("POST", base + "/choices", { player: name, choice: b.getAttribute("data-c"), version: view.version }, function (r) {
          DT.toast(r.revealed ? "Everyone has chosen: revealed!" : name + " has chosen.");
        });
      } else if (event.target === overlay || event.target.closest(".cancel")) {
        document.body.removeChild(overlay);
      }
    });
    document.body.appendChild(overlay);
  }

  // ---- taps --------------------------------------------------------------------------------------

  main.addEventListener("click", function (event) {
    if (!view || !DT.isHost()) return;
    var s = view.state;
    var t = event.target;
    var el;
    if ((el = t.closest("[data-step]"))) {
      pad[el.getAttribute("data-step")] += +el.getAttribute("data-by");
      return render();
    }
    if (t.closest("#clearpad")) { pad = null; return render(); }
    if (t.closest("#fillrest")) { pad.yellow += s.dice_in_hand - pad.green - pad.yellow - pad.red; return render(); }
    if (t.closest("#stop")) return sendEvent({ type: "stop" });
    if (t.closest("#enterroll")) {
      if (s.game === "tossup") {
        var dice = [];
        ["green", "yellow", "red"].forEach(function (f) { for (var i = 0; i < pad[f]; i++) dice.push(f); });
        return sendEvent({ type: "roll", dice: dice });
      }
      var order = s.phase === "main_roll" ? s.chosen : s.unchosen;
      return sendEvent({ type: "roll", dice: order.filter(function (d) { return pad.faces[d]; }).map(function (d) {
        return { die: d, face: pad.faces[d] };
      }) });
    }
    if ((el = t.closest("[data-choose]"))) {
      var die = el.getAttribute("data-choose");
      var at = pad.chosen.indexOf(die);
      if (at >= 0) pad.chosen.splice(at, 1); else if (pad.chosen.length < 3) pad.chosen.push(die);
      return render();
    }
    if (t.closest("#confirmchoose")) return sendEvent({ type: "choose", dice: pad.chosen.slice() });
    if ((el = t.closest(".facebtn[data-die]"))) {
      var d = el.getAttribute("data-die"), f = el.getAttribute("data-face");
      var limit = s.phase === "bonus_roll" ? s.bonus_dice : 3;
      if (pad.faces[d] === f) delete pad.faces[d];
      else if (pad.faces[d] || Object.keys(pad.faces).length < limit) pad.faces[d] = f;
      else DT.toast("Only " + limit + " dice are rolled: tap a chosen face again to clear it.");
      return render();
    }
    if ((el = t.closest("[data-up]"))) return sendEvent({ type: "up", face: el.getAttribute("data-up") });
    if ((el = t.closest("[data-shout]"))) return sendEvent({ type: "tally_up", player: el.getAttribute("data-shout") });
    if ((el = t.closest("[data-toggle]"))) {
      var name = el.getAttribute("data-toggle");
      var i = revealOut.indexOf(name);
      if (i >= 0) revealOut.splice(i, 1); else revealOut.push(name);
      return render();
    }
    if (t.closest("#revealnow")) {
      return sendEvent({ type: "reveal", out: s["in"].filter(function (n) { return revealOut.indexOf(n) >= 0; }) });
    }
    if ((el = t.closest("[data-secret]"))) return secretChoice(el.getAttribute("data-secret"));
    if ((el = t.closest("[data-fix]"))) return correct(+el.getAttribute("data-fix"));
    if (t.closest("#rematch")) {
      return act("POST", base + "/rematch", undefined, function (started) { followRematch(started.id); });
    }
  });

  // A tap on a die of the last roll: pick the right face, then the server re-folds the game.
  function correct(position) {
    var roll = view.last_roll;
    var event = JSON.parse(JSON.stringify(roll.event));
    var die, current;
    if (event.type === "up") { die = "up"; current = event.face; }
    else if (typeof event.dice[position] === "string") { die = "tossup"; current = event.dice[position]; }
    else { die = event.dice[position].die; current = event.dice[position].face; }
    DT.pickFace(die, current, "Correct this " + (die === "tossup" ? "die" : die + " die")).then(function (face) {
      if (!face || face === current) return;
      if (event.type === "up") event.face = face;
      else if (die === "tossup") event.dice[position] = face;
      else event.dice[position].face = face;
      act("PUT", base + "/events/" + roll.index, { event: event, version: view.version }, function () {
        DT.toast("Corrected ✎");
      });
    });
  }

  // A token kept from an earlier server run may be stale: check it once, quietly.
  if (DT.isHost()) {
    DT.api("GET", "/api/whoami", undefined, "host").then(function (who) {
      if (who.role !== "host") DT.forgetHost();
    }).catch(function (error) {
      if (error.status === 401) DT.forgetHost();
    }).then(function () { updateHostUi(); render(); });
  }
  updateHostUi();
})();
