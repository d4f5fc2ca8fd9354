// The explorer's start-up and the state its parts share: the point in time being looked at, the
// node-link payload drawn, and the selected entity.
//
// window.quipuExplorer is a small hook for tests and for scripting the page from the console:
// what was drawn, where a node is, and promises that settle when a load has been drawn.

import { ApiError, get, hasToken, post, setToken, whenUnauthorised } from "./api.js";
import { EntityPanel } from "./entity-panel.js";
import { GraphView } from "./graph-view.js";
import { loadOverlay, renderOverlayPanel } from "./overlay.js";
import { SearchBox } from "./search.js";
import { EntityList, Legend } from "./sidebar.js";
import { SparqlBox } from "./sparql.js";
import { TimeControls } from "./time-controls.js";

const params = new URLSearchParams(location.search);
// Nodes asked of POST /graph: the tool's cap (2000) unless the address says fewer.
const NODE_LIMIT = Math.max(0, Math.min(2000, Number(params.get("limit") || 2000)));
const EDGE_BUDGET = 50000;

const status = document.getElementById("status");
const note = document.getElementById("graph-note");
let generation = 0;
let loading = Promise.resolve();
let overlay = null;

function report(message, isError = false) {
  status.textContent = message;
  status.classList.toggle("error", isError);
}

function fail(error) {
  const text = error instanceof ApiError ? `${error.message} (HTTP ${error.status})` : String(error.message || error);
  report(text, true);
}

const graph = new GraphView(document.getElementById("graph"), {
  onSelect: (node) => (node ? select(node.iri, node.label) : undefined),
});
const time = new TimeControls({ onChange: () => reload() });
const panel = new EntityPanel({
  onNavigate: (iri) => select(iri),
  onPickTime: (instant) => time.setValidAt(instant),
  onError: fail,
  labelOf: (iri) => graph.byIri.get(iri)?.label,
});
const legend = new Legend({
  onChange: (hidden) => {
    graph.setHiddenTypes(hidden);
    list.setHidden(hidden);
  },
});
const list = new EntityList({ onPick: (iri, label) => select(iri, label) });
const search = new SearchBox({ currentView: () => time.view(), onPick: (iri, label) => select(iri, label), onError: fail });
const sparql = new SparqlBox({
  currentView: () => time.view(),
  onError: fail,
  onDone: (rows) => report(`query answered: ${rows} row${rows === 1 ? "" : "s"}`),
});

function select(iri, label) {
  const node = graph.select(iri);
  if (node) graph.centreOn(iri);
  list.select(iri);
  return panel.show(iri, time.view(), label || (node && node.label));
}

async function loadGraph() {
  const mine = ++generation;
  const view = time.view();
  const body = { limit: NODE_LIMIT, edge_budget: EDGE_BUDGET };
  if (view.valid_at !== null) body.valid_at = view.valid_at;
  if (view.tx !== null) body.as_of_tx = view.tx;
  const asked = performance.now();
  const payload = await post("/graph", body);
  if (mine !== generation) return; // the slider moved on; a newer load will draw
  const fetched = performance.now();
  const drawn = graph.setData(payload);
  const untyped = payload.nodes.filter((n) => !n.type).length;
  legend.render(payload.types, untyped);
  list.setNodes(payload.nodes, legend.hidden);
  const t = payload.truncated;
  note.textContent =
    `${t.shown} of ${t.of} entities, ${t.edges_shown} of ${t.edges_of} links` +
    (t.shown < t.of || t.edges_shown < t.edges_of ? " (ranked by degree; the rest are not drawn)" : "");
  await drawn;
  metrics.graphMs = fetched - asked;
  metrics.drawMs = performance.now() - fetched;
  metrics.nodes = graph.drawnNodes;
  if (metrics.firstDrawMs === null) {
    performance.mark("quipu:first-draw");
    metrics.firstDrawMs = performance.now();
  }
  const where = view.valid_at === null && view.tx === null ? "now" : describe(view);
  report(`${graph.drawnNodes} nodes drawn · ${where}`);
}

function describe(view) {
  const parts = [];
  if (view.valid_at !== null) parts.push(`valid at ${view.valid_at}`);
  if (view.tx !== null) parts.push(`as of transaction ${view.tx}`);
  return parts.join(", ");
}

function reload() {
  loading = Promise.all([loadGraph(), panel.refresh(time.view())]).catch(fail);
  return loading;
}

async function loadStats() {
  const stats = await get("/stats");
  document.getElementById("store-stats").textContent =
    `${stats.facts.toLocaleString()} facts · ${stats.entities.toLocaleString()} entities · ${stats.head_tx.toLocaleString()} transactions`;
  time.setSpan(stats.valid_time);
  await time.loadTransactions(stats.head_tx);
}

async function toggleOverlay(on) {
  const box = document.getElementById("overlay-panel");
  if (!on) {
    graph.setOverlay(null);
    box.hidden = true;
    return;
  }
  try {
    overlay = overlay || (await loadOverlay());
    graph.setOverlay(overlay);
    const labels = new Map(graph.nodes.map((n) => [n.iri, n.label]));
    renderOverlayPanel(box, overlay, (iri) => select(iri), (iri) => labels.get(iri));
    box.hidden = false;
  } catch (error) {
    document.getElementById("overlay-toggle").checked = false;
    fail(error);
  }
}

// -- the token: asked for only when a read is refused, held in memory only ------------------------

const tokenBar = document.getElementById("token-bar");
const tokenInput = document.getElementById("token-input");
whenUnauthorised(() => {
  tokenBar.hidden = false;
  tokenInput.focus();
});
document.getElementById("token-button").addEventListener("click", () => {
  tokenBar.hidden = !tokenBar.hidden;
});
document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  setToken(tokenInput.value);
  tokenInput.value = "";
  tokenBar.hidden = true;
  start();
});
document.getElementById("token-forget").addEventListener("click", () => {
  setToken(null);
  tokenInput.value = "";
  report("token forgotten");
});
document.getElementById("overlay-toggle").addEventListener("change", (event) => toggleOverlay(event.target.checked));

// -- start -------------------------------------------------------------------------------------

const metrics = { firstDrawMs: null, graphMs: null, drawMs: null, nodes: 0 };
let resolveReady;
const ready = new Promise((resolve) => (resolveReady = resolve));

async function start() {
  report("loading…");
  try {
    await Promise.all([loadStats(), (loading = loadGraph())]);
    resolveReady(metrics);
    search.probeSemantic();
  } catch (error) {
    fail(error);
    if (error instanceof ApiError && error.status === 401 && !hasToken()) report("this server needs a token for reads", true);
  }
}

window.quipuExplorer = {
  ready,
  metrics,
  loaded: () => loading,
  drawnNodeCount: () => graph.drawnNodes,
  nodes: () => graph.nodes.map(({ iri, label, type, deg }) => ({ iri, label, type, deg })),
  clientPosition: (iri) => graph.clientPosition(iri),
  settle: () => graph.settle(),
  stepFor: (instant) => time.stepOf(Date.parse(instant)),
  view: () => time.view(),
  setValidAt: (instant) => time.setValidAt(instant),
  setTx: (tx) => time.setTx(tx),
  select,
  search: (text) => {
    search.input.value = text;
    return search.run();
  },
  sparqlRows: () => sparql.rows,
  // Draw a node-link payload given here instead of one from the server (a drawing benchmark).
  drawPayload: async (payload) => {
    generation += 1;
    const started = performance.now();
    const drawn = await graph.setData(payload);
    return { drawn, ms: performance.now() - started };
  },
};

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
