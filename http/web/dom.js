// Tiny DOM helpers. Everything the page shows is built with createElement and text
// nodes; nothing from the server is ever parsed as HTML.

/**
 * h('div.cls#id', {attrs}, ...children): children are nodes, strings or arrays.
 * Typed loosely (`any`): the element's kind is in the spec string, which the type
 * checker cannot read; the wire shapes the page sends and reads are what it checks.
 * @param {string} spec
 * @param {any} [attrs]
 * @param {...any} children
 * @returns {any}
 */
export function h(spec, attrs, ...children) {
  const m = /^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i.exec(spec) || [];
  const el = document.createElement(m[1] || 'div');
  for (const part of (m[2] || '').match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** Appends nodes, strings (as text) and nested arrays. */
export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** "3s", "5m", "2h", "4d" ago. */
export function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 5) return 'now';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

export function clock(ms) {
  if (!ms) return '';
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** Pretty JSON for cards, bounded so a huge tool output cannot freeze the tab. */
export function json(v, max = 20000) {
  let s = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  if (s === undefined) s = String(v);
  return s.length > max ? s.slice(0, max) + `\n… (${s.length - max} more characters)` : s;
}

/**
 * Re-renders `container` with `render()` without losing keyboard focus: the focused
 * element inside it is found again afterwards by its data-id, data-task or text.
 */
export function keepFocus(container, render) {
  const active = /** @type {HTMLElement | null} */ (document.activeElement);
  const inside = active && active !== container && container.contains(active);
  const key = inside ? (active.dataset.id || active.dataset.task || active.textContent) : null;
  const tag = inside ? active.tagName : null;
  render();
  if (!inside) return;
  for (const el of /** @type {NodeListOf<HTMLElement>} */ (container.querySelectorAll(tag))) {
    if ((el.dataset.id || el.dataset.task || el.textContent) === key) {
      el.focus();
      return;
    }
  }
}
