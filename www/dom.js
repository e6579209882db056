// The page's one way of making DOM: elements from a tag, properties and children, where every
// string child becomes a Text node. Nothing in the page assigns innerHTML, so text from a
// conversation can never become markup.

/**
 * `h("p", { class: "hint" }, "Saved ", h("strong", {}, "3"), " results")`. Properties: `class`,
 * `text`, `dataset`, `style` (an object of CSS properties), `on<event>` listeners, and any
 * other attribute (true: present, false/null/undefined: absent).
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style") for (const [name, v] of Object.entries(value)) el.style.setProperty(name, v);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children (nodes, strings as text, nested arrays; null and false skipped). */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** 12345 as "12,345". */
export const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en") : String(n));

/** A share as a percentage with at most one decimal: "163%", "4.2%". */
export const pct = (part, whole) => {
  if (!whole) return "–";
  const p = (100 * part) / whole;
  return `${p >= 10 ? Math.round(p) : p.toFixed(1)}%`;
};
