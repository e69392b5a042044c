/* History: every event with its result, corrections by the host, and dice fairness charts. */
"use strict";
(function () {
  var root = document.getElementById("app");
  var gameId = root.getAttribute("data-game");
  var base = "/api/games/" + encodeURIComponent(gameId);
  var esc = DT.esc;
  var data = null;
  var loading = false, again = false;

  DT.live(gameId, { onView: function () { load(); } });

  function load() {
    if (loading) { again = true; return; }
    loading = true;
    Promise.all([DT.api("GET", base + "/events"), DT.api("GET", base + "/stats")]).then(function (r) {
      data = r[0];
      document.body.setAttribute("data-version", String(data.version));
      renderRows(r[0]);
      renderStats(r[1]);
    }).catch(function (e) { DT.toast(DT.explain(e), "error"); }).then(function () {
      loading = false;
      if (again) { again = false; load(); }
    });
  }

  function tiles(event, host, index) {
    var attrs = function (i) { return host ? 'data-fix="' + index + ":" + i + '" tabindex="0"' : ""; };
    var cls = "small" + (host ? " tappable" : "");
    if (event.type === "up") return DT.dieTile("up", event.face, attrs(0), cls);
    return event.dice.map(function (d, i) {
      return typeof d === "string" ? DT.dieTile("tossup", d, attrs(i), cls) : DT.dieTile(d.die, d.face, attrs(i), cls);
    }).join("");
  }

  function action(row, host) {
    var e = row.event;
    if (e.type === "roll" || e.type === "up") return '<div class="dice">' + tiles(e, host, row.index) + "</div>" + readingNote(row.reading);
    if (e.type === "stop") return "stop";
    if (e.type === "choose") return "chose " + esc(e.dice.join(", "));
    if (e.type === "reveal") return "reveal: " + (e.out.length ? esc(e.out.join(", ")) + " OUT" : "all stay IN");
    if (e.type === "tally_up") return "★ " + esc(e.player) + " shouted Tally Up!";
    return esc(e.type);
  }

  // A camera roll keeps its photo and how sure the scanner was of each die.
  function readingNote(reading) {
    if (!reading || typeof reading.image !== "string") return "";
    var confidences = (reading.dice || []).map(function (d) { return d.confidence; }).filter(function (c) { return typeof c === "number"; });
    var lowest = confidences.length ? Math.min.apply(null, confidences) : null;
    return '<div class="small muted reading"><a href="' + esc(reading.image) + '" target="_blank" rel="noopener">' +
      '<img class="thumb" loading="lazy" alt="photo of this roll" src="' + esc(reading.image) + '"></a> camera' +
      sureness(lowest) + (reading.corrected ? " · fixed by the host" : "") + "</div>";
  }

  // How sure the camera was of its least sure die; "sure of every die" where none fell short.
  function sureness(lowest) {
    if (lowest === null) return "";
    var percent = Math.round(lowest * 100);
    return percent >= 100 ? ": sure of every die" : ": least sure die " + percent + " %";
  }

  function result(row) {
    var r = row.result || {};
    var text;
    if (r.outcome === "red_light") text = '<span class="outcome bad">✗ red light</span>';
    else if (r.outcome === "caution") text = '<span class="outcome warn">⚠ caution</span>';
    else if (r.outcome === "greens") text = "+" + r.points + " green";
    else if (r.outcome === "stop") text = "banked " + r.points;
    else if (r.outcome === "bust") text = '<span class="outcome bad">✗ bust</span>';
    else if (r.outcome === "tally_up") text = '<span class="outcome warn">★★★ Tally Up!</span>';
    else if (r.outcome === "scored") text = "+" + r.points + (r.circled ? " ◯ Up Die" : "");
    else if (r.kind === "reveal") text = r.out.length ? "banked " + r.banked : "";
    else if (r.kind === "up") text = "total " + row.running_total;
    else text = "";
    if (row.edited) text += ' <span class="edited">corrected</span>';
    return text;
  }

  function renderRows(d) {
    var host = DT.isHost();
    document.getElementById("edithint").classList.toggle("hidden", !host);
    if (!d.events.length) {
      document.getElementById("rows").innerHTML = '<tr><td colspan="6" class="muted">No moves yet.</td></tr>';
      return;
    }
    var lastTurn = null;
    document.getElementById("rows").innerHTML = d.events.map(function (row) {
      var start = row.turn !== lastTurn;
      lastTurn = row.turn;
      var scores = Object.keys(row.scores).map(function (n) { return esc(n) + " " + row.scores[n]; }).join(" · ");
      return '<tr class="' + (start ? "turnstart" : "") + '" data-index="' + row.index + '"><td class="num c-n">' + (row.index + 1) +
        '</td><td class="num c-turn">' + (start ? row.turn : "") + '</td><td class="c-player">' + (start ? "<b>" + esc(row.actor) + "</b>" : esc(row.actor)) +
        '</td><td class="c-action">' + action(row, host && (row.event.type === "roll" || row.event.type === "up")) + '</td><td class="c-result">' + result(row) +
        '</td><td class="hide-narrow muted c-scores">' + scores + "</td></tr>";
    }).join("");
  }

  function verdictClass(v) {
    return { "looks fair": "fair", "looks unfair": "unfair", "suspicious": "sus" }[v] || "few";
  }

  function verdictIcon(v) {
    return { "looks fair": "✓", "looks unfair": "✗", "suspicious": "⚠" }[v] || "…";
  }

  function renderStats(stats) {
    document.getElementById("stats").innerHTML = stats.dice.map(function (die) {
      var scale = 0;
      die.faces.forEach(function (f) { scale = Math.max(scale, f.probability, die.rolls ? f.observed / die.rolls : 0); });
      scale = scale * 1.1 || 1;
      var name = die.die === "tossup" ? "Toss Up dice (all ten)" : die.die === "up" ? "Up Die" : die.die + " die";
      return '<div class="card" style="background:var(--card2)" data-die="' + esc(die.die) + '"><div class="row spread"><h3 style="margin:0">' +
        esc(name) + " · " + die.rolls + (die.rolls === 1 ? " roll" : " rolls") + "</h3>" + '<span class="verdict ' + verdictClass(die.verdict) + '">' +
        verdictIcon(die.verdict) + " " + esc(die.verdict) + "</span></div>" +
        '<p class="muted" style="font-size:.8em">' + esc(die.summary) + '</p><div class="chart">' +
        die.faces.map(function (f) {
          var obs = die.rolls ? f.observed / die.rolls : 0;
          return DT.dieTile(die.die, f.face, "", "small") + '<div class="bar" role="img" aria-label="' + esc(DT.faceName(f.face)) +
            ": " + f.observed + " observed, " + f.expected.toFixed(1) + ' expected"><div class="obs" style="width:' + (obs / scale * 100).toFixed(1) +
            '%"></div><div class="exp" style="left:' + (f.probability / scale * 100).toFixed(1) + '%"></div></div>' +
            '<span class="num">' + f.observed + ' <span class="muted">/ ' + f.expected.toFixed(1) + "</span></span>";
        }).join("") + "</div></div>";
    }).join("") + (stats.replayed_left_out ? '<p class="muted small" id="replayednote">' + stats.replayed_left_out +
      (stats.replayed_left_out === 1 ? " roll" : " rolls") + " replayed by the demo camera left out: the same clips " +
      "again and again say nothing about these dice.</p>" : "");
  }

  document.getElementById("rows").addEventListener("click", function (event) {
    var el = event.target.closest("[data-fix]");
    if (!el || !data || !DT.isHost()) return;
    var parts = el.getAttribute("data-fix").split(":");
    var index = +parts[0], position = +parts[1];
    var row = data.events[index];
    var e = JSON.parse(JSON.stringify(row.event));
    var die, current;
    if (e.type === "up") { die = "up"; current = e.face; }
    else if (typeof e.dice[position] === "string") { die = "tossup"; current = e.dice[position]; }
    else { die = e.dice[position].die; current = e.dice[position].face; }
    DT.pickFace(die, current, "Correct move #" + (index + 1)).then(function (face) {
      if (!face || face === current) return;
      if (e.type === "up") e.face = face;
      else if (die === "tossup") e.dice[position] = face;
      else e.dice[position].face = face;
      DT.hostApi("PUT", base + "/events/" + index, { event: e, version: data.version }).then(function () {
        DT.toast("Corrected ✎");
        load();
      }).catch(function (err) { DT.toast(DT.explain(err), "error"); load(); });
    });
  });
})();
