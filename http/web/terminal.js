// A session's "Terminal" panel: its owner's shells in the session's working directory
// (`terminal.open`), one tab each, drawn by xterm.js (loaded the first time a panel
// opens) on the terminal's own socket, `/ws/terminals/{id}`. The server keeps each
// terminal's last output, so a tab that reconnects, or a page opened later, shows the
// scrollback; the terminal runs on while the panel is closed, until it is closed here,
// its shell exits, or nobody watched it for the server's idle time.
//
// xterm.js styles its rows with <style> elements, which the page's policy blocks (no
// inline styles); `constructedStyles` turns them into constructed style sheets.

import { h, clear } from './dom.js';

/**
 * @typedef {{terminalId: string, sessionId: string, shell: string, cwd: string,
 *   cols: number, rows: number, clients: number, createdAt: number}} TerminalInfo
 */

/** @type {Promise<{Terminal: any, FitAddon: any}> | null} */
let xterm = null;

/** xterm.js and its fit addon, loaded once, with their style sheet. */
function loadXterm() {
  if (!xterm) {
    constructedStyles();
    document.head.append(h('link', { rel: 'stylesheet', href: '/assets/xterm.css' }));
    // Paths in variables: the type checker does not follow them into the library.
    const lib = '/assets/xterm.mjs';
    const fit = '/assets/addon-fit.mjs';
    xterm = Promise.all([import(lib), import(fit)]).then(([x, f]) => ({ Terminal: x.Terminal, FitAddon: f.FitAddon }));
  }
  return xterm;
}

/**
 * xterm.js styles its rows with <style> elements, which the page's policy forbids (no
 * inline styles: the browser would block them). Once terminals are used, a <style>
 * made by script is a hidden <span> whose text is applied as a constructed style sheet
 * (CSSOM, which the policy allows) and leaves with it. The page's own code never makes
 * a <style>; markup can still not bring one.
 */
function constructedStyles() {
  const make = document.createElement.bind(document);
  /** @type {any} */ (document).createElement = (/** @type {string} */ name, /** @type {any} */ options) => {
    if (String(name).toLowerCase() !== 'style') return make(name, options);
    const el = make('span', options);
    el.hidden = true;
    el.className = 'constructed-style';
    const sheet = new CSSStyleSheet();
    let text = '';
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    Object.defineProperty(el, 'textContent', {
      get: () => text,
      set: (v) => { text = String(v ?? ''); sheet.replaceSync(text); },
    });
    el.remove = () => {
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
      Element.prototype.remove.call(el);
    };
    return el;
  };
}

/** One terminal: its tab, its screen and its socket. */
class TermTab {
  /**
   * @param {TerminalPanel} panel
   * @param {TerminalInfo} info
   * @param {number} n its number in the panel, for its name
   */
  constructor(panel, info, n) {
    this.panel = panel;
    this.info = info;
    this.id = info.terminalId;
    this.name = `Shell ${n}`;
    this.screen = h('div.term-screen', { id: `term-${this.id}`, role: 'region', 'aria-label': this.name, dataset: { terminal: this.id }, hidden: true });
    this.tab = h('button.term-tab', { type: 'button', 'aria-pressed': 'false', 'aria-controls': `term-${this.id}`, onclick: () => panel.select(this) }, this.name);
    this.closeBtn = h('button.btn.tiny.term-close', { type: 'button', 'aria-label': `Close ${this.name}`, title: 'End this shell and all it started', onclick: () => panel.close(this) }, '✕');
    this.tabEl = h('span.term-tab-wrap', this.tab, this.closeBtn);
    /** @type {WebSocket | null} */
    this.ws = null;
    /** The shell ended (or was closed): no reconnecting. */
    this.ended = false;
    /** Reconnect attempts since the last open socket. */
    this.retries = 0;
    this.term = null;
    this.fit = null;
    this.resizeWatch = null;
  }

  /** Draws the terminal and connects its socket. @param {{Terminal: any, FitAddon: any}} x */
  start(x) {
    this.term = new x.Terminal({ cursorBlink: true, scrollback: 10000, fontSize: 13, fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', convertEol: false });
    this.fit = new x.FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.screen);
    const encoder = new TextEncoder();
    this.term.onData((/** @type {string} */ d) => this.send(encoder.encode(d)));
    // Mouse reports and other raw bytes come as a "binary" string, one byte a char.
    this.term.onBinary((/** @type {string} */ d) => this.send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
    this.term.onResize((/** @type {{cols: number, rows: number}} */ s) => this.sendSize(s.cols, s.rows));
    // Ctrl+Shift+C / Ctrl+Shift+V copy and paste (Ctrl+C is the shell's interrupt).
    this.term.attachCustomKeyEventHandler((/** @type {KeyboardEvent} */ e) => {
      if (e.type !== 'keydown' || !e.ctrlKey || !e.shiftKey) return true;
      if (e.code === 'KeyC') {
        const text = this.term.getSelection();
        if (text) navigator.clipboard?.writeText(text).catch(() => {});
        return false;
      }
      if (e.code === 'KeyV') {
        navigator.clipboard?.readText().then((t) => this.term.paste(t)).catch(() => {});
        return false;
      }
      return true;
    });
    this.resizeWatch = new ResizeObserver(() => this.refit());
    this.resizeWatch.observe(this.screen);
    this.connect();
  }

  /** Fits the terminal to its screen, when the screen shows. */
  refit() {
    if (!this.fit || this.screen.hidden || !this.screen.clientWidth) return;
    try { this.fit.fit(); } catch { /* not measurable yet */ }
  }

  connect() {
    if (this.ended) return;
    const conn = this.panel.app.conn;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = conn.token ? `?token=${encodeURIComponent(conn.token)}` : '';
    const ws = new WebSocket(`${proto}//${location.host}/ws/terminals/${encodeURIComponent(this.id)}${q}`);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => {
      this.retries = 0;
      // What comes first is all the server kept: start from a clean screen so a
      // reconnect does not show it twice.
      this.term.reset();
      this.sendSize(this.term.cols, this.term.rows);
    };
    ws.onmessage = (e) => {
      if (typeof e.data !== 'string') {
        this.term.write(new Uint8Array(e.data));
        return;
      }
      let c;
      try { c = JSON.parse(e.data); } catch { return; }
      if (c.type === 'exit') this.exited(c.reason, c.exitCode);
      else if (c.type === 'error') this.panel.note(c.message);
    };
    ws.onclose = () => {
      if (this.ws !== ws || this.ended) return;
      this.ws = null;
      // Dropped (a network blip, fell behind): back, with the kept output. A terminal
      // that is gone answers 404; the panel's list then drops it.
      this.retries += 1;
      if (this.retries > 5) {
        this.panel.load();
        return;
      }
      setTimeout(() => this.connect(), Math.min(200 * 2 ** this.retries, 5000));
    };
  }

  /** @param {Uint8Array} bytes */
  send(bytes) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(bytes);
  }

  /** @param {number} cols @param {number} rows */
  sendSize(cols, rows) {
    if (this.ws?.readyState === WebSocket.OPEN && cols > 0 && rows > 0) {
      this.ws.send(JSON.stringify({ type: 'resize', cols: Math.min(cols, 1000), rows: Math.min(rows, 500) }));
    }
  }

  /**
   * The shell ended: the screen stays, with a line saying how.
   * @param {string} reason @param {number | undefined} code
   */
  exited(reason, code) {
    this.ended = true;
    const how = code === undefined ? reason : `${reason} (exit ${code})`;
    this.term.write(`\r\n\x1b[2m[${how}]\x1b[0m\r\n`);
    this.tab.classList.add('ended');
    this.closeBtn.setAttribute('aria-label', `Remove ${this.name}`);
  }

  show(on) {
    this.screen.hidden = !on;
    this.tab.setAttribute('aria-pressed', String(on));
    if (on) {
      requestAnimationFrame(() => { this.refit(); this.term?.focus(); });
    }
  }

  dispose() {
    this.ended = true;
    const ws = this.ws;
    this.ws = null;
    ws?.close();
    this.resizeWatch?.disconnect();
    this.term?.dispose();
    this.tabEl.remove();
    this.screen.remove();
  }
}

export class TerminalPanel {
  /** @param {import('./chat.js').ChatView} view */
  constructor(view) {
    this.view = view;
    this.app = view.app;
    /** @type {TermTab[]} */
    this.tabs = [];
    /** @type {TermTab | null} */
    this.active = null;
    this.opened = 0;
    const headId = `terminal-head-${view.id}`;
    this.tabList = h('div.term-tabs', { role: 'group', 'aria-label': 'Terminals' });
    this.newBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.open() }, 'New terminal');
    this.statusEl = h('p.ws-status', { role: 'status' });
    this.screens = h('div.term-screens');
    this.el = h('section.ws-panel.terminals', { id: `terminal-${view.id}`, 'aria-labelledby': headId },
      h('div.panel-head', h('h3', { id: headId }, 'Terminal'),
        h('button.btn.tiny', { type: 'button', 'aria-label': 'Close the terminal panel', onclick: () => view.showPanel(null) }, '✕')),
      h('div.term-bar', this.tabList, this.newBtn), this.statusEl, this.screens);
  }

  /** @param {string} text */
  note(text) {
    this.statusEl.textContent = text;
  }

  /** Shows the session's terminals (opening one when it has none). */
  async load() {
    let listed;
    try {
      listed = /** @type {{terminals: TerminalInfo[]}} */ (await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.view.id)}/terminals`)).terminals;
    } catch (e) {
      this.note(`Cannot list the terminals: ${e.message}`);
      return;
    }
    const x = await loadXterm();
    const ids = new Set(listed.map((t) => t.terminalId));
    for (const tab of this.tabs.filter((t) => !ids.has(t.id) && !t.ended)) this.drop(tab);
    for (const info of listed) {
      if (!this.tabs.some((t) => t.id === info.terminalId)) this.add(x, info);
    }
    if (!this.tabs.length) await this.open();
    else this.select(this.active && this.tabs.includes(this.active) ? this.active : this.tabs[this.tabs.length - 1]);
  }

  /** Opens a new terminal and shows it. */
  async open() {
    this.newBtn.disabled = true;
    try {
      const info = /** @type {TerminalInfo} */ (await this.app.conn.rest('POST', `/sessions/${encodeURIComponent(this.view.id)}/terminals`, { cols: 80, rows: 24 }));
      this.note('');
      this.select(this.add(await loadXterm(), info));
    } catch (e) {
      this.note(`Cannot open a terminal: ${e.message}`);
    } finally {
      this.newBtn.disabled = false;
    }
  }

  /** @param {{Terminal: any, FitAddon: any}} x @param {TerminalInfo} info */
  add(x, info) {
    this.opened += 1;
    const tab = new TermTab(this, info, this.opened);
    this.tabs.push(tab);
    this.tabList.append(tab.tabEl);
    this.screens.append(tab.screen);
    tab.start(x);
    return tab;
  }

  /** @param {TermTab} tab */
  select(tab) {
    this.active = tab;
    for (const t of this.tabs) t.show(t === tab);
  }

  /** Ends a terminal (the server kills all it started) and removes its tab. @param {TermTab} tab */
  async close(tab) {
    if (!tab.ended) {
      try {
        await this.app.conn.rest('DELETE', `/sessions/${encodeURIComponent(this.view.id)}/terminals/${encodeURIComponent(tab.id)}`);
      } catch (e) {
        if (e.status !== 404) {
          this.note(`Cannot close it: ${e.message}`);
          return;
        }
      }
    }
    this.drop(tab);
    if (this.active === tab) {
      this.active = null;
      if (this.tabs.length) this.select(this.tabs[this.tabs.length - 1]);
    }
  }

  /** @param {TermTab} tab */
  drop(tab) {
    tab.dispose();
    this.tabs = this.tabs.filter((t) => t !== tab);
  }

  /** The conversation's view goes: sockets close (the terminals run on). */
  destroy() {
    for (const t of this.tabs) {
      t.ended = true;
      t.ws?.close();
      t.resizeWatch?.disconnect();
      t.term?.dispose();
    }
    this.tabs = [];
    clear(this.tabList);
    clear(this.screens);
  }
}
