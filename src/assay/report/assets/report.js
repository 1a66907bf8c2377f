// assay report: trace table sorting and filtering (the filter also applies to the trace views),
// and trace view navigation. No network, no dependencies.
(function () {
  "use strict";
  var metric = document.getElementById("f-metric");
  var status = document.getElementById("f-status");
  var text = document.getElementById("f-text");
  var count = document.getElementById("f-count");
  var vcount = document.getElementById("v-count");
  var table = document.getElementById("trace-table");
  var body = table ? table.tBodies[0] : null;
  var rows = body ? Array.prototype.slice.call(body.rows) : [];
  var views = Array.prototype.slice.call(document.querySelectorAll("details.trace"));

  function cellFor(row, name) {
    for (var i = 0; i < row.cells.length; i++) {
      if (row.cells[i].getAttribute("data-m") === name) return row.cells[i];
    }
    return null;
  }

  function apply() {
    var m = metric ? metric.value : "", s = status ? status.value : "";
    var q = text ? text.value.trim().toLowerCase() : "";
    var shown = 0, visible = {};
    rows.forEach(function (row) {
      var st = row.getAttribute("data-st");
      if (m) {
        var cell = cellFor(row, m);
        st = cell ? cell.getAttribute("data-st") : "absent";
      }
      var ok = (!m || st !== "absent") && (!s || st === s);
      if (ok && q) ok = (row.getAttribute("data-text") || "").indexOf(q) !== -1;
      row.hidden = !ok;
      if (ok) { shown++; visible[row.getAttribute("data-view")] = true; }
    });
    if (count) count.textContent = shown + " of " + rows.length + " traces";
    var filtered = !!(m || s || q), nv = 0;
    views.forEach(function (d) {
      var ok = !filtered || visible[d.id] === true;
      d.hidden = !ok;
      if (ok) nv++;
    });
    if (vcount) vcount.textContent = filtered ? nv + " of " + views.length + " trace views match the filter" : "";
  }

  [metric, status].forEach(function (el) { if (el) el.addEventListener("change", apply); });
  if (text) text.addEventListener("input", apply);
  apply();

  // Sorting: numbers by data-v (rows without a value go last either way), text by content.
  var heads = table ? Array.prototype.slice.call(table.tHead.rows[0].cells) : [];
  heads.forEach(function (th, col) {
    var btn = th.querySelector("button.sort");
    if (!btn) return;
    btn.addEventListener("click", function () {
      var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
      heads.forEach(function (o) { if (o.hasAttribute("aria-sort")) o.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", dir);
      var numeric = th.getAttribute("data-sort") === "num", sign = dir === "ascending" ? 1 : -1;
      function key(row) {
        var c = row.cells[col], v = c.getAttribute("data-v");
        if (v === null) v = c.textContent.trim();
        if (numeric) { var x = parseFloat(v); return isNaN(x) ? null : x; }
        return v === "" ? null : v.toLowerCase();
      }
      var keyed = rows.map(function (r, i) { return [key(r), i, r]; });
      keyed.sort(function (a, b) {
        if (a[0] === null || b[0] === null) return (a[0] === null) - (b[0] === null) || a[1] - b[1];
        if (a[0] < b[0]) return -sign;
        if (a[0] > b[0]) return sign;
        return a[1] - b[1];
      });
      keyed.forEach(function (k) { body.appendChild(k[2]); });
    });
  });

  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return;
    var el = document.getElementById(id);
    if (el && el.tagName === "DETAILS") { el.hidden = false; el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openHash);
  openHash();

  function setAll(open) {
    views.forEach(function (d) { if (!d.hidden) d.open = open; });
  }
  var ea = document.getElementById("expand-all"), ca = document.getElementById("collapse-all");
  if (ea) ea.addEventListener("click", function () { setAll(true); });
  if (ca) ca.addEventListener("click", function () { setAll(false); });
})();
