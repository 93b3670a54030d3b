// The dashboard's few behaviours: the journal follows new requests live (pushed by the
// server as they are served, no polling), and a form with data-confirm asks first.
// Everything from a request is written with textContent, never as HTML.
"use strict";

function journalRow(base, entry) {
  const row = document.createElement("tr");
  row.dataset.number = String(entry.number);
  row.className = "fresh" + (entry.fault ? " fault" : "");
  const cells = [entry.method, entry.target, entry.status, entry.tenant, entry.ms];
  const first = document.createElement("td");
  const link = document.createElement("a");
  link.href = base + "/journal/" + entry.number;
  link.textContent = String(entry.number);
  first.appendChild(link);
  row.appendChild(first);
  cells.forEach((value, i) => {
    const cell = document.createElement("td");
    cell.textContent = value;
    if (i === 1) cell.className = "mono";
    if (i === 2) {
      cell.className = "status-code s" + (/^\d/.test(value) ? value[0] : "0") + "xx";
      if (entry.fault) {
        const mark = document.createElement("span");
        mark.className = "fault-mark";
        mark.textContent = "fault";
        cell.append(" ", mark);
      }
    }
    row.appendChild(cell);
  });
  return row;
}

function followJournal() {
  const live = document.getElementById("live");
  const body = document.querySelector("#journal tbody");
  if (!live || !body || !window.EventSource) return;
  const base = document.body.dataset.base;
  const source = new EventSource(live.dataset.events);
  source.addEventListener("request", (event) => {
    const entry = JSON.parse(event.data);
    if (body.querySelector('tr[data-number="' + entry.number + '"]')) return;
    const none = body.querySelector("tr.none");
    if (none) none.remove();
    body.insertBefore(journalRow(base, entry), body.firstChild);
  });
  source.addEventListener("open", () => { live.classList.add("ok"); live.classList.remove("bad"); });
  source.addEventListener("error", () => { live.classList.add("bad"); live.classList.remove("ok"); });
}

function confirmForms() {
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  followJournal();
  confirmForms();
});
