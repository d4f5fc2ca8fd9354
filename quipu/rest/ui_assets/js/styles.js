// A colour and a shape per rdf:type. A type keeps the style it was first given for the life of
// the page, so moving through time never recolours the graph. Ten colours and five shapes: two
// types share a colour only from the eleventh on, and then differ in shape.

const COLOURS = ["#2f6fdb", "#e4572e", "#17a589", "#9b59b6", "#f1a208", "#1b998b", "#c0392b", "#5d6d7e", "#8e44ad", "#27ae60"];
const SHAPES = ["circle", "square", "triangle", "diamond", "hexagon"];
const UNTYPED = Object.freeze({ colour: "#9aa3b2", shape: "circle" });
const assigned = new Map();

export function styleOf(type) {
  if (!type) return UNTYPED;
  let style = assigned.get(type);
  if (!style) {
    const i = assigned.size;
    style = Object.freeze({ colour: COLOURS[i % COLOURS.length], shape: SHAPES[(i + Math.floor(i / COLOURS.length)) % SHAPES.length] });
    assigned.set(type, style);
  }
  return style;
}

// Add one node's outline to the current path (the caller fills all of a style's nodes at once).
export function traceShape(c, shape, x, y, r) {
  switch (shape) {
    case "square":
      c.moveTo(x - r, y - r);
      c.rect(x - r * 0.9, y - r * 0.9, r * 1.8, r * 1.8);
      break;
    case "triangle":
      c.moveTo(x, y - r * 1.15);
      c.lineTo(x + r, y + r * 0.75);
      c.lineTo(x - r, y + r * 0.75);
      c.closePath();
      break;
    case "diamond":
      c.moveTo(x, y - r * 1.2);
      c.lineTo(x + r * 1.2, y);
      c.lineTo(x, y + r * 1.2);
      c.lineTo(x - r * 1.2, y);
      c.closePath();
      break;
    case "hexagon":
      for (let i = 0; i < 6; i += 1) {
        const a = (Math.PI / 3) * i;
        const px = x + r * 1.05 * Math.cos(a);
        const py = y + r * 1.05 * Math.sin(a);
        if (i === 0) c.moveTo(px, py);
        else c.lineTo(px, py);
      }
      c.closePath();
      break;
    default:
      c.moveTo(x + r, y);
      c.arc(x, y, r, 0, 2 * Math.PI);
  }
}

// A small canvas showing a style, for the legend.
export function swatch(style) {
  const ratio = window.devicePixelRatio || 1;
  const canvas = document.createElement("canvas");
  canvas.width = 14 * ratio;
  canvas.height = 14 * ratio;
  canvas.style.width = "14px";
  canvas.style.height = "14px";
  const c = canvas.getContext("2d");
  c.scale(ratio, ratio);
  c.fillStyle = style.colour;
  c.beginPath();
  traceShape(c, style.shape, 7, 7, 5);
  c.fill();
  return canvas;
}

// Community colours for the report overlay: a separate, muted wheel.
export function communityColour(index) {
  const hue = (index * 137.508) % 360;
  return `hsl(${hue.toFixed(0)}, 65%, 45%)`;
}
