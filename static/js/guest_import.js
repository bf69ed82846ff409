// The import page's progress bar: polls the job's status (JSON) and reloads the page when the job
// is done. Without JavaScript the page refreshes itself (<noscript> meta refresh).
(function () {
  "use strict";

  var box = document.querySelector("[data-import-status-url]");
  if (!box) return;
  var bar = box.querySelector("progress");
  var status = box.querySelector("[data-import-status]");
  var count = box.querySelector("[data-import-count]");

  function poll() {
    fetch(box.dataset.importStatusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (job) {
        if (!job.in_progress) {
          window.location.reload();
          return;
        }
        bar.max = job.total;
        bar.value = job.processed;
        status.textContent = job.status_label;
        count.textContent = job.processed + " / " + job.total;
        window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }

  window.setTimeout(poll, 500);
})();
