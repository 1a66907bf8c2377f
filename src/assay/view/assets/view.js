// assay view: keyboard navigation. "/" focuses the search box; j / k move through a list's links;
// [ and ] go to the previous / next trace. No network, no dependencies.
(function () {
  "use strict";
  function typing(e) {
    var t = e.target;
    return t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable);
  }
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || typing(e)) return;
    var links = Array.prototype.slice.call(document.querySelectorAll("a[data-nav]"));
    var at = links.indexOf(document.activeElement);
    if (e.key === "/") {
      var s = document.querySelector("input[data-search]");
      if (s) { e.preventDefault(); s.focus(); s.select(); }
    } else if ((e.key === "j" || e.key === "k") && links.length) {
      e.preventDefault();
      var next = e.key === "j" ? Math.min(at + 1, links.length - 1) : Math.max(at - 1, 0);
      if (at === -1) next = 0;
      links[next].focus();
    } else if (e.key === "[" || e.key === "]") {
      var step = document.querySelector("a[data-key='" + e.key + "']");
      if (step) step.click();
    }
  });
})();
