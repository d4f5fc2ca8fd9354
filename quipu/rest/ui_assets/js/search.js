// Search: keyword (BM25 over the keyword index, POST /search mode "keyword"), and semantic when
// the server has an embedding model. A server with the keyword index switched off or not built
// yet answers keyword searches from POST /search_nodes, a label and IRI match, and says so.

import { ApiError, post } from "./api.js";
import { el, shortIri } from "./terms.js";

export class SearchBox {
  constructor({ currentView, onPick, onError }) {
    this.currentView = currentView;
    this.onPick = onPick;
    this.onError = onError;
    this.form = document.getElementById("search-form");
    this.input = document.getElementById("search-input");
    this.mode = document.getElementById("search-mode");
    this.note = document.getElementById("search-note");
    this.list = document.getElementById("search-results");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.run();
    });
  }

  // Offer semantic search only when the server can embed a query: one probe at start-up.
  async probeSemantic() {
    try {
      await post("/search", { query: "probe", mode: "semantic", limit: 1 });
      this.mode.querySelector('option[value="semantic"]').disabled = false;
      return true;
    } catch {
      return false;
    }
  }

  async run() {
    const query = this.input.value.trim();
    if (!query) return;
    const mode = this.mode.value;
    const view = this.currentView();
    const body = { query, mode, limit: 25 };
    if (view.valid_at !== null) body.valid_at = view.valid_at;
    this.note.textContent = "searching…";
    try {
      let hits;
      let note = mode === "semantic" ? "semantic search" : "keyword search (BM25)";
      try {
        hits = fromSearch(await post("/search", body));
      } catch (error) {
        if (mode !== "keyword" || !(error instanceof ApiError) || error.problem.field !== "mode") throw error;
        hits = fromNodes(await post("/search_nodes", { query, max_results: 25 }));
        note = "label match (the keyword index is off on this server)";
      }
      this.note.textContent = `${hits.length} result${hits.length === 1 ? "" : "s"} · ${note}`;
      this.list.replaceChildren(
        ...hits.map((hit) => {
          const li = el("li");
          li.append(el("span", hit.label), el("span", ` ${shortIri(hit.iri)}`, "muted"));
          li.title = hit.iri;
          li.dataset.iri = hit.iri;
          li.addEventListener("click", () => this.onPick(hit.iri, hit.label));
          return li;
        }),
      );
      return hits;
    } catch (error) {
      this.note.textContent = "";
      this.list.replaceChildren();
      this.onError(error);
      return [];
    }
  }
}

function fromSearch(answer) {
  return (answer.results || []).map((r) => ({ iri: r.iri || r.entity, label: r.label || shortIri(r.iri || r.entity) }));
}

function fromNodes(answer) {
  return (answer.nodes || []).map((n) => ({ iri: n.iri, label: n.label || shortIri(n.iri) }));
}
