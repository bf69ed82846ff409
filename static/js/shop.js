// Ticket shop: the total and one name field per ticket follow the quantities as they change.
// Progressive enhancement: without it, the page's "Update" button asks the server for both.
(function () {
  "use strict";
  var form = document.querySelector("[data-shop-form]");
  if (!form) return;
  var quantities = Array.prototype.slice.call(form.querySelectorAll("[data-quantity]"));
  var total = form.querySelector("[data-shop-total]");
  var names = form.querySelector("[data-attendee-names]");
  var update = form.querySelector("[data-shop-update]");
  // Removed rather than hidden: pressing Enter must not pick it as the form's default button.
  if (update) update.remove();
  var language = document.documentElement.lang || "en";
  var typed = [];  // names typed so far, kept when a quantity goes down and up again

  function seats() {
    var list = [];
    quantities.forEach(function (input) {
      var wanted = Math.max(0, Math.min(parseInt(input.value, 10) || 0, parseInt(input.max, 10) || 0));
      for (var i = 0; i < wanted; i++) list.push({ name: input.dataset.name, price: parseInt(input.dataset.price, 10) || 0, currency: input.dataset.currency });
    });
    return list;
  }

  function money(minor, currency) {
    var format = new Intl.NumberFormat(language, { style: "currency", currency: currency.toUpperCase() });
    var digits = format.resolvedOptions().maximumFractionDigits;
    return format.format(minor / Math.pow(10, digits));
  }

  function showTotal(list) {
    if (!total) return;
    var currencies = list.map(function (seat) { return seat.currency; }).filter(function (c, i, all) { return all.indexOf(c) === i; });
    if (currencies.length !== 1) { total.textContent = "—"; return; }
    total.textContent = money(list.reduce(function (sum, seat) { return sum + seat.price; }, 0), currencies[0]);
  }

  function nameRow(number, seat) {
    var row = document.createElement("div");
    row.setAttribute("data-attendee-row", "");
    var label = document.createElement("label");
    var input = document.createElement("input");
    input.type = "text";
    input.name = "attendee_" + number;
    input.id = "id_attendee_" + number;
    input.maxLength = 200;
    input.required = true;
    input.autocomplete = "off";
    input.setAttribute("data-attendee", "");
    input.value = typed[number - 1] || "";
    label.htmlFor = input.id;
    label.textContent = names.dataset.labelTemplate.replace("%(number)s", number).replace("%(type)s", seat.name) + ":";
    row.appendChild(label);
    row.appendChild(input);
    return row;
  }

  function showNames(list) {
    if (!names) return;
    var rows = names.querySelectorAll("[data-attendee-row]");
    rows.forEach(function (row, index) {
      var input = row.querySelector("input");
      if (input) typed[index] = input.value;
    });
    // Rows the server rendered keep their errors; only the ones past the new count go, and new ones are added.
    rows.forEach(function (row, index) { if (index >= list.length) row.remove(); });
    var none = names.querySelector("[data-attendee-none]");
    for (var number = rows.length + 1; number <= list.length; number++) {
      names.insertBefore(nameRow(number, list[number - 1]), none);
    }
    // A row kept from the server may now stand for another ticket type: its label follows.
    names.querySelectorAll("[data-attendee-row]").forEach(function (row, index) {
      var label = row.querySelector("label");
      if (label) label.textContent = names.dataset.labelTemplate.replace("%(number)s", index + 1).replace("%(type)s", list[index].name) + ":";
    });
    if (none) none.hidden = list.length > 0;
  }

  function refresh() {
    var list = seats();
    showTotal(list);
    showNames(list);
  }
  quantities.forEach(function (input) { input.addEventListener("input", refresh); });
  refresh();
})();
