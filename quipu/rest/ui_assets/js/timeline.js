// An entity's history as a valid-time timeline: one row per (predicate, value), one bar per
// window in which that fact was asserted; a fact still open runs to the right edge. The red line
// is the chosen valid time; clicking a bar moves the time slider to the start of its window.

import { curie, el, valueText } from "./terms.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 18;
const LABEL = 128;
const MAX_ROWS = 60;

function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

export function drawTimeline(container, history, validAt, onPick) {
  const asserted = history.filter((row) => row.op === "assert");
  if (asserted.length === 0) {
    container.replaceChildren(el("p", "no history", "muted"));
    return;
  }
  const rows = new Map();
  for (const row of asserted) {
    const key = `${row.predicate}\n${JSON.stringify(row.value)}`;
    if (!rows.has(key)) rows.set(key, { predicate: row.predicate, value: row.value, windows: [] });
    rows.get(key).windows.push(row);
  }
  const now = Date.now();
  const starts = asserted.map((row) => Date.parse(row.valid_from));
  const ends = asserted.map((row) => (row.valid_to ? Date.parse(row.valid_to) : now));
  const lo = Math.min(...starts);
  const hi = Math.max(now, ...ends, lo + 1);
  const width = Math.max(240, container.clientWidth || 300);
  const span = width - LABEL - 6;
  const x = (t) => LABEL + ((t - lo) / (hi - lo)) * span;
  const shown = [...rows.values()].slice(0, MAX_ROWS);
  const height = shown.length * ROW + 18;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, height, role: "img" });
  root.append(svg("title", {}));
  root.firstChild.textContent = "valid-time history";

  shown.forEach((row, i) => {
    const y = i * ROW;
    const name = svg("text", { x: 0, y: y + 12 });
    name.textContent = `${curie(row.predicate)} ${clip(valueText(row.value, true), 16)}`;
    const full = svg("title", {});
    full.textContent = `${row.predicate}\n${valueText(row.value)}`;
    name.append(full);
    root.append(name);
    for (const w of row.windows) {
      const start = Date.parse(w.valid_from);
      const end = w.valid_to ? Date.parse(w.valid_to) : now;
      const bar = svg("rect", {
        x: x(start),
        y: y + 3,
        width: Math.max(2, x(end) - x(start)),
        height: ROW - 6,
        rx: 2,
        class: w.valid_to ? "bar closed" : "bar",
      });
      const tip = svg("title", {});
      tip.textContent = `${valueText(w.value)}\nvalid ${w.valid_from} → ${w.valid_to || "open"}\ntransaction ${w.tx}`;
      bar.append(tip);
      bar.addEventListener("click", () => onPick(w.valid_from));
      bar.style.cursor = "pointer";
      root.append(bar);
    }
  });
  const axisY = shown.length * ROW + 12;
  for (const [t, anchor] of [
    [lo, "start"],
    [hi, "end"],
  ]) {
    const tick = svg("text", { x: x(t), y: axisY, "text-anchor": anchor, class: "axis" });
    tick.textContent = new Date(t).toISOString().slice(0, 10);
    root.append(tick);
  }
  const at = validAt ? Date.parse(validAt) : now;
  root.append(svg("line", { x1: x(at), x2: x(at), y1: 0, y2: shown.length * ROW, class: "cursor" }));
  const parts = [root];
  if (rows.size > MAX_ROWS) parts.push(el("p", `${rows.size - MAX_ROWS} more facts not drawn`, "muted small"));
  container.replaceChildren(...parts);
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}
