// mailroom console, single sends: local times, the compose form's
// schedule in the browser's time zone (stored in UTC), and the statistics
// chart. No inline scripts (the CSP forbids them): everything hangs on
// data-* attributes, and runs again on content htmx swaps in.
(function () {
  "use strict";
  var zone = (Intl.DateTimeFormat().resolvedOptions().timeZone) || "local time";

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // localValue is a Date as a datetime-local value in the browser's zone.
  function localValue(d) {
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
  }

  // <time data-local datetime="…Z"> shows the time in the browser's zone.
  function localTimes(root) {
    root.querySelectorAll("time[data-local]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) return;
      t.textContent = d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) + " (" + zone + ")";
      t.title = d.toISOString().replace(".000", "").replace("T", " ").replace("Z", " UTC");
    });
  }

  // The schedule field: the server gives and takes UTC; the browser shows
  // and edits local time, and fills schedule_date and schedule_time (UTC)
  // before the form goes.
  function schedules(root) {
    root.querySelectorAll("input[data-utc]").forEach(function (input) {
      if (input.dataset.local) return;
      input.dataset.local = "1";
      var form = input.form;
      root.querySelectorAll("[data-tz]").forEach(function (el) { el.textContent = "your time zone: " + zone; });
      if (input.value) {
        var d = new Date(input.value + ":00Z");
        if (!isNaN(d)) input.value = localValue(d);
      }
      var note = form.querySelector("[data-utc-note]");
      function sync() {
        var date = form.querySelector("input[name=schedule_date]");
        var time = form.querySelector("input[name=schedule_time]");
        var d = input.value ? new Date(input.value) : null;
        if (!d || isNaN(d)) {
          date.value = time.value = "";
          if (note) note.textContent = "Stored in UTC.";
          return;
        }
        var iso = d.toISOString();
        date.value = iso.slice(0, 10);
        time.value = iso.slice(11, 19);
        if (note) note.textContent = "That is " + date.value + " " + time.value.slice(0, 5) + " UTC, as it is stored.";
        var later = form.querySelector("input[name=schedule_type][value='1']");
        if (later) later.checked = true;
      }
      input.addEventListener("input", sync);
      form.addEventListener("submit", sync, true);
      if (input.value) sync();
    });
  }

  // #timeline[data-series] is drawn with uPlot: delivered, opens, clicks
  // and bounces by hour.
  function charts(root) {
    var el = root.querySelector ? root.querySelector("#timeline[data-series]") : null;
    if (!el || el.dataset.drawn || typeof uPlot === "undefined") return;
    var s = JSON.parse(el.getAttribute("data-series"));
    var data = [s.hours, s.delivered, s.opens, s.clicks, s.bounces];
    function width() { return Math.max(280, el.clientWidth); }
    var opts = {
      width: width(), height: 280,
      series: [
        {},
        { label: "Delivered", stroke: "#0f766e", width: 2, points: { show: true, size: 8 } },
        { label: "Unique opens", stroke: "#2563eb", width: 2, points: { show: true, size: 8 } },
        { label: "Unique clicks", stroke: "#9333ea", width: 2, points: { show: true, size: 8 } },
        { label: "Bounces", stroke: "#b42318", width: 2, points: { show: true, size: 8 } }
      ],
      axes: [{}, { size: 60 }],
      legend: { live: false },
      // An hour's margin each side: a send of one hour is one point, which
      // uPlot would otherwise spread over years.
      scales: { x: { time: true, auto: false, range: [s.hours[0] - 3600, s.hours[s.hours.length - 1] + 3600] } }
    };
    var plot = new uPlot(opts, data, el);
    el.dataset.drawn = "true";
    window.addEventListener("resize", function () { plot.setSize({ width: width(), height: 280 }); });
  }

  function init(root) {
    localTimes(root);
    schedules(root);
    charts(root);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (e) { init(e.target.parentNode || document); });
})();
