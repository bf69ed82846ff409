// The household form's total: the sum of the rows of members who are coming, kept up to date as the
// answers change, and a member's number hidden while they are "not coming". Without JavaScript the
// server shows the total after sending; nothing depends on this file.
(function () {
  function setUp(rows) {
    var form = rows.closest("form");
    var output = form && form.querySelector("[data-total]");
    function update() {
      var total = 0;
      rows.querySelectorAll("[data-member]").forEach(function (row) {
        var coming = row.querySelector('input[type="radio"][value="yes"]');
        var count = row.querySelector('input[type="number"]');
        var isComing = Boolean(coming && coming.checked);
        if (isComing && count) {
          total += Math.max(parseInt(count.value, 10) || 0, 0);
        }
        var box = row.querySelector(".member-count");
        if (box) {
          box.hidden = !isComing;
        }
      });
      if (output) {
        output.value = String(total);
        output.textContent = String(total);
      }
    }
    rows.addEventListener("input", update);
    rows.addEventListener("change", update);
    update();
  }
  document.querySelectorAll("[data-household-rows]").forEach(setUp);
})();
