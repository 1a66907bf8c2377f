// assay report: trace filter and trace view navigation. No network, no dependencies.
(function () {
  "use strict";
  var metric = document.getElementById("f-metric");
  var status = document.getElementById("f-status");
  var text = document.getElementById("f-text");
  var count = document.getElementById("f-count");
  var table = document.getElementById("trace-table");
  var rows = table ? Array.prototype.slice.call(table.tBodies[0].rows) : [];

  function cellFor(row, name) {
    for (var i = 0; i < row.cells.length; i++) {
      if (row.cells[i].getAttribute("data-m") === name) return row.cells[i];
    }
    return null;
  }

  function apply() {
    var m = metric ? metric.value : "", s = status ? status.value : "";
    var q = text ? text.value.trim().toLowerCase() : "";
    var shown = 0;
    rows.forEach(function (row) {
      var st = row.getAttribute("data-st");
      if (m) {
        var cell = cellFor(row, m);
        st = cell ? cell.getAttribute("data-st") : "absent";
      }
      var ok = (!m || st !== "absent") && (!s || st === s);
      if (ok && q) ok = (row.getAttribute("data-text") || "").indexOf(q) !== -1;
      row.hidden = !ok;
      if (ok) shown++;
    });
    if (count) count.textContent = shown + " of " + rows.length + " traces";
  }

  [metric, status].forEach(function (el) { if (el) el.addEventListener("change", apply); });
  if (text) text.addEventListener("input", apply);
  apply();

  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return;
    var el = document.getElementById(id);
    if (el && el.tagName === "DETAILS") { el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openHash);
  openHash();

  function setAll(open) {
    document.querySelectorAll("details.trace").forEach(function (d) { d.open = open; });
  }
  var ea = document.getElementById("expand-all"), ca = document.getElementById("collapse-all");
  if (ea) ea.addEventListener("click", function () { setAll(true); });
  if (ca) ca.addEventListener("click", function () { setAll(false); });
})();
