// The legend, which is also the type filter, and the list of the entities drawn.

import { styleOf, swatch } from "./styles.js";
import { el, shortIri } from "./terms.js";

const LISTED = 400; // list items at once; the filter narrows a bigger graph

export class Legend {
  constructor({ onChange }) {
    this.onChange = onChange;
    this.list = document.getElementById("legend");
    this.hidden = new Set();
  }

  // census: the payload's `types` ({iri, label, count}); untyped: nodes without a type
  render(census, untyped) {
    const rows = census.map((t) => ({ key: t.iri, label: t.label, count: t.count, title: t.iri }));
    if (untyped > 0) rows.push({ key: "", label: "(no type)", count: untyped, title: "nodes without an rdf:type" });
    this.list.replaceChildren(
      ...rows.map((row) => {
        const li = el("li");
        const label = el("label");
        const box = el("input");
        box.type = "checkbox";
        box.checked = !this.hidden.has(row.key);
        box.dataset.type = row.key;
        box.addEventListener("change", () => {
          if (box.checked) this.hidden.delete(row.key);
          else this.hidden.add(row.key);
          this.onChange(this.hidden);
        });
        label.title = row.title;
        label.append(box, swatch(styleOf(row.key || null)), el("span", row.label), el("span", String(row.count), "count"));
        li.append(label);
        return li;
      }),
    );
  }
}

export class EntityList {
  constructor({ onPick }) {
    this.onPick = onPick;
    this.list = document.getElementById("entity-list");
    this.filter = document.getElementById("entity-filter");
    this.count = document.getElementById("entity-count");
    this.nodes = [];
    this.hidden = new Set();
    this.selected = null;
    this.filter.addEventListener("input", () => this.render());
  }

  setNodes(nodes, hidden) {
    this.nodes = [...nodes].sort((a, b) => a.label.localeCompare(b.label) || a.iri.localeCompare(b.iri));
    this.hidden = hidden;
    this.render();
  }

  setHidden(hidden) {
    this.hidden = hidden;
    this.render();
  }

  select(iri) {
    this.selected = iri;
    for (const li of this.list.children) li.classList.toggle("selected", li.dataset.iri === iri);
  }

  render() {
    const needle = this.filter.value.trim().toLowerCase();
    const matching = this.nodes.filter(
      (n) =>
        !this.hidden.has(n.type || "") &&
        (!needle || n.label.toLowerCase().includes(needle) || n.iri.toLowerCase().includes(needle)),
    );
    this.count.textContent = `(${matching.length})`;
    const items = matching.slice(0, LISTED).map((node) => {
      const li = el("li");
      li.append(el("span", node.label), el("span", node.type ? ` ${shortIri(node.type)}` : "", "muted"));
      li.title = node.iri;
      li.dataset.iri = node.iri;
      if (node.iri === this.selected) li.classList.add("selected");
      li.addEventListener("click", () => this.onPick(node.iri, node.label));
      return li;
    });
    if (matching.length > LISTED) items.push(el("li", `… ${matching.length - LISTED} more: type to narrow`, "muted"));
    this.list.replaceChildren(...items);
  }
}
