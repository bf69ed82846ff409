// A new event's time zone defaults to the organizer's browser zone.
// <select data-browser-timezone="default">: picked only if it is one of the offered
// (canonical) zones and the form is fresh, so a value the organizer chose, or one sent
// back with errors, is never overwritten.
(function () {
  "use strict";
  var select = document.querySelector('select[data-browser-timezone="default"]');
  if (!select || select.form.dataset.bound === "true") return;
  var zone;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (error) {
    return;
  }
  if (!zone || select.value !== "UTC") return;
  var offered = Array.prototype.some.call(select.options, function (option) {
    return option.value === zone;
  });
  if (offered) select.value = zone;
})();
