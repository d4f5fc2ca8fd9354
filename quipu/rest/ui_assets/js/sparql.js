// The SPARQL box: POST /query (optionally at the chosen time), a result table and a CSV file.
// The CSV follows SPARQL 1.1's CSV results format: a header of variable names, then one line per
// row with plain values, quoted when they hold a comma, a quote or a line break.

import { post } from "./api.js";
import { el, valueText } from "./terms.js";

const SHOWN = 1000; // rows put in the table; the CSV holds them all

export class SparqlBox {
  constructor({ currentView, onError, onDone }) {
    this.currentView = currentView;
    this.onError = onError;
    this.onDone = onDone;
    this.form = document.getElementById("sparql-form");
    this.input = document.getElementById("sparql-input");
    this.atPoint = document.getElementById("sparql-at-point");
    this.count = document.getElementById("sparql-count");
    this.table = document.getElementById("sparql-table");
    this.csv = document.getElementById("sparql-csv");
    this.rows = 0;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.run();
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.run();
      }
    });
  }

  async run() {
    const body = { query: this.input.value };
    const view = this.currentView();
    if (this.atPoint.checked) {
      if (view.valid_at !== null) body.valid_at = view.valid_at;
      if (view.tx !== null) body.tx = view.tx;
    }
    this.count.textContent = "running…";
    try {
      const result = await post("/query", body);
      const { columns, rows, note } = tabulate(result);
      this.render(columns, rows);
      this.rows = rows.length;
      this.count.textContent = `${rows.length} row${rows.length === 1 ? "" : "s"}${note}`;
      this.offerCsv(columns, rows);
      this.onDone(rows.length);
    } catch (error) {
      this.count.textContent = "";
      this.table.replaceChildren();
      this.csv.hidden = true;
      this.onError(error);
    }
  }

  render(columns, rows) {
    const head = el("thead");
    const tr = el("tr");
    tr.append(...columns.map((c) => el("th", c)));
    head.append(tr);
    const bodyRows = rows.slice(0, SHOWN).map((row) => {
      const line = el("tr");
      line.append(...row.map((cell) => el("td", cell)));
      return line;
    });
    const body = el("tbody");
    body.append(...bodyRows);
    this.table.replaceChildren(head, body);
  }

  offerCsv(columns, rows) {
    if (this.csv.href.startsWith("blob:")) URL.revokeObjectURL(this.csv.href);
    const text = [columns, ...rows].map((row) => row.map(csvField).join(",")).join("\r\n") + "\r\n";
    this.csv.href = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
    this.csv.hidden = false;
  }
}

// quipu's JSON answer as text columns and rows: SELECT rows, an ASK boolean or CONSTRUCT triples.
export function tabulate(result) {
  const note = result.truncated ? " (truncated by the server's row limit)" : "";
  if (Array.isArray(result.variables)) {
    const columns = result.variables;
    return { columns, rows: result.rows.map((row) => columns.map((c) => valueText(row[c]))), note };
  }
  if (Array.isArray(result.triples)) {
    const columns = ["subject", "predicate", "object"];
    return { columns, rows: result.triples.map((t) => columns.map((c) => valueText(t[c]))), note };
  }
  if ("result" in result) return { columns: ["result"], rows: [[String(result.result)]], note };
  return { columns: ["answer"], rows: [[JSON.stringify(result)]], note };
}

function csvField(text) {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
