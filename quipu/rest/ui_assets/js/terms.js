// Showing RDF terms as text. Every value reaches the page through textContent, never as markup.

const PREFIXES = [
  ["rdf:", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"],
  ["rdfs:", "http://www.w3.org/2000/01/rdf-schema#"],
  ["xsd:", "http://www.w3.org/2001/XMLSchema#"],
  ["owl:", "http://www.w3.org/2002/07/owl#"],
  ["prov:", "http://www.w3.org/ns/prov#"],
  ["schema:", "http://schema.org/"],
];

// The text after the last '#' or '/', as the server's node-link view shortens IRIs.
export function shortIri(iri) {
  const cut = Math.max(iri.lastIndexOf("#"), iri.lastIndexOf("/"));
  const tail = iri.slice(cut + 1);
  return tail || iri;
}

export function curie(iri) {
  for (const [prefix, ns] of PREFIXES) if (iri.startsWith(ns)) return prefix + iri.slice(ns.length);
  return shortIri(iri);
}

// A value as quipu's JSON gives it (a string, a number, a boolean or {value, lang|datatype}).
// ``short``: a string that looks like an IRI is shown by its last segment.
export function valueText(value, short = false) {
  if (value === null || value === undefined) return "";
  if (short && typeof value === "string" && /^[a-z][a-z0-9+.-]*:[^\s]+$/i.test(value)) return curie(value);
  if (typeof value === "object") {
    const text = value.value !== undefined ? String(value.value) : JSON.stringify(value);
    return value.lang ? `${text} @${value.lang}` : text;
  }
  return String(value);
}

// A term of the SPARQL 1.1 JSON results format: {type: uri|literal|bnode, value, xml:lang?, datatype?}.
export function bindingTerm(term) {
  if (!term) return { kind: "none", text: "" };
  if (term.type === "uri") return { kind: "iri", iri: term.value, text: term.value };
  if (term.type === "bnode") return { kind: "bnode", text: `_:${term.value}` };
  const lang = term["xml:lang"];
  return { kind: "literal", text: lang ? `${term.value} @${lang}` : term.value, lexical: term.value, datatype: term.datatype };
}

// Whether a string can go between <...> in a SPARQL query as one IRI (SPARQL's IRIREF rule).
export function isSafeIri(iri) {
  return typeof iri === "string" && iri.length > 0 && !/[\u0000-\u0020<>"{}|^`\\]/.test(iri);
}

export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}
