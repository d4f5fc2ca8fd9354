// The selected entity: its facts at the chosen point in time, and its history as a timeline.
//
// At the current state the facts come from GET /entity (which also names the linked entities);
// at a past point, from one SPARQL SELECT at that valid time or transaction, since /entity reads
// only the present. The history is POST /entity_history, every row the store ever logged.

import { get, post } from "./api.js";
import { bindingTerm, curie, el, isSafeIri, shortIri } from "./terms.js";
import { drawTimeline } from "./timeline.js";

const RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label";

export class EntityPanel {
  // labelOf: a label the page already knows for an IRI (the drawn nodes'), for past points,
  // where the SPARQL answer carries none
  constructor({ onNavigate, onPickTime, onError, labelOf = () => undefined }) {
    this.onNavigate = onNavigate;
    this.labelOf = labelOf;
    this.onPickTime = onPickTime;
    this.onError = onError;
    this.title = document.getElementById("entity-title");
    this.iriLine = document.getElementById("entity-iri");
    this.pointLine = document.getElementById("entity-point");
    this.body = document.querySelector("#facts tbody");
    this.timeline = document.getElementById("timeline");
    this.iri = null;
    this.history = [];
    this.generation = 0;
  }

  async show(iri, view, label) {
    this.iri = iri;
    const generation = ++this.generation;
    this.title.textContent = label || shortIri(iri);
    this.iriLine.textContent = iri;
    this.pointLine.textContent = describePoint(view);
    try {
      const [facts, history] = await Promise.all([this.facts(iri, view), post("/entity_history", { iri })]);
      if (generation !== this.generation) return; // a later click won
      this.renderFacts(facts);
      this.history = history.history || [];
      this.drawHistory(view);
    } catch (error) {
      if (generation === this.generation) this.onError(error);
    }
  }

  // The facts again at a new point (the time slider moved), keeping the history.
  async refresh(view) {
    if (!this.iri) return;
    const generation = ++this.generation;
    this.pointLine.textContent = describePoint(view);
    try {
      const facts = await this.facts(this.iri, view);
      if (generation !== this.generation) return;
      this.renderFacts(facts);
      this.drawHistory(view);
    } catch (error) {
      if (generation === this.generation) this.onError(error);
    }
  }

  drawHistory(view) {
    drawTimeline(this.timeline, this.history, view.valid_at, (instant) => this.onPickTime(instant));
  }

  // [{predicate, term: {kind, text, iri?, label?}}]
  async facts(iri, view) {
    if (view.valid_at === null && view.tx === null) {
      return fromJsonLd(await get("/entity", { params: { iri, expanded: "true" }, accept: "application/ld+json" }));
    }
    if (!isSafeIri(iri)) throw new Error(`cannot query this IRI at a past point: ${iri}`);
    const body = { query: `SELECT ?p ?o WHERE { <${iri}> ?p ?o }` };
    if (view.valid_at !== null) body.valid_at = view.valid_at;
    if (view.tx !== null) body.tx = view.tx;
    const result = await post("/query", body, { accept: "application/sparql-results+json" });
    return result.results.bindings.map((row) => {
      const term = bindingTerm(row.o);
      if (term.kind === "iri") term.label = this.labelOf(term.iri);
      return { predicate: row.p.value, term };
    });
  }

  renderFacts(facts) {
    const rows = [...facts].sort(
      (a, b) => rank(a.predicate) - rank(b.predicate) || a.predicate.localeCompare(b.predicate) || a.term.text.localeCompare(b.term.text),
    );
    this.body.replaceChildren(
      ...rows.map(({ predicate, term }) => {
        const tr = el("tr");
        const p = el("td", curie(predicate));
        p.title = predicate;
        const v = el("td");
        if (term.kind === "iri") {
          const link = el("a", term.label || curie(term.iri));
          link.title = term.iri;
          link.addEventListener("click", () => this.onNavigate(term.iri));
          v.append(link);
        } else {
          v.textContent = term.text;
          if (term.datatype) v.title = term.datatype;
        }
        tr.append(p, v);
        return tr;
      }),
    );
    if (rows.length === 0) this.body.replaceChildren(emptyRow("no facts at this point"));
    // the name it had at this point (a label can change over time)
    const named = rows.find((row) => row.predicate === RDFS_LABEL);
    if (named) this.title.textContent = named.term.lexical ?? named.term.text;
  }
}

function rank(predicate) {
  return predicate === RDF_TYPE ? 0 : predicate === RDFS_LABEL ? 1 : 2;
}

function emptyRow(text) {
  const tr = el("tr");
  const td = el("td", text, "muted");
  td.colSpan = 2;
  tr.append(td);
  return tr;
}

export function describePoint(view) {
  if (view.valid_at === null && view.tx === null) return "facts now";
  const parts = [];
  if (view.valid_at !== null) parts.push(`valid at ${view.valid_at}`);
  if (view.tx !== null) parts.push(`as of transaction ${view.tx}`);
  return `facts ${parts.join(", ")}`;
}

// GET /entity?expanded=true: full IRIs as keys; a linked node comes with its label.
function fromJsonLd(doc) {
  const out = [];
  for (const [key, raw] of Object.entries(doc || {})) {
    if (key === "@id" || key === "@context") continue;
    const predicate = key === "@type" ? RDF_TYPE : key;
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (key === "@type") out.push({ predicate, term: { kind: "iri", iri: value, text: value } });
      else out.push({ predicate, term: jsonLdTerm(value) });
    }
  }
  return out;
}

function jsonLdTerm(value) {
  if (value !== null && typeof value === "object") {
    if (value["@id"] !== undefined) {
      const label = value[RDFS_LABEL];
      const text = Array.isArray(label) ? label[0] : label;
      const name = text && typeof text === "object" ? text["@value"] : text;
      return { kind: "iri", iri: value["@id"], text: value["@id"], label: name ? String(name) : undefined };
    }
    if (value["@value"] !== undefined) {
      const lang = value["@language"];
      const text = String(value["@value"]);
      return { kind: "literal", text: lang ? `${text} @${lang}` : text, lexical: text, datatype: value["@type"] };
    }
    return { kind: "literal", text: JSON.stringify(value) };
  }
  return { kind: "literal", text: String(value), lexical: String(value) };
}
