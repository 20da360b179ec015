// Just enough of the DOM for md.js and diff.js under node: elements, text nodes and
// fragments with append, attributes, classes and text. Installed as globalThis.document.

class Node {
  constructor() {
    this.childNodes = [];
    this.parentNode = null;
  }

  append(...nodes) {
    for (const n of nodes) {
      const node = typeof n === 'string' ? new Text(n) : n;
      if (node instanceof Fragment) {
        for (const c of [...node.childNodes]) this.append(c);
        node.childNodes = [];
        continue;
      }
      node.parentNode = this;
      this.childNodes.push(node);
    }
  }

  get firstChild() {
    return this.childNodes[0] || null;
  }

  get lastChild() {
    return this.childNodes[this.childNodes.length - 1] || null;
  }

  get textContent() {
    return this.childNodes.map((c) => c.textContent).join('');
  }

  set textContent(v) {
    this.childNodes = [];
    if (v) this.append(String(v));
  }

  remove() {
    if (!this.parentNode) return;
    const list = this.parentNode.childNodes;
    list.splice(list.indexOf(this), 1);
    this.parentNode = null;
  }
}

class Text extends Node {
  constructor(data) {
    super();
    this.data = data;
  }

  get textContent() {
    return this.data;
  }
}

class Fragment extends Node {}

class Element extends Node {
  constructor(tag) {
    super();
    this.tagName = tag.toUpperCase();
    this.attributes = {};
    this.dataset = {};
    this.id = '';
    const classes = new Set();
    this.classList = { add: (c) => classes.add(c), remove: (c) => classes.delete(c), contains: (c) => classes.has(c), toString: () => [...classes].join(' ') };
    this.style = { setProperty() {} };
  }

  set className(v) {
    for (const c of String(v).split(/\s+/).filter(Boolean)) this.classList.add(c);
  }

  get className() {
    return this.classList.toString();
  }

  setAttribute(k, v) {
    this.attributes[k] = String(v);
  }

  getAttribute(k) {
    return this.attributes[k] ?? null;
  }

  addEventListener() {}

  /** Elements below this one with tag `tag` (lower case), depth first. */
  all(tag) {
    const out = [];
    const walk = (n) => {
      for (const c of n.childNodes) {
        if (c instanceof Element) {
          if (c.tagName === tag.toUpperCase()) out.push(c);
          walk(c);
        }
      }
    };
    walk(this);
    return out;
  }
}

globalThis.Node = Node;
globalThis.document = {
  createElement: (tag) => new Element(tag),
  createTextNode: (data) => new Text(data),
  createDocumentFragment: () => new Fragment(),
};

/** A container holding `node` (a fragment's children), to query. */
export function wrap(node) {
  const div = new Element('div');
  div.append(node);
  return div;
}
