/* Player page (phone): the scoreboard, the secret IN/OUT choice and the Tally Up! shout. */
"use strict";
(function () {
  var root = document.getElementById("app");
  var gameId = root.getAttribute("data-game");
  var base = "/api/games/" + encodeURIComponent(gameId);
  var esc = DT.esc;
  var seat = DT.playerSeat(gameId);
  var view = null, secret = null, mine = null, mineVersion = -1, busy = false;

  function me() { return seat ? seat.player : null; }

  function playerApi(method, url, body) {
    return DT.api(method, url, body, seat && seat.token).catch(function (error) {
      // A restarted server no longer knows this phone's token: join again with the same code.
      if (error.status === 401 && seat && seat.code) {
        return DT.api("POST", "/api/join/" + encodeURIComponent(seat.code), { player: seat.player }).then(function (joined) {
          seat.token = joined.token;
          DT.savePlayer(gameId, seat);
          return DT.api(method, url, body, seat.token);
        });
      }
      throw error;
    });
  }

  var live = DT.live(gameId, {
    onView: function (v) {
      if (view && v.version < view.version) return;
      if (v.rematch) return followRematch(v.rematch);
      view = v; secret = v.secret;
      if (mineVersion !== v.version) { mine = null; }
      render();
    },
    onChoices: function (p) { if (view && p && p.version === view.version) { secret = p; render(); } },
  });

  // The finished game's rematch: this phone keeps its player's seat there, no joining again.
  var following = false;
  function followRematch(id) {
    if (following) return;
    following = true;
    if (!seat) { window.location.href = "/games/" + encodeURIComponent(id) + "/player"; return; }
    playerApi("POST", base + "/rematch/seat").then(function (joined) {
      DT.savePlayer(joined.id, { player: joined.player, token: joined.token, code: joined.code });
      window.location.href = "/games/" + encodeURIComponent(joined.id) + "/player";
    }).catch(function (error) { following = false; DT.toast(DT.explain(error), "error"); });
  }

  if (seat) {
    document.getElementById("me").textContent = "· you are " + seat.player;
    playerApi("GET", base + "/choices").then(function (c) {
      if (c.mine) { mine = c.mine; mineVersion = c.version; render(); }
    }).catch(function () { /* shown when the player acts */ });
  } else {
    document.getElementById("whois").innerHTML = "You are watching. To play from this phone, join with the code on the table.";
  }

  function render() {
    if (!view) return;
    var s = view.state;
    document.body.setAttribute("data-version", String(view.version));
    var name = me();
    document.getElementById("scores").innerHTML = s.players.map(function (p) {
      var active = !s.over && p.name === s.active;
      var badges = "";
      if (p.name === name) badges += '<span class="badge you">you</span>';
      if (s.game === "tallyup" && !s.over) {
        badges += s["in"].indexOf(p.name) >= 0 ? '<span class="badge in">IN</span>' : '<span class="badge out">OUT</span>';
      }
      return '<li class="' + (active ? "active" : "") + (s.over && s.winners.indexOf(p.name) >= 0 ? " winner" : "") + '">' +
        '<span class="turnmark">' + (active ? "▶" : "") + '</span><span class="pl"><span class="name">' + esc(p.name) +
        '</span><span class="badges">' + badges + '</span></span><span class="score">' + p.score + "</span></li>";
    }).join("");
    document.getElementById("status").innerHTML = statusText(s);
    document.getElementById("decision").innerHTML = decision(s, name);
  }

  function statusText(s) {
    if (s.over) return "Game over.";
    if (s.game === "tossup") {
      return "<b>" + esc(s.active) + "</b>’s turn · <b>" + s.turn_points + "</b> turn points · " + s.dice_in_hand + " dice in hand" +
        (s.last && s.last.outcome === "red_light" ? '<br><span class="outcome bad">✗ Red light for ' + esc(s.last.player) + "!</span>" : "");
    }
    var text = "Round " + s.round + " · <b>" + esc(s.active) + "</b> rolls<br>Running total <b class=\"bignum\" style=\"font-size:1.6em\">" +
      s.running_total + "</b>";
    if (s.last && s.last.outcome === "bust") text += '<br><span class="outcome bad">✗ Bust! The round is over.</span>';
    return text;
  }

  function decision(s, name) {
    if (s.over) {
      return '<div class="banner" id="winner">★ ' + esc(s.winners.join(" & ")) + (s.winners.length > 1 ? " share the win!" : " wins!") + "</div>";
    }
    if (!name || s.game !== "tallyup") return "";
    if (s.phase === "tally_up") {
      return '<button type="button" class="primary huge wide shout" id="shout" style="min-height:160px;font-size:2.4em">TALLY UP!</button>';
    }
    var shouted = s.last && s.last.kind === "tally_up" ?
      '<p class="banner">' + (s.last.player === name ? "You shouted first! +200" : esc(s.last.player) + " shouted first.") + "</p>" : "";
    if (s["in"].indexOf(name) < 0) return shouted + '<div class="card"><p class="big">You are <b>OUT</b> this round.</p></div>';
    if (s.phase !== "reveal") {
      return shouted + '<div class="card"><p class="big">You are <b>IN</b>. ' +
        (s.phase === "choose" ? esc(s.active) + " chooses three dice." : "Watch the next roll!") + "</p></div>";
    }
    var waiting = secret ? secret.waiting.filter(function (n) { return n !== name; }) : [];
    return '<div class="card"><p class="prompt">Stay IN or go OUT? <span class="muted">(secret)</span></p>' +
      '<p>Going OUT now banks <b>' + s.running_total + "</b>.</p>" +
      '<div class="decide"><button type="button" class="good' + (mine === "in" ? " mine" : "") + '" data-choice="in" aria-pressed="' + (mine === "in") + '">IN ✓<small>keep playing</small></button>' +
      '<button type="button" class="bad' + (mine === "out" ? " mine" : "") + '" data-choice="out" aria-pressed="' + (mine === "out") + '">OUT ✗<small>bank ' + s.running_total + "</small></button></div>" +
      (mine ? '<p id="mychoice">Your secret choice: <b>' + mine.toUpperCase() + "</b>. You can still change it." +
        (waiting.length ? " Waiting for " + esc(waiting.join(", ")) + "." : "") + "</p>" : "") + "</div>";
  }

  document.getElementById("decision").addEventListener("click", function (event) {
    if (!view || busy) return;
    var choice = event.target.closest("[data-choice]");
    if (choice) {
      busy = true;
      var value = choice.getAttribute("data-choice");
      playerApi("POST", base + "/choices", { choice: value, version: view.version }).then(function (r) {
        if (r.revealed) { DT.toast("Everyone has chosen: revealed!"); }
        else { mine = value; mineVersion = r.version; secret = r.secret; render(); }
      }).catch(function (e) { DT.toast(DT.explain(e), "error"); live.refresh(); })
        .then(function () { busy = false; });
      return;
    }
    if (event.target.closest("#shout")) {
      busy = true;
      playerApi("POST", base + "/events", { event: { type: "tally_up", player: me() }, version: view.version }).then(function () {
        DT.toast("You were first! +200");
      }).catch(function (e) {
        DT.toast(e.status === 409 || e.status === 422 ? "Too late: someone shouted first." : DT.explain(e), "error");
        live.refresh();
      }).then(function () { busy = false; });
    }
  });
})();
