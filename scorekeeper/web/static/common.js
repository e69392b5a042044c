/* dicetray pages: shared helpers (no build step, no libraries). */
"use strict";

var DT = (function () {
  var HOST_KEY = "dicetray.host";

  // A host link (?host=TOKEN) makes this browser the table: keep the token, hide it from the address bar.
  (function adoptHostToken() {
    var params = new URLSearchParams(window.location.search);
    var token = params.get("host");
    if (token) {
      localStorage.setItem(HOST_KEY, token);
      params.delete("host");
      var rest = params.toString();
      history.replaceState(null, "", window.location.pathname + (rest ? "?" + rest : "") + window.location.hash);
    }
  })();

  function hostToken() { return localStorage.getItem(HOST_KEY); }
  function isHost() { return !!hostToken(); }
  function forgetHost() { localStorage.removeItem(HOST_KEY); }

  function playerKey(gameId) { return "dicetray.player." + gameId; }
  function playerSeat(gameId) {
    try { return JSON.parse(localStorage.getItem(playerKey(gameId)) || "null"); } catch (e) { return null; }
  }
  function savePlayer(gameId, seat) { localStorage.setItem(playerKey(gameId), JSON.stringify(seat)); }
  function forgetPlayer(gameId) { localStorage.removeItem(playerKey(gameId)); }

  function esc(value) {
    return String(value).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function ApiError(status, message, body) {
    this.status = status; this.message = message; this.body = body || {};
  }

  // fetch JSON; `token` "host" uses the host token, any other string is sent as is.
  function api(method, url, body, token) {
    var headers = { "Accept": "application/json" };
    var bearer = token === "host" ? hostToken() : token;
    if (bearer) headers["Authorization"] = "Bearer " + bearer;
    var init = { method: method, headers: headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (response) {
      return response.text().then(function (text) {
        var data = {};
        try { data = text ? JSON.parse(text) : {}; } catch (e) { data = { error: text }; }
        if (!response.ok) throw new ApiError(response.status, data.error || response.statusText, data);
        return data;
      });
    });
  }

  // A host action: asks for the host token once when this browser does not have it yet.
  function hostApi(method, url, body) {
    function attempt() { return api(method, url, body, "host"); }
    if (!hostToken()) askHostToken();
    return attempt().catch(function (error) {
      if (error.status === 401 && askHostToken()) return attempt();
      throw error;
    });
  }

  function askHostToken() {
    var token = window.prompt("This needs the host token (printed by `dicetray serve`):", "");
    if (token) { localStorage.setItem(HOST_KEY, token.trim()); return true; }
    return false;
  }

  var toastTimer = null;
  function toast(message, kind) {
    var box = document.getElementById("toast");
    if (!box) {
      box = document.createElement("div");
      box.id = "toast";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      document.body.appendChild(box);
    }
    box.className = "toast show " + (kind || "info");
    box.innerHTML = (kind === "error" ? "<b>⚠</b> " : "") + esc(message);
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { box.className = "toast"; }, kind === "error" ? 6000 : 3000);
  }

  function explain(error) {
    // A stale game version (the body names the current one); other 409s say what is missing.
    if (error && error.status === 409 && error.body && error.body.version !== undefined) {
      return "Someone else got there first — the board is updated.";
    }
    if (error && error.message) return error.message;
    return "Could not reach the scoreboard. Is the server running?";
  }

  // Follow a game's live stream. handlers: onView(view), onChoices(progress), onLive(camera state).
  function live(gameId, handlers) {
    var source = null;
    var url = "/api/games/" + encodeURIComponent(gameId) + "/stream";
    function status(ok) {
      var el = document.getElementById("live");
      if (el) {
        el.className = "live " + (ok ? "on" : "off");
        el.textContent = ok ? "● live" : "○ reconnecting…";
      }
    }
    function parse(event) { try { return JSON.parse(event.data); } catch (e) { return null; } }
    function connect() {
      source = new EventSource(url);
      source.onopen = function () { status(true); };
      source.onerror = function () {
        status(false);
        // The browser retries by itself unless the stream is closed for good (e.g. a 404).
        if (source.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
      };
      function onView(event) { var v = parse(event); if (v) { status(true); handlers.onView(v); } }
      source.addEventListener("snapshot", onView);
      source.addEventListener("change", onView);
      source.addEventListener("choices", function (event) {
        var p = parse(event);
        if (handlers.onChoices) handlers.onChoices(p);
      });
      // The camera's state and any reading waiting for the host (only when a camera is configured).
      source.addEventListener("live", function (event) {
        var l = parse(event);
        if (l && handlers.onLive) handlers.onLive(l);
      });
    }
    connect();
    return {
      refresh: function () {
        return api("GET", "/api/games/" + encodeURIComponent(gameId) + "/view").then(handlers.onView);
      },
    };
  }

  // ---- dice ---------------------------------------------------------------------------------

  var TOSSUP = {
    green: { letter: "G", shape: '<circle cx="20" cy="20" r="15"/>' },
    yellow: { letter: "Y", shape: '<polygon points="20,4 37,35 3,35"/>' },
    red: { letter: "R", shape: '<polygon points="13,3 27,3 37,13 37,27 27,37 13,37 3,27 3,13"/>' },
  };
  var TALLY_LETTER = { red: "R", orange: "O", yellow: "Y", green: "G", blue: "B", purple: "P", up: "UP" };
  var TALLY_FACES = {
    red: ["star", "50", "(50)", "100"],
    orange: ["star", "60", "(70)", "70"],
    yellow: ["star", "20", "(40)", "70"],
    green: ["star", "30", "(40)", "40"],
    blue: ["star", "(10)", "10", "20", "50"],
    purple: ["star", "(20)", "20"],
    up: ["+1", "+2", "+3", "-100", "+100", "x2"],
    tossup: ["green", "yellow", "red"],
  };
  var TALLY_DICE = ["red", "orange", "yellow", "green", "blue", "purple"];

  function faceText(face) {
    if (face === "star") return '<span class="star" aria-hidden="true">★</span>';
    if (face.charAt(0) === "(") return '<span class="circled">' + esc(face.slice(1, -1)) + "</span>";
    if (face === "x2") return "×2";
    if (face === "-100") return "−100";
    return esc(face);
  }

  function faceName(face) {
    if (face === "star") return "star";
    if (face.charAt(0) === "(") return "circled " + face.slice(1, -1);
    return face;
  }

  // One die as a tile. `attrs` adds HTML attributes (e.g. data-index for a tap).
  function dieTile(die, face, attrs, size) {
    var extra = attrs || "";
    var cls = "die " + (size || "");
    if (die === "tossup") {
      var t = TOSSUP[face] || { letter: "?", shape: "" };
      return '<span class="' + cls + ' tossup f-' + esc(face) + '" role="img" aria-label="' + esc(face) + '" ' + extra + ">" +
        '<svg viewBox="0 0 40 40" aria-hidden="true">' + t.shape + "</svg><b>" + t.letter + "</b></span>";
    }
    return '<span class="' + cls + " tally d-" + esc(die) + '" role="img" aria-label="' + esc(die) + " die: " +
      esc(faceName(face)) + '" ' + extra + '><i class="tag">' + esc(TALLY_LETTER[die] || die) + "</i>" +
      '<b class="face">' + faceText(face) + "</b></span>";
  }

  function blankDie(die, attrs) {
    return '<span class="die blank ' + (die === "tossup" ? "tossup" : "tally d-" + esc(die)) + '" ' + (attrs || "") +
      '><i class="tag">' + esc(TALLY_LETTER[die] || "") + "</i><b class=\"face\">?</b></span>";
  }

  // Ask which face a die shows; resolves with the face, or null when cancelled.
  function pickFace(die, current, title) {
    return new Promise(function (resolve) {
      var faces = TALLY_FACES[die];
      var overlay = document.createElement("div");
      overlay.className = "modal";
      overlay.setAttribute("role", "dialog");
      overlay.setAttribute("aria-modal", "true");
      overlay.innerHTML = '<div class="sheet"><h2>' + esc(title || "Which face?") + '</h2><div class="pick">' +
        faces.map(function (f) {
          return '<button type="button" class="pickface' + (f === current ? " current" : "") + '" data-face="' +
            esc(f) + '">' + dieTile(die, f, "", "big") + "<span>" + esc(faceName(f)) + "</span></button>";
        }).join("") + '</div><button type="button" class="button ghost cancel">Cancel</button></div>';
      function done(value) { document.body.removeChild(overlay); resolve(value); }
      overlay.addEventListener("click", function (event) {
        var button = event.target.closest("[data-face]");
        if (button) return done(button.getAttribute("data-face"));
        if (event.target === overlay || event.target.closest(".cancel")) done(null);
      });
      document.body.appendChild(overlay);
    });
  }

  function gameName(kind) { return kind === "tossup" ? "Toss Up!" : "Tally Up!"; }

  return {
    api: api, hostApi: hostApi, hostToken: hostToken, isHost: isHost, forgetHost: forgetHost,
    playerSeat: playerSeat, savePlayer: savePlayer, forgetPlayer: forgetPlayer,
    esc: esc, toast: toast, explain: explain, live: live,
    dieTile: dieTile, blankDie: blankDie, pickFace: pickFace, faceName: faceName, faceText: faceText,
    TALLY_FACES: TALLY_FACES, TALLY_DICE: TALLY_DICE, gameName: gameName,
  };
})();
