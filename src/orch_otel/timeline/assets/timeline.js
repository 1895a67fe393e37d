// orch-otel timeline: click (or Enter on) an event row for its details.
// Data come from the JSON blocks; they are written with textContent only.
(function () {
  "use strict";
  var data = {};
  document.querySelectorAll("script.orch-data").forEach(function (block) {
    data[block.dataset.pane] = JSON.parse(block.textContent);
  });
  var panel = document.getElementById("details");
  var body = document.getElementById("details-body");
  if (!panel || !body) { return; }
  var selected = null;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }

  function show(value) {
    if (value === null || value === undefined) { return ""; }
    return typeof value === "object" ? JSON.stringify(value) : String(value);
  }

  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }

  function linkTo(pane, id) {
    var a = el("a", id);
    a.href = "#" + pane + "-" + id;
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      var row = document.getElementById(pane + "-" + id);
      if (row) { row.scrollIntoView({block: "center"}); open(row); row.focus(); }
    });
    return a;
  }

  function open(row) {
    var pane = row.closest("[data-pane]").dataset.pane;
    var trace = data[pane];
    if (!trace) { return; }
    var event = trace.events[Number(row.dataset.row)];
    if (selected) { selected.classList.remove("selected"); }
    selected = row;
    row.classList.add("selected");
    body.replaceChildren();
    body.appendChild(el("h2", event.id + ": " + event.type + (event.decision ? " (" + event.decision + ")" : "")));
    var table = el("table");
    table.className = "fields";
    Object.keys(event).forEach(function (key) {
      var tr = el("tr");
      tr.appendChild(el("th", key));
      tr.appendChild(el("td", show(event[key])));
      table.appendChild(tr);
    });
    body.appendChild(table);
    var refs = Object.keys(event).filter(function (key) { return /_ref$/.test(key) && typeof event[key] === "string"; });
    if (refs.length) {
      body.appendChild(el("h3", "content"));
      refs.forEach(function (key) {
        var ref = event[key];
        body.appendChild(el("div", key));
        if (Object.prototype.hasOwnProperty.call(trace.contents, ref)) {
          body.appendChild(el("pre", pretty(trace.contents[ref]), "content"));
        } else {
          body.appendChild(el("p", "not captured (only its hash is in the trace)", "not-captured"));
        }
      });
    }
    var links = el("div", null, "edges");
    trace.edges.forEach(function (edge) {
      if (edge.src !== event.id && edge.dst !== event.id) { return; }
      var line = el("div");
      var out = edge.src === event.id;
      line.appendChild(document.createTextNode(edge.type + (out ? " \u2192 " : " \u2190 ")));
      line.appendChild(linkTo(pane, out ? edge.dst : edge.src));
      links.appendChild(line);
    });
    if (links.childNodes.length) {
      body.appendChild(el("h3", "edges"));
      body.appendChild(links);
    }
    panel.hidden = false;
  }

  function close() {
    panel.hidden = true;
    if (selected) { selected.classList.remove("selected"); selected.focus(); selected = null; }
  }

  document.addEventListener("click", function (ev) {
    if (ev.target.closest("#details-close")) { close(); return; }
    var row = ev.target.closest(".ev");
    if (row) { open(row); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") { close(); return; }
    var row = ev.target.closest && ev.target.closest(".ev");
    if (row && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); open(row); }
  });
})();
