// Ticket shop: sizes the attendee names box to the tickets chosen and counts the names given.
// Progressive enhancement: the textarea works without it.
(function () {
  "use strict";
  var form = document.querySelector("[data-shop-form]");
  var names = form && form.querySelector("textarea[name=attendees]");
  var hint = document.getElementById("attendee-hint");
  if (!names || !hint) return;
  function update() {
    var wanted = 0;
    form.querySelectorAll("[data-quantity]").forEach(function (input) { wanted += parseInt(input.value, 10) || 0; });
    var given = names.value.split("\n").filter(function (line) { return line.trim(); }).length;
    names.rows = Math.max(2, wanted);
    hint.textContent = hint.dataset.template.replace("%(given)s", given).replace("%(wanted)s", wanted);
    hint.hidden = wanted === 0;
  }
  form.addEventListener("input", update);
  update();
})();
