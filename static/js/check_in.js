// Check-in: where the browser has a BarcodeDetector, read QR codes with the camera, put the code
// into the field and submit. The form works the same without it. Texts come from data-* attributes
// of #camera (translated by the page).
(function () {
  "use strict";
  if (!("BarcodeDetector" in window) || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) return;
  var box = document.getElementById("camera"), toggle = document.getElementById("camera-toggle");
  var video = document.getElementById("camera-video"), status = document.getElementById("camera-status");
  var form = document.getElementById("check-in-form"), input = form.querySelector("input[name=code]");
  var STORAGE_KEY = "eventsaas-check-in-camera", stream = null, detector = null;
  box.hidden = false;

  function stop() {
    if (stream) stream.getTracks().forEach(function (track) { track.stop(); });
    stream = null; video.hidden = true; toggle.setAttribute("aria-pressed", "false");
    toggle.textContent = box.dataset.startLabel;
  }

  function scan() {
    if (!stream) return;
    detector.detect(video).then(function (codes) {
      if (codes.length && codes[0].rawValue) {
        input.value = codes[0].rawValue;
        stop();
        form.submit();
      } else {
        setTimeout(scan, 200);
      }
    }).catch(function () { setTimeout(scan, 500); });
  }

  function start() {
    BarcodeDetector.getSupportedFormats().then(function (formats) {
      if (formats.indexOf("qr_code") === -1) throw new Error("no qr_code");
      detector = new BarcodeDetector({formats: ["qr_code"]});
      return navigator.mediaDevices.getUserMedia({video: {facingMode: "environment"}, audio: false});
    }).then(function (media) {
      stream = media; video.srcObject = media; video.hidden = false;
      toggle.setAttribute("aria-pressed", "true");
      toggle.textContent = box.dataset.stopLabel;
      status.textContent = "";
      sessionStorage.setItem(STORAGE_KEY, "1");
      return video.play();
    }).then(scan).catch(function () {
      stop();
      sessionStorage.removeItem(STORAGE_KEY);
      status.textContent = box.dataset.unavailable;
    });
  }

  toggle.addEventListener("click", function () {
    if (stream) { stop(); sessionStorage.removeItem(STORAGE_KEY); } else { start(); }
  });
  // Keep scanning across submissions: the camera was on before this page loaded.
  if (sessionStorage.getItem(STORAGE_KEY) === "1") start();
})();
