// The node-link view: one POST /graph payload, laid out by d3-force and drawn on a canvas.
//
// Positions are kept by IRI across payloads, so moving through time moves only what changed:
// a node that appears starts beside a neighbour that was already there. Nodes are drawn in one
// canvas path per type style and edges in one path, which keeps a frame of 5k nodes cheap.

import { styleOf, traceShape } from "./styles.js";

const MIN_ZOOM = 0.05;
const MAX_ZOOM = 8;

export class GraphView {
  constructor(canvas, { onSelect = () => {}, onHover = () => {} } = {}) {
    this.canvas = canvas;
    this.context = canvas.getContext("2d");
    this.onSelect = onSelect;
    this.onHover = onHover;
    this.nodes = [];
    this.links = [];
    this.byIri = new Map();
    this.positions = new Map();
    this.hiddenTypes = new Set();
    this.overlay = null;
    this.selected = null;
    this.hovered = null;
    this.transform = { k: 1, x: 0, y: 0 };
    this.follow = true; // the camera fits the layout until the user zooms or pans
    this.drawnNodes = 0;
    this.frames = 0;
    this.pending = false;
    this.firstDraw = null; // resolved after the first frame of each payload
    this.simulation = window.d3
      .forceSimulation()
      .alphaDecay(0.03)
      .velocityDecay(0.35)
      .on("tick", () => this.tick());
    this.simulation.stop();
    this.resize();
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.listen();
  }

  // -- data --------------------------------------------------------------------------------------

  setData(payload) {
    for (const node of this.nodes) this.positions.set(node.iri, { x: node.x, y: node.y });
    const fresh = this.nodes.length === 0;
    const nodes = payload.nodes.map((n, index) => ({ ...n, index }));
    const links = payload.edges.map(([s, t, predicate]) => ({ source: nodes[s], target: nodes[t], predicate }));
    this.neighbours = nodes.map(() => []);
    for (const link of links) {
      this.neighbours[link.source.index].push(link.target);
      this.neighbours[link.target.index].push(link.source);
    }
    let known = 0;
    for (const node of nodes) {
      const at = this.positions.get(node.iri);
      if (at) {
        node.x = at.x;
        node.y = at.y;
        known += 1;
      }
    }
    for (const node of nodes) {
      if (node.x !== undefined) continue;
      const anchor = this.neighbours[node.index].find((m) => m.x !== undefined);
      if (anchor) {
        node.x = anchor.x + (Math.random() - 0.5) * 30;
        node.y = anchor.y + (Math.random() - 0.5) * 30;
      }
    }
    this.nodes = nodes;
    this.links = links;
    this.byIri = new Map(nodes.map((n) => [n.iri, n]));
    if (this.selected) this.selected = this.byIri.get(this.selected.iri) || null;
    this.hovered = null;
    const size = nodes.length;
    this.simulation.nodes(nodes);
    this.simulation
      .force("charge", window.d3.forceManyBody().strength(size > 1500 ? -18 : -45).theta(0.9).distanceMax(600))
      .force("link", window.d3.forceLink(links).distance(size > 1500 ? 22 : 40))
      .force("x", window.d3.forceX(0).strength(0.05))
      .force("y", window.d3.forceY(0).strength(0.05));
    // A payload that is mostly known nodes only settles; a new one lays out from scratch.
    const settled = size > 0 && known / size > 0.6;
    this.simulation.alpha(settled ? 0.25 : 1).restart();
    if (fresh) this.follow = true;
    this.firstDraw = new Promise((resolve) => (this.resolveFirstDraw = resolve));
    this.requestDraw();
    return this.firstDraw;
  }

  // Run the layout to rest at once and stop it (nodes then stay where they are drawn).
  settle() {
    this.simulation.stop();
    while (this.simulation.alpha() > this.simulation.alphaMin()) this.simulation.tick();
    if (this.follow) this.fit();
    this.draw();
  }

  setHiddenTypes(types) {
    this.hiddenTypes = new Set(types);
    this.requestDraw();
  }

  // overlay: { hubs: Map(iri -> rank), community: Map(iri -> community IRI), bridges: Set("from\n to") }
  setOverlay(overlay) {
    this.overlay = overlay;
    this.requestDraw();
  }

  select(iri) {
    this.selected = iri ? this.byIri.get(iri) || null : null;
    this.requestDraw();
    return this.selected;
  }

  centreOn(iri) {
    const node = this.byIri.get(iri);
    if (!node) return false;
    this.follow = false;
    const { width, height } = this.size;
    this.transform.x = width / 2 - node.x * this.transform.k;
    this.transform.y = height / 2 - node.y * this.transform.k;
    this.requestDraw();
    return true;
  }

  visible(node) {
    return !this.hiddenTypes.has(node.type || "");
  }

  // Where a node is on the page, in client pixels (the test hook clicks there).
  clientPosition(iri) {
    const node = this.byIri.get(iri);
    if (!node) return null;
    const box = this.canvas.getBoundingClientRect();
    const { k, x, y } = this.transform;
    return { x: box.left + node.x * k + x, y: box.top + node.y * k + y };
  }

  // -- layout and camera -------------------------------------------------------------------------

  tick() {
    if (this.follow) this.fit();
    this.requestDraw();
  }

  fit() {
    const shown = this.nodes.filter((n) => this.visible(n) && n.x !== undefined);
    if (shown.length === 0) return;
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    for (const n of shown) {
      x0 = Math.min(x0, n.x);
      y0 = Math.min(y0, n.y);
      x1 = Math.max(x1, n.x);
      y1 = Math.max(y1, n.y);
    }
    const { width, height } = this.size;
    const pad = 40;
    const k = Math.min(2, Math.max(MIN_ZOOM, Math.min((width - pad) / (x1 - x0 || 1), (height - pad) / (y1 - y0 || 1))));
    this.transform = { k, x: width / 2 - ((x0 + x1) / 2) * k, y: height / 2 - ((y0 + y1) / 2) * k };
  }

  resize() {
    const ratio = window.devicePixelRatio || 1;
    const box = this.canvas.getBoundingClientRect();
    this.size = { width: Math.max(1, box.width), height: Math.max(1, box.height) };
    this.canvas.width = Math.round(this.size.width * ratio);
    this.canvas.height = Math.round(this.size.height * ratio);
    this.ratio = ratio;
    if (this.follow) this.fit();
    this.requestDraw();
  }

  toWorld(clientX, clientY) {
    const box = this.canvas.getBoundingClientRect();
    const { k, x, y } = this.transform;
    return [(clientX - box.left - x) / k, (clientY - box.top - y) / k];
  }

  nodeAt(clientX, clientY) {
    const [wx, wy] = this.toWorld(clientX, clientY);
    let best = null;
    let bestDistance = Infinity;
    const slack = 4 / this.transform.k;
    for (const node of this.nodes) {
      if (!this.visible(node) || node.x === undefined) continue;
      const d = Math.hypot(node.x - wx, node.y - wy);
      if (d <= radius(node) + slack && d < bestDistance) {
        best = node;
        bestDistance = d;
      }
    }
    return best;
  }

  // -- pointer -----------------------------------------------------------------------------------

  listen() {
    const canvas = this.canvas;
    let press = null;
    canvas.addEventListener("pointerdown", (event) => {
      const node = this.nodeAt(event.clientX, event.clientY);
      press = { node, x: event.clientX, y: event.clientY, moved: false, start: { ...this.transform } };
      canvas.setPointerCapture(event.pointerId);
      canvas.classList.add("dragging");
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!press) {
        const node = this.nodeAt(event.clientX, event.clientY);
        if (node !== this.hovered) {
          this.hovered = node;
          canvas.title = node ? `${node.label}\n${node.iri}` : "";
          this.onHover(node);
          this.requestDraw();
        }
        return;
      }
      const dx = event.clientX - press.x;
      const dy = event.clientY - press.y;
      if (Math.hypot(dx, dy) > 3) press.moved = true;
      if (!press.moved) return;
      this.follow = false;
      if (press.node) {
        const [wx, wy] = this.toWorld(event.clientX, event.clientY);
        press.node.fx = wx;
        press.node.fy = wy;
        this.simulation.alphaTarget(0.2).restart();
      } else {
        this.transform = { ...press.start, x: press.start.x + dx, y: press.start.y + dy };
        this.requestDraw();
      }
    });
    const release = () => {
      if (!press) return;
      if (press.node) {
        press.node.fx = null;
        press.node.fy = null;
        this.simulation.alphaTarget(0);
      }
      if (!press.moved) {
        this.selected = press.node;
        this.onSelect(press.node);
        this.requestDraw();
      }
      press = null;
      canvas.classList.remove("dragging");
    };
    canvas.addEventListener("pointerup", release);
    canvas.addEventListener("pointercancel", release);
    canvas.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        this.follow = false;
        const box = canvas.getBoundingClientRect();
        const px = event.clientX - box.left;
        const py = event.clientY - box.top;
        const { k, x, y } = this.transform;
        const next = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, k * Math.exp(-event.deltaY * 0.0015)));
        this.transform = { k: next, x: px - ((px - x) / k) * next, y: py - ((py - y) / k) * next };
        this.requestDraw();
      },
      { passive: false },
    );
  }

  // -- drawing -----------------------------------------------------------------------------------

  requestDraw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  draw() {
    const c = this.context;
    const { k, x, y } = this.transform;
    c.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    c.clearRect(0, 0, this.size.width, this.size.height);
    c.translate(x, y);
    c.scale(k, k);
    const focus = this.selected ? new Set([this.selected, ...this.neighbours[this.selected.index]]) : null;
    const overlay = this.overlay;

    // edges: plain ones in one path, those touching the selection and the report's bridges on top
    c.lineWidth = 1 / k;
    c.strokeStyle = focus ? "rgba(120,130,150,0.15)" : "rgba(120,130,150,0.45)";
    c.beginPath();
    const strong = [];
    const bridges = [];
    for (const link of this.links) {
      const s = link.source;
      const t = link.target;
      if (s.x === undefined || !this.visible(s) || !this.visible(t)) continue;
      if (overlay && overlay.bridges.has(`${s.iri}\n${t.iri}`)) bridges.push(link);
      else if (focus && (s === this.selected || t === this.selected)) strong.push(link);
      c.moveTo(s.x, s.y);
      c.lineTo(t.x, t.y);
    }
    c.stroke();
    strokeLinks(c, strong, "rgba(47,111,219,0.8)", 1.6 / k);
    strokeLinks(c, bridges, "rgba(224,120,0,0.9)", 3 / k, [6 / k, 4 / k]);

    // nodes: one path per style
    const groups = new Map();
    let drawn = 0;
    for (const node of this.nodes) {
      if (node.x === undefined || !this.visible(node)) continue;
      drawn += 1;
      const style = styleOf(node.type);
      let group = groups.get(style);
      if (!group) groups.set(style, (group = []));
      group.push(node);
    }
    for (const [style, members] of groups) {
      c.fillStyle = style.colour;
      c.globalAlpha = 1;
      c.beginPath();
      for (const node of members) traceShape(c, style.shape, node.x, node.y, radius(node));
      c.fill();
      if (focus) {
        // fade what is not the selection's neighbourhood
        c.fillStyle = "rgba(251,252,253,0.7)";
        c.beginPath();
        for (const node of members) if (!focus.has(node)) traceShape(c, style.shape, node.x, node.y, radius(node) + 0.5);
        c.fill();
      }
    }
    if (overlay) {
      c.lineWidth = 2.5 / k;
      for (const node of this.nodes) {
        if (node.x === undefined || !this.visible(node)) continue;
        const community = overlay.community.get(node.iri);
        if (community) {
          c.strokeStyle = overlay.colourOf(community);
          c.beginPath();
          c.arc(node.x, node.y, radius(node) + 3 / k, 0, 2 * Math.PI);
          c.stroke();
        }
        if (overlay.hubs.has(node.iri)) {
          c.strokeStyle = "#e0a100";
          c.beginPath();
          c.arc(node.x, node.y, radius(node) + 6 / k, 0, 2 * Math.PI);
          c.stroke();
        }
      }
    }
    for (const [node, colour] of [
      [this.hovered, "#687184"],
      [this.selected, "#1d2330"],
    ]) {
      if (!node || node.x === undefined) continue;
      c.strokeStyle = colour;
      c.lineWidth = 2 / k;
      c.beginPath();
      c.arc(node.x, node.y, radius(node) + 2 / k, 0, 2 * Math.PI);
      c.stroke();
    }

    // labels: all of them on a small or zoomed-in graph, else the ones that matter
    c.fillStyle = "#1d2330";
    c.font = `${11 / k}px system-ui, sans-serif`;
    c.textBaseline = "middle";
    const everyLabel = drawn <= 150 || k >= 1.6;
    for (const node of this.nodes) {
      if (node.x === undefined || !this.visible(node)) continue;
      const wanted =
        everyLabel ||
        node === this.selected ||
        node === this.hovered ||
        (focus && focus.has(node)) ||
        (overlay && overlay.hubs.has(node.iri));
      if (wanted) c.fillText(node.label, node.x + radius(node) + 3 / k, node.y);
    }

    this.drawnNodes = drawn;
    this.frames += 1;
    if (this.resolveFirstDraw) {
      const resolve = this.resolveFirstDraw;
      this.resolveFirstDraw = null;
      resolve(drawn);
    }
  }
}

// One stroke for a set of links, in their own colour, width and dash.
function strokeLinks(c, links, colour, width, dash = []) {
  if (links.length === 0) return;
  c.strokeStyle = colour;
  c.lineWidth = width;
  c.setLineDash(dash);
  c.beginPath();
  for (const { source: s, target: t } of links) {
    c.moveTo(s.x, s.y);
    c.lineTo(t.x, t.y);
  }
  c.stroke();
  c.setLineDash([]);
}

export function radius(node) {
  return Math.min(14, 3.5 + Math.sqrt(node.deg || 0) * 1.3);
}
