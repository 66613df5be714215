// mailroom console: the little the pages need beyond HTML. No inline
// scripts anywhere (the CSP forbids them); behaviour hangs on data-*
// attributes.
(function () {
  "use strict";
  // Forms with data-confirm ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  }, true);
  // Buttons with data-copy copy the text of the element with that id.
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-copy]");
    if (!b) return;
    var el = document.getElementById(b.getAttribute("data-copy"));
    if (el && navigator.clipboard) {
      navigator.clipboard.writeText(el.textContent.trim()).then(function () { b.textContent = "Copied"; });
    }
  });
})();
