// A worktree's scripts (`setup`, `run` and `archive` in `.tandem/worktree.toml`), as
// the page shows them: `script` events in the conversation, one line per script that
// follows it to its end (a setup reports its output every few seconds: that is one
// line, not fifty), and in the Changes panel the worktree's port, Run and Stop for
// the run script, and its log (`session.run-log`). The words and the folding are pure
// functions (tested under node), so the conversation and the panel say the same thing.

import { h, clear } from './dom.js';

/**
 * @typedef {import('./wire.js').ScriptName} ScriptName
 * @typedef {import('./wire.js').ScriptStatus} ScriptStatus
 * @typedef {import('./wire.js').SessionRunLogResult} SessionRunLogResult
 * @typedef {{name: ScriptName, status: ScriptStatus, exitCode?: number | null, logTail: string}} ScriptReport
 *   what a `script` event says
 * @typedef {{running: boolean, status?: ScriptStatus | null, exitCode?: number | null}} RunState
 *   where the run script is: running, or how its last run ended
 */

/** How often an open Run log is read again while the run goes: no event carries its output. */
const LOG_REFRESH_MS = 2000;

const NAMES = { setup: 'Setup', run: 'Run script', archive: 'Archive script' };

/** What a running script's line says: its output follows in the line's details. */
const RUNNING = { setup: 'Setting up the worktree…', run: 'Run script started', archive: 'Running the archive script…' };

/** A mark and a word per status: the word is always shown, so colour is never alone. */
const STATUS = {
  running: ['▶', 'running'], passed: ['✓', 'passed'], failed: ['✗', 'failed'], timedOut: ['⏱', 'timed out'], stopped: ['■', 'stopped'],
};

/** "Setup", "Run script", "Archive script" (an unknown name as it came). @param {ScriptName} name */
export function scriptTitle(name) {
  return NAMES[name] || name;
}

/** "passed", "failed", "timed out", "stopped", "running". @param {ScriptStatus} status */
export function statusWord(status) {
  return STATUS[status]?.[1] || status;
}

/** "✓", "✗", "⏱", "■", "▶" ("?" for an unknown status). @param {ScriptStatus} status */
export function statusMark(status) {
  return STATUS[status]?.[0] || '?';
}

/** " (exit 4)", or nothing when the script was killed or did not start. @param {{exitCode?: number | null}} s */
const exitText = (s) => (s.exitCode != null ? ` (exit ${s.exitCode})` : '');

/**
 * The conversation's line for a `script` event: "Setting up the worktree…" while a
 * setup runs, "✓ Setup passed (exit 0)", "✗ Setup failed (exit 4)", "■ Run script
 * stopped" once it ended.
 * @param {ScriptReport} s
 */
export function scriptLineText(s) {
  if (s.status === 'running') return RUNNING[s.name] || `${scriptTitle(s.name)} running…`;
  return `${statusMark(s.status)} ${scriptTitle(s.name)} ${statusWord(s.status)}${exitText(s)}`;
}

/**
 * Whether script event `next` takes the place of the line showing `shown`, the
 * newest line of a script of that name: a line follows its script until it ends
 * (a turn sent during a setup comes between its events), and consecutive events of
 * one script are one line (a run started and stopped over and over).
 * @param {ScriptReport} shown
 * @param {ScriptReport} next
 * @param {boolean} adjacent whether nothing was shown after `shown`
 */
export function foldsInto(shown, next, adjacent) {
  return shown.name === next.name && (adjacent || shown.status === 'running');
}

/**
 * The items a conversation shows for `items` (history events and others): each
 * script's line is its latest event, in the place of its first.
 * @template T
 * @param {(T | ({kind: 'script'} & ScriptReport))[]} items
 */
export function collapseScripts(items) {
  /** @type {typeof items} */
  const out = [];
  /** Where the newest line of each script is in `out`. @type {Map<string, number>} */
  const lines = new Map();
  for (const it of items) {
    const s = /** @type {any} */ (it);
    if (s?.kind !== 'script') {
      out.push(it);
      continue;
    }
    const at = lines.get(s.name);
    if (at !== undefined && foldsInto(/** @type {any} */ (out[at]), s, at === out.length - 1)) {
      out[at] = it;
      continue;
    }
    lines.set(s.name, out.length);
    out.push(it);
  }
  return out;
}

/**
 * The conversation's line for a `script` event, its output folded away under it.
 * @param {ScriptReport} s
 * @param {boolean} [open] whether the output shows (a line redrawn keeps it so)
 */
export function scriptLine(s, open = false) {
  const text = scriptLineText(s);
  const attrs = { dataset: { script: s.name } };
  const cls = `div.line-event.script.st-${s.status}`;
  return s.logTail
    ? h(cls, attrs, h('details.script-log', { open }, h('summary', text), h('pre.script-out', s.logTail)))
    : h(cls, attrs, text);
}

/**
 * Redraws a script's line in place for a newer event of it: its output stays open
 * if it was, and the focus stays on it.
 * @param {HTMLElement} el
 * @param {ScriptReport} s
 */
export function updateScriptLine(el, s) {
  const open = !!(/** @type {HTMLDetailsElement | null} */ (el.querySelector('details'))?.open);
  const focused = el.contains(document.activeElement);
  const next = scriptLine(s, open);
  // Only the status class changes: others (a rewound branch's) stay.
  for (const c of [...el.classList]) if (c.startsWith('st-')) el.classList.remove(c);
  el.classList.add(`st-${s.status}`);
  clear(el).append(...next.childNodes);
  if (focused) /** @type {HTMLElement | null} */ (el.querySelector('summary'))?.focus();
}

/** "Port 41000" for a worktree's port; empty without one. @param {number | null | undefined} port */
export function portText(port) {
  return port != null ? `Port ${port}` : '';
}

/**
 * Where the run script is, in words: "Running", "Not started", "Stopped", "Ended:
 * failed (exit 1)".
 * @param {RunState} r
 */
export function runStateText(r) {
  if (r.running) return 'Running';
  if (!r.status) return 'Not started';
  if (r.status === 'stopped') return 'Stopped';
  return `Ended: ${statusWord(r.status)}${exitText(r)}`;
}

/**
 * The run script of one session's Changes panel: the worktree's port, Run and Stop,
 * what the run is doing, and its log, read when opened and again as the run goes.
 */
export class RunScript {
  /**
   * @param {object} deps
   * @param {string} deps.sessionId
   * @param {import('./conn.js').Conn} deps.conn
   * @param {() => number | null | undefined} deps.port the worktree's port, if it has one
   */
  constructor({ sessionId, conn, port }) {
    this.sessionId = sessionId;
    this.conn = conn;
    this.port = port;
    /** What is known of the run; null until first read. @type {RunState | null} */
    this.state = null;
    /** A Run or Stop is on its way (a second press would only repeat it). */
    this.pending = false;
    /** Bumped by each read and each event, so an older answer never overwrites newer news. */
    this.reads = 0;
    this.timer = undefined;
    /** The log text shown, so an unchanged log is not written again. @type {string | null} */
    this.shownLog = null;
    const headId = `run-head-${sessionId}`;
    this.portEl = h('p.ws-port');
    this.runBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.start() }, 'Run');
    this.stopBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.stop() }, 'Stop');
    this.stateEl = h('p.run-state', { role: 'status' });
    this.errorEl = h('p.error-text.run-error', { role: 'alert' });
    this.logStateEl = h('p.run-log-state');
    this.droppedEl = h('p.run-dropped', { hidden: true }, '(earlier output dropped)');
    // Focusable: a long log scrolls, and a keyboard must be able to scroll it.
    this.logEl = h('pre.run-out', { tabindex: '0' });
    this.logBox = /** @type {HTMLDetailsElement} */ (h('details.run-log', { ontoggle: () => this.toggled() },
      h('summary', 'Run log'), this.logStateEl, this.droppedEl, this.logEl));
    this.el = h('section.ws-run', { 'aria-labelledby': headId },
      h('h4', { id: headId }, 'Run script'), this.portEl,
      h('div.row', this.runBtn, this.stopBtn, this.stateEl), this.errorEl, this.logBox);
    this.render();
  }

  render() {
    const port = portText(this.port());
    this.portEl.textContent = port;
    this.portEl.hidden = !port;
    const s = this.state;
    this.stateEl.textContent = s ? runStateText(s) : '';
    // Off while it cannot act, but not `disabled`: that would drop the focus.
    this.runBtn.setAttribute('aria-disabled', String(this.pending || !!s?.running));
    this.stopBtn.setAttribute('aria-disabled', String(this.pending || (!!s && !s.running)));
  }

  /** Reads where the run is, and its log: as the panel opens. */
  load() {
    return this.read();
  }

  async start() {
    if (this.pending || this.state?.running) return;
    await this.act('session.run', 'Not started');
  }

  async stop() {
    if (this.pending || (this.state && !this.state.running)) return;
    await this.act('session.run-stop', 'Not stopped');
  }

  /**
   * Sends Run or Stop; a refusal (a repository without a run script: 422) shows.
   * @param {'session.run' | 'session.run-stop'} type
   * @param {string} refused
   */
  async act(type, refused) {
    this.pending = true;
    this.errorEl.textContent = '';
    this.render();
    try {
      const r = await this.conn.request(type, { sessionId: this.sessionId });
      this.state = { ...this.state, running: r.running };
    } catch (e) {
      this.errorEl.textContent = `${refused}: ${/** @type {Error} */ (e).message}`;
    } finally {
      this.pending = false;
      this.render();
    }
    // How a stopped run ended, and what it wrote.
    await this.read();
  }

  /**
   * A `script` event of the run script: the state follows it, and an open log is
   * read again.
   * @param {ScriptReport} s
   */
  onEvent(s) {
    this.reads++;
    this.state = s.status === 'running' ? { running: true } : { running: false, status: s.status, exitCode: s.exitCode };
    this.render();
    if (this.logBox.open) this.read();
  }

  toggled() {
    if (this.logBox.open) this.read();
    else clearTimeout(this.timer);
  }

  /** Reads `session.run-log`: where the run is, and its log. */
  async read() {
    clearTimeout(this.timer);
    const n = ++this.reads;
    let r;
    try {
      r = await this.conn.request('session.run-log', { sessionId: this.sessionId });
    } catch (e) {
      if (n === this.reads) this.logStateEl.textContent = `The log could not be read: ${/** @type {Error} */ (e).message}`;
      return;
    }
    if (n !== this.reads) return;
    this.state = { running: r.running, status: r.status, exitCode: r.exitCode };
    this.render();
    this.showLog(r);
    // The output of a running script comes with no event: read it again while shown.
    if (r.running && this.logBox.open && this.el.isConnected) this.timer = setTimeout(() => this.read(), LOG_REFRESH_MS);
  }

  /** @param {SessionRunLogResult} r */
  showLog(r) {
    this.logStateEl.textContent = runStateText(r);
    this.droppedEl.hidden = !(r.droppedBytes > 0);
    if (this.shownLog === r.log) return;
    // A reader at the end follows the output; one scrolled back stays where they are.
    const atEnd = this.logEl.scrollHeight - this.logEl.scrollTop - this.logEl.clientHeight < 8;
    this.shownLog = r.log;
    this.logEl.textContent = r.log || '(no output)';
    if (atEnd) this.logEl.scrollTop = this.logEl.scrollHeight;
  }
}
