/* Join: a code from the table (typed or from the QR link), then a player name. */
"use strict";
(function () {
  var form = document.getElementById("codeform");
  var input = document.getElementById("code");
  var error = document.getElementById("codeerror");
  var code = "";

  function lookup() {
    code = input.value.replace(/\s+/g, "").toUpperCase();
    error.textContent = "";
    if (!code) return;
    DT.api("GET", "/api/join/" + encodeURIComponent(code)).then(function (info) {
      document.getElementById("who").classList.remove("hidden");
      document.getElementById("names").innerHTML = "<p class=\"muted\">" + DT.esc(DT.gameName(info.game)) + "</p>" +
        info.players.map(function (name) {
          return '<button type="button" class="huge wide" data-name="' + DT.esc(name) + '">' + DT.esc(name) + "</button>";
        }).join("");
    }).catch(function (e) {
      document.getElementById("who").classList.add("hidden");
      error.textContent = "⚠ " + (e.status === 404 ? "No game in progress has that code." : DT.explain(e));
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); lookup(); });
  document.getElementById("names").addEventListener("click", function (event) {
    var button = event.target.closest("[data-name]");
    if (!button) return;
    DT.api("POST", "/api/join/" + encodeURIComponent(code), { player: button.getAttribute("data-name") }).then(function (joined) {
      DT.savePlayer(joined.id, { player: joined.player, token: joined.token, code: code });
      window.location.href = "/games/" + encodeURIComponent(joined.id) + "/player";
    }).catch(function (e) { error.textContent = "⚠ " + DT.explain(e); });
  });
  if (input.value) lookup();
})();
