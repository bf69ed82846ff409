// Small progressive enhancements shared by every page. Pages work without them.
// Loaded from a file, never inline: the Content-Security-Policy allows scripts from this site only.
(function () {
  "use strict";

  // <select data-autosubmit>: changing it submits its form (the language switcher).
  document.querySelectorAll("[data-autosubmit]").forEach(function (field) {
    field.addEventListener("change", function () { field.form.submit(); });
  });

  // <button data-confirm="Question?">: asks before submitting.
  document.querySelectorAll("[data-confirm]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.dataset.confirm)) event.preventDefault();
    });
  });

  // <a data-back href="/">: back to the previous page when there is one (the link works without it).
  document.querySelectorAll("[data-back]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      if (window.history.length > 1) {
        event.preventDefault();
        window.history.back();
      }
    });
  });

  // <button data-print hidden>: printing needs JavaScript, so the button shows only where it works.
  document.querySelectorAll("[data-print]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { window.print(); });
  });
})();
