/* Home: start a game with every option. */
"use strict";
(function () {
  var LIMITS = { tossup: [2, 6], tallyup: [2, 10] };
  var form = document.getElementById("newgame");
  var list = document.getElementById("players");
  var names = ["", ""];

  function kind() { return form.querySelector("input[name=game]:checked").value; }

  function render() {
    var limit = LIMITS[kind()];
    list.innerHTML = names.map(function (name, i) {
      return '<div class="row"><input type="text" maxlength="24" aria-label="Player ' + (i + 1) + '" placeholder="Player ' +
        (i + 1) + '" data-i="' + i + '" value="' + DT.esc(name) + '">' +
        '<button type="button" class="ghost" aria-label="Remove player ' + (i + 1) + '" data-remove="' + i + '"' +
        (names.length <= limit[0] ? " disabled" : "") + ">✕</button></div>";
    }).join("");
    document.getElementById("addplayer").disabled = names.length >= limit[1];
    document.getElementById("playercount").textContent = "(" + names.length + " of " + limit[0] + "–" + limit[1] + ")";
    Array.prototype.forEach.call(document.querySelectorAll(".for-tossup"), function (el) { el.classList.toggle("hidden", kind() !== "tossup"); });
    Array.prototype.forEach.call(document.querySelectorAll(".for-tallyup"), function (el) { el.classList.toggle("hidden", kind() !== "tallyup"); });
    Array.prototype.forEach.call(form.querySelectorAll(".gamechoice label"), function (el) {
      el.classList.toggle("sel", el.querySelector("input").checked);
    });
  }

  list.addEventListener("input", function (event) {
    var i = event.target.getAttribute("data-i");
    if (i !== null) names[+i] = event.target.value;
  });
  list.addEventListener("click", function (event) {
    var i = event.target.getAttribute("data-remove");
    if (i !== null) { names.splice(+i, 1); render(); }
  });
  document.getElementById("addplayer").addEventListener("click", function () {
    names.push(""); render();
    var inputs = list.querySelectorAll("input"); inputs[inputs.length - 1].focus();
  });
  Array.prototype.forEach.call(form.querySelectorAll("input[name=game]"), function (radio) {
    radio.addEventListener("change", function () {
      var limit = LIMITS[kind()];
      while (names.length > limit[1]) names.pop();
      render();
    });
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var error = document.getElementById("formerror");
    error.textContent = "";
    var players = names.map(function (n) { return n.trim(); });
    players = players.map(function (n, i) { return n || "Player " + (i + 1); });
    var game = kind();
    var options = {};
    if (game === "tossup") {
      options.target = parseInt(document.getElementById("tossup-target").value, 10);
    } else {
      options.target = parseInt(document.getElementById("tallyup-target").value, 10);
      options.one_turn_each = document.getElementById("one-turn-each").checked;
      options.high_stakes = document.getElementById("high-stakes").checked;
    }
    var button = document.getElementById("start");
    button.disabled = true;
    DT.hostApi("POST", "/api/games", { game: game, players: players, options: options })
      .then(function (created) { window.location.href = "/games/" + encodeURIComponent(created.id); })
      .catch(function (e) { error.textContent = "⚠ " + DT.explain(e); button.disabled = false; });
  });

  render();
})();
