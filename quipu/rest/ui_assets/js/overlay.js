// The graph report (GET /report) as an overlay: PageRank hubs get a gold ring, the surprising
// connections between communities are drawn as dashed orange links, and their two ends are
// ringed in their community's colour. The report reads the current graph, whatever the slider says.

import { get } from "./api.js";
import { communityColour } from "./styles.js";
import { el, shortIri } from "./terms.js";

export async function loadOverlay() {
  const report = await get("/report");
  const hubs = new Map(report.hubs.map((h, i) => [h.entity, i + 1]));
  const community = new Map();
  const bridges = new Set();
  const palette = new Map();
  const colourOf = (iri) => {
    if (!palette.has(iri)) palette.set(iri, communityColour(palette.size));
    return palette.get(iri);
  };
  for (const b of report.surprising_connections) {
    community.set(b.from, b.community_from);
    community.set(b.to, b.community_to);
    bridges.add(`${b.from}\n${b.to}`);
  }
  return { report, hubs, community, bridges, colourOf };
}

export function renderOverlayPanel(panel, overlay, onPick, labelOf) {
  const { report } = overlay;
  const g = report.graph;
  const parts = [
    el("strong", "Graph report"),
    el(
      "p",
      `${g.nodes} nodes, ${g.edges} edges, ${g.communities} communities (modularity ${Number(g.modularity).toFixed(2)}); of the current graph.`,
      "muted",
    ),
    el("div", "Hubs (PageRank)"),
  ];
  const hubs = el("ol");
  for (const h of report.hubs) {
    const li = el("li");
    const link = el("a", labelOf(h.entity) || shortIri(h.entity));
    link.title = h.entity;
    link.href = "#";
    link.addEventListener("click", (event) => {
      event.preventDefault();
      onPick(h.entity);
    });
    li.append(link, el("span", ` ${h.pagerank.toFixed(3)}`, "muted"));
    hubs.append(li);
  }
  parts.push(hubs);
  if (report.surprising_connections.length) {
    parts.push(el("div", "Surprising connections"));
    const bridges = el("ol");
    for (const b of report.surprising_connections) {
      bridges.append(el("li", `${labelOf(b.from) || shortIri(b.from)} → ${labelOf(b.to) || shortIri(b.to)} (${shortIri(b.predicate)})`));
    }
    parts.push(bridges);
  }
  if (report.suggested_questions.length) {
    parts.push(el("div", "Questions worth asking"));
    const asked = el("ol");
    for (const q of report.suggested_questions) asked.append(el("li", q));
    parts.push(asked);
  }
  panel.replaceChildren(...parts);
}
