// One session's conversation: a bounded window of rendered events over the session's
// full history. The newest part comes over the WebSocket subscription; older parts are
// paged in through REST when the reader scrolls up. At most MAX_ITEMS items are in the
// DOM, so a session with 100,000 events costs the tab no more than one with 1,000.

import { h, clear, clock, json, ago } from './dom.js';
import { renderMarkdown } from './md.js';
import { changeEdits, diffView } from './diff.js';
import { formatUsage, statusText, shownStatus } from './store.js';
import { formDialog, vendorPicker, localToRfc3339, toLocalInput } from './dialogs.js';
import { Rewinds, forkedText } from './rewind.js';

/** @typedef {import('./wire.js').HistoryEvent} HistoryEvent */
import { ComposerAttachments, attachmentsView } from './attach.js';
import { ChangesPanel, summaryOf, summaryText } from './changes.js';
import { checkLine, checksSummaryText } from './checks.js';
import { scriptLine, updateScriptLine, foldsInto } from './scripts.js';
import { FilesPanel } from './files.js';
import { TerminalPanel } from './terminal.js';
import { importedText } from './machine.js';
import { onLimitSetting, fillOnLimit, openLoop, stopLoop, workerApprovalsSelect } from './controls.js';
import { reviewCard } from './review.js';
import { Overlaps, overlapLineText, rebasedLineText } from './overlaps.js';

/** Permission modes a session can be in (`session.configure`). */
const PERMISSION_MODES = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];

/** Events replayed when a session is opened, and per REST page when scrolling up. */
export const PAGE = 400;
/** Rendered items kept in the DOM; the rest is dropped and re-paged on demand. */
export const MAX_ITEMS = 1200;
/** Above this, text is shown as plain text instead of Markdown (keeps big outputs fast). */
const MARKDOWN_LIMIT = 100000;

export class ChatView {
  /**
   * @param {import('./app.js').App} app
   * @param {string} sessionId
   * @param {{back?: boolean}} [opts]
   */
  constructor(app, sessionId, opts = {}) {
    this.app = app;
    this.id = sessionId;
    this.opts = opts;
    const info = app.sessions.get(sessionId);
    const start = Math.max(0, (info?.lastSeq || 0) - PAGE);
    /** Highest seq received (rendered, or passed over while scrolled back). */
    this.tip = start;
    /** Lowest seq in the window; older ones come from REST. */
    this.first = start + 1;
    /** The newest seq rendered at the live edge: what the page reports seen. */
    this.shownSeq = 0;
    this.liveEdge = true;
    this.items = [];
    this.cards = new Map();
    this.proposals = new Map();
    this.perms = new Map();
    /** Permission requests known to be settled (their card may be paged in later). */
    this.settled = new Set();
    this.bg = info?.backgroundTasks || [];
    /** The seq the server had when this view last subscribed: events up to it are
     * replays (no notifications for them). */
    this.subscribedAt = Infinity;
    /** The session's usage (`GET .../usage`), once read. @type {import('./wire.js').UsageSummary | null} */
    this.usage = null;
    /** Delegation lines waiting for the Worker's turn cost. @type {{el: HTMLElement, to: string, ts: number}[]} */
    this.costLines = [];
    /** @type {import('./wire.js').ScheduleInfo[]} */
    this.schedules = [];
    /** History lines of due schedules, by schedule id. @type {Map<string, HTMLElement>} */
    this.scheduleLines = new Map();
    /** Streaming items with text not yet written to the DOM (see `flush`). */
    this.dirty = new Set();
    this.loading = false;
    /** Counters the browser tests read: duplicates dropped, gaps seen, events applied. */
    this.stats = { dups: 0, gaps: 0, applied: 0, subscribes: 0, pendingShown: 0 };
    /** Edit and Fork actions, checkpoints and restores, collapsed branches (`rewind.js`). */
    this.rewinds = new Rewinds({
      sessionId,
      request: (method, params) => app.conn.request(/** @type {any} */ (method), /** @type {any} */ (params)),
      note: (text, kind) => this.note(text, kind),
      busy: () => this.busy,
      title: () => this.info.title || this.id,
      open: (session) => app.openNew(session),
    });
    this.rewinds.learn(info?.superseded);
    this.build();
    this.updateHeader();
    this.unsubscribeQueue = app.store.on('queue', (id) => { if (id === this.id) this.renderQueued(); });
    this.refreshUsage();
    this.refreshSchedules();
    this.refreshCommands();
  }

  /** @returns {import('./wire.js').SessionInfo} */
  get info() {
    return this.app.sessions.get(this.id) || /** @type {any} */ ({ id: this.id, title: this.id, status: 'idle' });
  }

  get busy() {
    const s = this.info.status;
    return s === 'running' || s === 'waiting';
  }

  build() {
    const titleId = `title-${this.id}`;
    this.titleEl = h('h2.chat-title', { id: titleId });
    this.statusEl = h('span.status');
    this.metaEl = h('span.meta');
    this.bgEl = h('div.bg-tasks');
    this.renameBtn = h('button.btn.tiny.rename', { type: 'button', title: 'Rename this session', onclick: () => this.startRename() }, 'Rename');
    this.archiveBtn = h('button.btn.tiny.archive', { type: 'button', title: 'Archive this session', onclick: () => this.app.confirmArchive(this.id) }, 'Archive');
    this.renameInput = h('input.field.rename-input', { type: 'text', 'aria-label': 'Session title', maxlength: 200, onkeydown: (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.endRename();
      }
    } });
    this.renameError = h('span.error-text', { role: 'alert' });
    this.paneEl = h('span.pane-role');
    this.usageEl = h('span.usage-total', { title: 'Tokens and cost of every turn of this session' });
    this.modelSel = this.setting('model', 'Model');
    this.effortSel = this.setting('effort', 'Effort');
    this.modeSel = this.setting('permissionMode', 'Permission mode');
    this.limitSel = onLimitSetting(this);
    this.loopBtn = h('button.btn.tiny', { type: 'button', onclick: () => (this.info.loop ? stopLoop(this) : openLoop(this)) }, 'Loop…');
    this.handoffBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.openHandoff() }, 'Hand off…');
    this.workerBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.openAddWorker() }, 'Add Worker');
    this.besideBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.app.openBeside(this.id) }, 'Open beside…');
    // Phone width: the session's actions and settings fold behind one button.
    this.moreBtn = h('button.btn.tiny.head-more', { type: 'button', 'aria-expanded': 'false', 'aria-controls': `actions-${this.id} settings-${this.id}`, onclick: () => {
      const open = this.el.classList.toggle('head-open');
      this.moreBtn.setAttribute('aria-expanded', String(open));
    } }, 'Actions');
    // The workspace panels: one open at a time, beside the conversation (over it
    // when the pane is narrow). Their names are the words alone; the pane's title
    // says which session they belong to.
    this.changesBtn = h('button.btn.tiny.ws-toggle', { type: 'button', 'aria-expanded': 'false', onclick: () => this.showPanel(this.panel === 'changes' ? null : 'changes') }, 'Changes');
    this.filesBtn = h('button.btn.tiny.ws-toggle', { type: 'button', 'aria-expanded': 'false', onclick: () => this.showPanel(this.panel === 'files' ? null : 'files') }, 'Files');
    this.terminalBtn = h('button.btn.tiny.ws-toggle', { type: 'button', 'aria-expanded': 'false', onclick: () => this.showPanel(this.panel === 'terminal' ? null : 'terminal') }, 'Terminal');
    /** The last `git_state` this view saw (events or the Changes panel's read). @type {import('./wire.js').GitState | null} */
    this.gitState = null;
    /** `git_state` events seen, so a slower REST read does not undo a newer event. */
    this.gitEvents = 0;
    /** What this session shares with sibling worktrees (`overlap` events). */
    this.overlaps = new Overlaps();
    this.gitEl = h('span.ws-summary');
    this.forkedEl = h('span.forked-from', { hidden: true });
    /** Which panel is open. @type {'changes' | 'files' | 'terminal' | null} */
    this.panel = null;
    /** @type {ChangesPanel | null} */
    this.changes = null;
    /** @type {FilesPanel | null} */
    this.files = null;
    /** @type {TerminalPanel | null} */
    this.terminals = null;
    this.panelEl = h('div.ws-slot', { hidden: true });
    this.renameForm = h('form.rename-form', { hidden: true, onsubmit: (e) => { e.preventDefault(); this.saveRename(); } },
      this.renameInput,
      h('button.btn.tiny.primary', { type: 'submit' }, 'Save'),
      h('button.btn.tiny', { type: 'button', onclick: () => this.endRename() }, 'Cancel'),
      this.renameError);
    this.stopBtn = h('button.btn.danger.stop', { type: 'button', title: 'Interrupt the running turn (Esc)', onclick: () => this.interrupt() }, 'Stop');
    this.olderBtn = h('button.btn.link.older', { type: 'button', onclick: () => this.loadOlder() }, 'Load older messages');
    this.sentinel = h('div.sentinel', this.olderBtn);
    this.list = h('div.items');
    this.jumpBtn = h('button.btn.jump', { type: 'button', hidden: true, onclick: () => this.jumpLatest() }, 'Jump to latest ↓');
    this.log = h('div.log', { role: 'log', 'aria-labelledby': titleId, tabindex: '0' }, this.sentinel, this.list);
    this.input = h('textarea.input', {
      rows: 1,
      placeholder: 'Message · Enter to send',
      title: 'Enter sends, Shift+Enter starts a new line, Esc stops the running turn',
      'aria-label': `Message to ${this.info.title || 'session'}`,
      onkeydown: (e) => this.onKey(e),
      oninput: () => { this.autosize(); this.renderCommands(); },
    });
    /** @type {import('./wire.js').VendorCommand[]} the slash commands the agent offers */
    this.commands = [];
    this.commandMenu = h('ul.command-menu', { id: `commands-${this.id}`, role: 'listbox', 'aria-label': 'Slash commands', hidden: true });
    this.sendBtn = h('button.btn.primary.send', { type: 'submit' }, 'Send');
    this.scheduleBtn = h('button.btn.schedule', { type: 'button', onclick: () => this.openSchedule() }, 'Schedule…');
    this.queueEl = h('ul.queued', { 'aria-label': 'Queued messages' });
    this.schedulesEl = h('ul.schedules', { 'aria-label': 'Scheduled messages' });
    this.askEl = h('div.ask-bg', { hidden: true, role: 'group', 'aria-label': 'Background work is running' });
    this.noteEl = h('div.note', { role: 'status' });
    this.attach = new ComposerAttachments(this.app.conn, (text, kind) => this.note(text, kind));
    this.form = h('form.composer', { onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); this.submit(); } },
      this.schedulesEl, this.queueEl, this.askEl, this.noteEl, this.attach.list, this.commandMenu,
      h('div.row', this.input, this.attach.button, this.attach.fileInput, this.scheduleBtn, this.sendBtn, this.stopBtn));
    this.attach.wire(this.input, this.form);
    this.el = h('section.chat', { dataset: { session: this.id }, 'aria-labelledby': titleId },
      h('header.chat-head',
        h('div.line', this.opts.back ? h('a.btn.link.back', { href: '#/' }, '← Sessions') : null, this.paneEl, this.titleEl, this.renameForm, this.statusEl,
          this.moreBtn,
          h('span.head-actions', { id: `actions-${this.id}` }, this.changesBtn, this.filesBtn, this.terminalBtn, this.loopBtn, this.handoffBtn, this.workerBtn, this.besideBtn, this.renameBtn, this.archiveBtn)),
        h('div.line.sub', this.metaEl, this.forkedEl, this.gitEl, this.usageEl, this.bgEl),
        h('div.line.settings', { id: `settings-${this.id}` }, this.modelSel.wrap, this.effortSel.wrap, this.modeSel.wrap, this.limitSel.wrap)),
      h('div.chat-body', h('div.log-wrap', this.log, this.jumpBtn), this.panelEl),
      this.form);
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.loadOlder();
    }, { root: this.log, rootMargin: '200px 0px 0px 0px' });
    this.observer.observe(this.sentinel);
    this.updateOlder();
  }

  destroy() {
    this.files?.destroy();
    this.terminals?.destroy();
    this.observer.disconnect();
    this.unsubscribeQueue();
    clearTimeout(this.usageTimer);
    clearTimeout(this.queueTimer);
    this.el.remove();
  }

  /**
   * Where this view sits: alone (null), a Driver's pane or one of its Workers'
   * (`name`, the Worker's name: beside other Workers it tells them apart), or the
   * left or right of two sessions opened side by side. The pane's header says so.
   * @param {'driver' | 'worker' | 'left' | 'right' | null} kind
   * @param {string} [name]
   */
  setPane(kind, name) {
    this.el.classList.remove('pane', 'driver', 'worker', 'left', 'right');
    if (kind) this.el.classList.add('pane', kind);
    const worker = name ? `Worker · ${name}` : 'Worker';
    const label = { driver: 'Driver', worker, left: '', right: '' }[kind || 'left'] || '';
    this.paneEl.className = `pane-role${label ? ` badge role-${kind}` : ''}`;
    this.paneEl.textContent = label;
    this.paneEl.hidden = !label;
    this.updateHeader();
  }

  // ---- workspace panels: Changes, Files and Terminal -----------------------------

  /**
   * Opens the Changes, Files or Terminal panel (made on first use, read fresh on each
   * opening), or closes the open one (`null`). Focus goes to the panel's heading
   * area when it opens (the shell, for the terminal), and back to its button when it
   * closes.
   * @param {'changes' | 'files' | 'terminal' | null} which
   */
  showPanel(which) {
    const was = this.panel;
    this.panel = which;
    const toggles = /** @type {[HTMLElement, string][]} */ ([[this.changesBtn, 'changes'], [this.filesBtn, 'files'], [this.terminalBtn, 'terminal']]);
    for (const [btn, name] of toggles) {
      btn.setAttribute('aria-expanded', String(which === name));
      // Names the panel only while it is in the page.
      if (which === name) btn.setAttribute('aria-controls', `${name}-${this.id}`);
      else btn.removeAttribute('aria-controls');
    }
    this.el.classList.toggle('with-panel', !!which);
    clear(this.panelEl);
    this.panelEl.hidden = !which;
    if (which === 'changes') {
      if (!this.changes) this.changes = new ChangesPanel(this);
      if (this.gitState) this.changes.update(this.gitState);
      this.panelEl.append(this.changes.el);
      this.changes.load();
      this.changes.run.load();
    } else if (which === 'files') {
      if (!this.files) this.files = new FilesPanel(this);
      this.panelEl.append(this.files.el);
      this.files.load();
    } else if (which === 'terminal') {
      this.panelEl.classList.add('for-terminal');
      if (!this.terminals) this.terminals = new TerminalPanel(this);
      this.panelEl.append(this.terminals.el);
      this.terminals.load();
      return;
    }
    this.panelEl.classList.remove('for-terminal');
    if (which) /** @type {HTMLElement | null} */ (this.panelEl.querySelector('.panel-head button'))?.focus();
    else if (was) toggles.find(([, name]) => name === was)?.[0].focus();
  }

  /**
   * Escape inside a panel closes it (and does not reach the page's Escape, which
   * would stop the running turn).
   * @param {KeyboardEvent} e
   */
  panelKey(e) {
    if (e.key !== 'Escape' || e.defaultPrevented) return;
    e.preventDefault();
    this.showPanel(null);
  }

  /** A `git_state` arrived (or was read): the header summary and the open panels follow. @param {import('./wire.js').GitState} state */
  onGitState(state) {
    this.gitState = state;
    this.renderGit();
    if (this.changes && this.panel === 'changes') this.changes.update(state);
    if (this.files && this.panel === 'files') this.files.refreshSoon();
  }

  /** Another session's name as the page shows it. @param {string} id */
  sessionName(id) {
    return this.app.sessions.get(id)?.title || id;
  }

  /**
   * An `overlap` event, live or from a page of history: the Changes panel marks the
   * files while it lasts. @param {Extract<HistoryEvent, {kind: 'overlap'}>} ev
   */
  learnOverlap(ev) {
    if (this.overlaps.seen(ev)) this.changes?.renderOverlaps();
  }

  /** The header's one-line summary of the working directory's changes. */
  renderGit() {
    const s = this.gitState;
    const ws = this.info.workspace;
    const branch = ws?.mode === 'worktree' ? ws.branch : s?.branch;
    const parts = [];
    if (branch) parts.push(branch);
    if (ws?.state === 'discarded') parts.push('discarded');
    else if (s) parts.push(s.files.length ? summaryText(summaryOf(s)) : 'no changes');
    this.gitEl.textContent = parts.join(' · ');
    this.gitEl.title = ws?.mode === 'worktree' ? `Own worktree on ${ws.branch}, from ${ws.base}` : '';
  }

  // ---- settings: model, effort, permission mode ----------------------------------

  /**
   * One labelled select that changes the session with `session.configure`; a refusal
   * is shown next to it and the select goes back to the session's value.
   * @param {'model' | 'effort' | 'permissionMode'} field
   * @param {string} label
   */
  setting(field, label) {
    const select = /** @type {HTMLSelectElement} */ (h('select.field.tiny', { 'aria-label': `${label} of ${this.info.title || this.id}`, name: field }));
    const error = h('span.error-text.setting-error', { role: 'alert' });
    select.addEventListener('change', async () => {
      error.textContent = '';
      select.disabled = true;
      try {
        const r = await this.app.conn.request('session.configure', { sessionId: this.id, [field]: select.value });
        this.app.store.upsertSession(r.session);
      } catch (err) {
        error.textContent = `${label} not changed: ${/** @type {Error} */ (err).message}`;
      } finally {
        select.disabled = false;
        // Show the session's value again (the refused one is not its value).
        select.dataset.key = '';
        this.fillSettings();
      }
    });
    const wrap = h('label.setting', h('span', label), select, error);
    return { select, error, wrap };
  }

  /** The settings selects show the session's values and what its vendor offers. */
  fillSettings() {
    const s = this.info;
    const vendor = this.app.store.vendors.find((v) => v.id === s.vendor);
    /** @param {HTMLSelectElement} sel @param {string[]} values @param {string} current */
    const fill = (sel, values, current) => {
      const list = [...new Set(['', ...values, current || ''])];
      const key = JSON.stringify([list, current]);
      if (sel.dataset.key === key) return;
      sel.dataset.key = key;
      clear(sel).append(...list.map((v) => h('option', { value: v, selected: v === (current || '') }, v || 'default')));
    };
    fill(this.modelSel.select, vendor?.models || [], s.model);
    fill(this.effortSel.select, vendor?.effortLevels || [], s.effort);
    fill(this.modeSel.select, PERMISSION_MODES.slice(1), s.permissionMode === 'default' ? '' : s.permissionMode);
    const modeFirst = this.modeSel.select.options[0];
    if (modeFirst) modeFirst.value = 'default';
    fillOnLimit(this, this.limitSel.select);
  }

  // ---- hand off, add a Worker, schedule -------------------------------------------

  openHandoff() {
    const picker = vendorPicker(() => this.app.store.vendors, { vendor: this.app.installedVendors().find((v) => v.id !== this.info.vendor)?.id });
    const d = formDialog({
      title: 'Hand off this conversation',
      className: 'handoff',
      intro: 'A new session continues from here with a summary of this one.',
      fields: picker.fields,
      submitLabel: 'Hand off',
      submit: async () => {
        const v = picker.values();
        const r = await this.app.conn.request('session.handoff', { sessionId: this.id, targetVendor: v.vendor, model: v.model, effort: v.effort });
        location.hash = `#/s/${encodeURIComponent(r.targetSessionId)}`;
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }

  openAddWorker() {
    const picker = vendorPicker(() => this.app.store.vendors);
    // Optional: the server names it after its vendor (`-2`, `-3`… when taken), and
    // judges a name given (a taken one is refused in this dialog).
    const name = /** @type {HTMLInputElement} */ (h('input.field', { type: 'text', name: 'workerName', maxlength: 32, autocomplete: 'off', placeholder: 'Default: the vendor’s name' }));
    const own = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', name: 'workerWorkspace' }));
    const approvals = workerApprovalsSelect();
    const d = formDialog({
      title: 'Add a Worker',
      className: 'add-worker',
      intro: 'A new Worker session is paired with this one, which becomes its Driver (a Driver may have several Workers; its agent names one to delegate to it). With its own worktree it works on a branch of its own, and you merge what it did.',
      fields: [...picker.fields, ['Name', name], ['Own worktree', own], ['Its permission requests', approvals]],
      submitLabel: 'Add Worker',
      submit: async () => {
        const v = picker.values();
        /** @type {import('./wire.js').PairCreateParams} */
        const params = { driverId: this.id, worker: { vendor: v.vendor, model: v.model, effort: /** @type {import('./wire.js').WorkerSpec['effort']} */ (v.effort) } };
        if (name.value.trim()) params.workerName = name.value.trim();
        if (own.checked) params.workerWorkspace = 'worktree';
        params.workerApprovals = /** @type {import('./wire.js').PairCreateParams['workerApprovals']} */ (approvals.value);
        const r = await this.app.conn.request('pair.create', params);
        this.app.store.setPairs([...this.app.store.pairs.values(), r.pair]);
        this.app.pairsChanged();
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }

  openSchedule() {
    const when = /** @type {HTMLInputElement} */ (h('input.field', { type: 'datetime-local', name: 'at', value: toLocalInput(Date.now() + 3600000) }));
    const text = /** @type {HTMLTextAreaElement} */ (h('textarea.field', { name: 'content', rows: 3 }));
    text.value = this.input.value;
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const d = formDialog({
      title: 'Schedule a message',
      className: 'schedule',
      intro: `The time is in your time zone (${zone}). If a turn runs then, it is interrupted and the message runs next.`,
      fields: [['When', when], ['Message', text]],
      submitLabel: 'Schedule',
      submit: async () => {
        if (!text.value.trim()) throw new Error('Write the message to send.');
        await this.app.conn.request('session.schedule', { sessionId: this.id, content: text.value, at: localToRfc3339(when.value) });
        if (this.input.value === text.value) this.input.value = '';
        this.refreshSchedules();
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }

  async refreshSchedules() {
    try {
      const r = await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.id)}/schedules`);
      this.schedules = r.schedules;
    } catch {
      return;
    }
    this.renderSchedules();
  }

  /**
   * A due schedule's history line says whether it was sent or failed (and why), once
   * the schedule list knows.
   * @param {string} scheduleId
   */
  fillScheduleLine(scheduleId) {
    const line = this.scheduleLines.get(scheduleId);
    const sch = this.schedules.find((x) => x.scheduleId === scheduleId);
    if (!line || !sch) return;
    const text = sch.content.length > 120 ? `${sch.content.slice(0, 120)}…` : sch.content;
    line.classList.toggle('error', sch.status === 'failed');
    line.textContent = sch.status === 'failed'
      ? `⏰ Scheduled message failed${sch.reason ? ` (${sch.reason})` : ''}: ${text}`
      : `⏰ Scheduled message sent: ${text}`;
  }

  renderSchedules() {
    for (const id of this.scheduleLines.keys()) this.fillScheduleLine(id);
    const pending = this.schedules.filter((s) => s.status === 'pending').sort((a, b) => a.at - b.at);
    clear(this.schedulesEl).append(...pending.map((s) => {
      const at = new Date(s.at).toLocaleString();
      return h('li.chip.scheduled', { dataset: { schedule: s.scheduleId } },
        h('span', `⏰ ${at}: ${s.content.length > 60 ? `${s.content.slice(0, 60)}…` : s.content}`),
        h('button.btn.tiny', { type: 'button', 'aria-label': `Cancel the message scheduled for ${at}`, onclick: async () => {
          try {
            await this.app.conn.request('session.schedule-cancel', { sessionId: this.id, scheduleId: s.scheduleId });
          } catch (err) {
            this.note(`Not cancelled: ${/** @type {Error} */ (err).message}`, 'error');
          }
          this.refreshSchedules();
        } }, 'Cancel'));
    }));
  }

  // ---- usage --------------------------------------------------------------------

  /** Re-reads the session's usage (debounced): the header total, delegation costs. */
  refreshUsage() {
    clearTimeout(this.usageTimer);
    this.usageTimer = setTimeout(async () => {
      try {
        this.usage = await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.id)}/usage`);
      } catch {
        return;
      }
      this.renderUsage();
    }, 100);
  }

  renderUsage() {
    const u = this.usage;
    this.usageEl.textContent = u && u.total.turns ? `Total: ${formatUsage(u.total)}` : '';
    for (const line of this.costLines) this.fillCost(line);
  }

  /**
   * A Driver's "the Worker finished" line gets that delegated turn's cost: the
   * latest delegation to that Worker that started before the line.
   * @param {{el: HTMLElement, to: string, ts: number}} line
   */
  fillCost(line) {
    const d = (this.usage?.delegations || []).filter((x) => x.workerId === line.to && x.startedAt <= line.ts).pop();
    if (d) line.el.textContent = d.usage.turns ? ` · Worker's turn: ${formatUsage(d.usage)}` : ' · Worker reported no usage';
  }

  // ---- header and composer -------------------------------------------------------

  updateHeader() {
    const s = this.info;
    this.rewinds.learn(s.superseded);
    this.titleEl.textContent = s.title || s.id;
    // Two conversations side by side: each button says which session it acts on.
    this.renameBtn.setAttribute('aria-label', `Rename ${s.title || s.id}`);
    this.archiveBtn.setAttribute('aria-label', `Archive ${s.title || s.id}`);
    this.statusEl.className = `status st-${shownStatus(s)}`;
    this.statusEl.textContent = statusText(s);
    // In a pair's pane the pane header already names the role.
    const inPane = this.el.classList.contains('driver') || this.el.classList.contains('worker');
    const role = s.role && !inPane ? [h(`span.badge.role-${s.role}`, s.role === 'driver' ? 'Driver' : 'Worker')] : [];
    clear(this.metaEl).append(...role, [s.vendor, s.model, s.effort].filter(Boolean).join(' · '),
      s.permissionMode && s.permissionMode !== 'default' ? ` · ${s.permissionMode}` : '');
    this.stopBtn.disabled = !this.busy;
    this.sendBtn.textContent = this.busy ? 'Queue' : 'Send';
    this.handoffBtn.setAttribute('aria-label', `Hand off ${s.title || s.id}`);
    this.besideBtn.setAttribute('aria-label', `Open beside ${s.title || s.id}`);
    // A Worker, or a session spawned by another, cannot get a Worker; a Driver can
    // get more (the server says when it has as many as it may).
    this.workerBtn.hidden = s.role === 'worker' || !!s.parentId;
    this.handoffBtn.hidden = !!s.pairId;
    this.loopBtn.textContent = s.loop ? 'Stop loop' : 'Loop…';
    this.fillSettings();
    this.renderBg();
    this.renderGit();
    this.renderForkedFrom();
    this.rewinds.checkpoints.sync(this.list);
    this.changes?.refreshHead();
  }

  /** A fork's header names its source, as a button that opens it (rebuilt only
   * when that changes, so a header update keeps the button's focus). */
  renderForkedFrom() {
    const from = this.info.forkedFrom;
    const name = from ? this.app.sessions.get(from.sessionId)?.title || from.sessionId : '';
    const key = from ? `${from.sessionId} ${name}` : '';
    if (this.forkedEl.dataset.key === key) return;
    this.forkedEl.dataset.key = key;
    clear(this.forkedEl);
    this.forkedEl.hidden = !from;
    if (!from) return;
    this.forkedEl.append(h('button.btn.link.tiny', {
      type: 'button',
      title: 'Open the session this one was forked from',
      onclick: () => { location.hash = `#/s/${encodeURIComponent(from.sessionId)}`; },
    }, h('span', { 'aria-hidden': 'true' }, '↳ '), `Forked from ${name}`));
  }

  renderBg() {
    if (!this.bg.length) this.askEl.hidden = true;
    clear(this.bgEl);
    for (const t of this.bg) {
      this.bgEl.append(h('span.chip.bg', { title: t.description },
        h('span', `⚙ ${t.description || t.taskId}`),
        h('button.btn.tiny', { type: 'button', 'aria-label': `Stop background task ${t.description || t.taskId}`,
          onclick: () => this.app.stopTask(this.id, t.taskId) }, 'Stop')));
    }
  }

  startRename() {
    this.renameInput.value = this.info.title || '';
    this.renameError.textContent = '';
    this.titleEl.hidden = true;
    this.renameBtn.hidden = true;
    this.renameForm.hidden = false;
    this.renameInput.focus();
    this.renameInput.select();
  }

  endRename() {
    this.renameForm.hidden = true;
    this.titleEl.hidden = false;
    this.renameBtn.hidden = false;
    this.renameBtn.focus();
  }

  async saveRename() {
    const title = this.renameInput.value.trim();
    if (!title) {
      this.renameError.textContent = 'A title cannot be empty.';
      return;
    }
    try {
      await this.app.rename(this.id, title);
      this.endRename();
    } catch (err) {
      this.renameError.textContent = `Not renamed: ${err.message}`;
    }
  }

  autosize() {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
    this.input.style.overflowY = this.input.scrollHeight > 240 ? 'auto' : 'hidden';
  }

  /** Reads the slash commands the session's agent offers. */
  async refreshCommands() {
    try {
      const r = await this.app.conn.request('session.commands', { sessionId: this.id });
      this.commands = r.commands || [];
      this.renderCommands();
    } catch {
      // An older server, or the session is gone: no suggestions.
    }
  }

  /** The commands matching what the composer holds (`/` and a prefix), at most 12. */
  matchingCommands() {
    const typed = /^\/(\S*)$/.exec(this.input.value);
    if (!typed) return [];
    return this.commands.filter((c) => c.name.startsWith(typed[1])).slice(0, 12);
  }

  /** Shows the matching commands above the composer; Tab or a click takes one. */
  renderCommands() {
    const shown = this.matchingCommands();
    this.commandMenu.hidden = shown.length === 0;
    this.commandMenu.replaceChildren(...shown.map((c) => h('li', { role: 'option' },
      h('button.btn.link.command', { type: 'button', onclick: () => this.takeCommand(c.name) },
        h('code', `/${c.name}`),
        c.description || c.inputHint ? h('span.command-desc', ` ${c.description || ''}${c.inputHint ? ` (${c.inputHint})` : ''}`) : null))));
  }

  /**
   * Puts `/name ` in the composer.
   * @param {string} name
   */
  takeCommand(name) {
    this.input.value = `/${name} `;
    this.renderCommands();
    this.input.focus();
  }

  onKey(e) {
    if (e.key === 'Tab' && !e.shiftKey && !this.commandMenu.hidden) {
      const first = this.matchingCommands()[0];
      if (first) {
        e.preventDefault();
        this.takeCommand(first.name);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.submit();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      this.interrupt();
    }
  }

  note(text, kind = '') {
    this.noteEl.className = `note ${kind}`;
    this.noteEl.textContent = text;
  }

  /**
   * Sends the composer's text. During a turn it is queued. When only background
   * work runs, the person chooses: queue it until the work ends, or send now (the
   * vendor may stop that work).
   * @param {boolean} [queueChoice] the answer to that question, once given
   */
  async submit(queueChoice) {
    const text = this.input.value;
    if (!text.trim() && !this.attach.count) return;
    if (queueChoice === undefined && !this.busy && this.bg.length) {
      this.askBackground();
      return;
    }
    this.askEl.hidden = true;
    const queue = queueChoice ?? this.busy;
    this.input.value = '';
    this.autosize();
    this.note('');
    try {
      await this.attach.settled();
      const content = this.attach.content(text);
      if (typeof content === 'string' && !content.trim()) {
        this.input.value = text;
        return;
      }
      const reply = await this.app.conn.request('chat.send', { sessionId: this.id, content, queue });
      this.attach.clear();
      if ('queued' in reply && reply.queued) this.refreshQueue();
    } catch (err) {
      this.input.value = text;
      this.note(`Not sent: ${/** @type {Error} */ (err).message}`, 'error');
    }
  }

  askBackground() {
    const n = this.bg.length;
    const queueBtn = h('button.btn.primary', { type: 'button', onclick: () => this.submit(true) }, 'Queue until the background work ends');
    clear(this.askEl).append(
      h('span', `${n} background task${n === 1 ? ' is' : 's are'} still running. Sending now may stop ${n === 1 ? 'it' : 'them'}.`),
      queueBtn,
      h('button.btn.danger', { type: 'button', onclick: () => this.submit(false) }, 'Send now'),
      h('button.btn.link', { type: 'button', onclick: () => { this.askEl.hidden = true; this.input.focus(); } }, 'Keep editing'));
    this.askEl.hidden = false;
    queueBtn.focus();
  }

  /** A queue re-read soon, once for a burst of changes. */
  scheduleQueueRefresh() {
    clearTimeout(this.queueTimer);
    this.queueTimer = setTimeout(() => this.refreshQueue(), 250);
  }

  /** Reads the queue from the server (it lives there, and survives a reload). */
  async refreshQueue() {
    try {
      const r = await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.id)}/queue`);
      this.app.store.setQueue(this.id, r.queued);
    } catch { /* the next change reads it again */ }
  }

  /** The queue as chips, each with Edit and Cancel (not for server-queued results). */
  renderQueued() {
    const queued = this.app.store.queues.get(this.id) || [];
    clear(this.queueEl).append(...queued.map((q, i) => {
      const label = `Queued ${i + 1}: ${q.text.length > 80 ? `${q.text.slice(0, 80)}…` : q.text}`;
      const text = h('span.q-text', label);
      const li = h('li.chip.queued-msg', { dataset: { queue: q.queueId } }, text);
      if (q.internal) return li;
      const edit = h('button.btn.tiny', { type: 'button', 'aria-label': `Edit queued message ${i + 1}`, onclick: () => {
        const input = /** @type {HTMLInputElement} */ (h('input.field.tiny', { type: 'text', value: q.text, 'aria-label': `New text of queued message ${i + 1}` }));
        const save = async () => {
          try {
            const r = await this.app.conn.request('chat.queue-edit', { sessionId: this.id, queueId: q.queueId, content: input.value });
            this.app.store.setQueue(this.id, r.queued);
            this.renderQueued();
          } catch (err) {
            this.note(`Not changed: ${/** @type {Error} */ (err).message}`, 'error');
          }
        };
        input.addEventListener('keydown', (e) => {
          if (e.key === 'Enter') { e.preventDefault(); save(); }
          if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); this.renderQueued(); }
        });
        clear(li).append(input, h('button.btn.tiny.primary', { type: 'button', onclick: save }, 'Save'));
        input.focus();
      } }, 'Edit');
      const cancel = h('button.btn.tiny', { type: 'button', 'aria-label': `Cancel queued message ${i + 1}`, onclick: async () => {
        try {
          const r = await this.app.conn.request('chat.queue-cancel', { sessionId: this.id, queueId: q.queueId });
          this.app.store.setQueue(this.id, r.queued);
        } catch (err) {
          this.note(`Not cancelled: ${/** @type {Error} */ (err).message}`, 'error');
          this.refreshQueue();
        }
      } }, 'Cancel');
      li.append(edit, cancel);
      return li;
    }));
  }

  async interrupt() {
    if (!this.busy) return;
    try {
      await this.app.conn.request('chat.abort', { sessionId: this.id });
    } catch (err) {
      this.note(`Could not stop: ${/** @type {Error} */ (err).message}`, 'error');
    }
  }

  // ---- subscription ---------------------------------------------------------------

  subscribe() {
    this.stats.subscribes++;
    this.app.conn.send({ type: 'chat.subscribe', sessions: [{ sessionId: this.id, lastSeq: this.tip }] });
  }

  /** @param {any} frame */
  onSubscribed(frame) {
    this.healing = false;
    this.subscribedAt = frame.lastSeq;
    this.bg = frame.backgroundTasks || [];
    this.renderBg();
    this.app.store.setQueue(this.id, frame.queued || []);
    // A request older than the window still needs its prompt. If its event is
    // replayed after all, that card takes this one's place.
    for (const p of frame.pendingPermissions || []) {
      if (!p?.requestId || this.perms.has(p.requestId) || !this.liveEdge) continue;
      const item = this.render({ kind: 'permission_request', seq: this.tip, ...p }, this.list, this.items);
      if (item) {
        item.pending = true;
        this.stats.pendingShown++;
      }
    }
  }

  /**
   * One event from the live stream (or a replay after resubscribing).
   * @param {HistoryEvent} ev
   */
  onEvent(ev) {
    if (ev.seq <= this.tip) {
      this.stats.dups++;
      return;
    }
    if (ev.seq !== this.tip + 1) {
      // Never show an event after a hole: ask again from what we hold; the replay
      // fills the hole and whatever repeats is dropped above.
      this.stats.gaps++;
      if (!this.healing) {
        this.healing = true;
        this.subscribe();
      }
      return;
    }
    this.tip = ev.seq;
    this.stats.applied++;
    this.sideEffects(ev);
    if (!this.liveEdge) {
      this.jumpBtn.hidden = false;
      return;
    }
    // Read the scroll position once per frame, not once per event: a fast stream
    // would otherwise force a layout for every chunk.
    if (this.stick === undefined) {
      this.stick = this.atBottom();
      requestAnimationFrame(() => {
        if (this.stick) this.scrollToBottom();
        this.stick = undefined;
      });
    }
    this.render(ev, this.list, this.items);
    this.trimTop();
    this.shownSeq = ev.seq;
    this.app.reportSeen(this.id);
  }

  /** @param {HistoryEvent} ev */
  sideEffects(ev) {
    const live = ev.seq > this.subscribedAt;
    if (ev.kind === 'commands') {
      this.commands = ev.commands || [];
      this.renderCommands();
    } else if (ev.kind === 'background_tasks') {
      this.bg = ev.tasks || [];
      this.renderBg();
      if (live) this.refreshQueue();
    } else if (ev.kind === 'turn_started' && live) {
      // A queued message may have started this turn.
      this.refreshQueue();
    } else if (ev.kind === 'turn_completed' && live) {
      this.refreshUsage();
      this.app.attention.turnEnded(this.id, ev.status);
    } else if (ev.kind === 'permission_request' && live) {
      this.app.attention.permission(this.id, ev.toolName || 'a tool');
    } else if (ev.kind === 'info' && live && /^scheduled message /.test(ev.text)) {
      this.refreshSchedules();
    }
    if (ev.kind === 'git_state') {
      this.gitEvents++;
      this.onGitState(ev);
    } else if (ev.kind === 'overlap') {
      this.learnOverlap(ev);
    } else if (ev.kind === 'script' && ev.name === 'run') {
      // The panel's Run and Stop follow the run, wherever it was started.
      this.changes?.run.onEvent(ev);
    } else if ((ev.kind === 'merged' || ev.kind === 'rebased') && live && this.panel === 'changes') {
      // What is left to merge after a merge, or ahead and behind after a rebase
      // (neither is followed by a `git_state`): read once.
      this.changes?.load();
    }
    if (['delegation', 'pair_created', 'pair_closed', 'worker_proposal_update'].includes(ev.kind)) this.app.pairsChanged();
  }

  /** Writes the streamed text gathered since the last frame. */
  flush() {
    this.flushing = false;
    for (const it of this.dirty) {
      if (!it.dead && it.buf) it.textNode.appendData(it.buf);
      it.buf = '';
    }
    this.dirty.clear();
  }

  atBottom() {
    return this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 48;
  }

  scrollToBottom() {
    this.log.scrollTop = this.log.scrollHeight;
  }

  // ---- window over history --------------------------------------------------------

  updateOlder() {
    const more = this.first > 1;
    this.olderBtn.hidden = !more;
    this.sentinel.classList.toggle('start', !more);
    this.sentinel.dataset.label = more ? '' : 'Start of session';
  }

  trimTop() {
    if (this.items.length <= MAX_ITEMS) return;
    const drop = this.items.splice(0, this.items.length - MAX_ITEMS);
    for (const it of drop) { it.el.remove(); it.dead = true; }
    this.first = this.items[0].seq;
    this.updateOlder();
  }

  trimBottom() {
    if (this.items.length <= MAX_ITEMS) return;
    const drop = this.items.splice(MAX_ITEMS);
    for (const it of drop) { it.el.remove(); it.dead = true; }
    this.liveEdge = false;
    this.jumpBtn.hidden = false;
  }

  async fetchPage(after, limit) {
    return this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.id)}/events?after=${after}&limit=${limit}`);
  }

  /** Pages in the events before the window (REST), keeping the reader's place. */
  async loadOlder() {
    if (this.loading || this.first <= 1) return;
    this.loading = true;
    this.olderBtn.textContent = 'Loading…';
    try {
      const from = Math.max(1, this.first - (this.pageSize || PAGE));
      const page = await this.fetchPage(from - 1, this.first - from);
      const events = (page.events || []).filter((e) => e.seq < this.first);
      const frag = document.createDocumentFragment();
      const items = [];
      for (const ev of events) this.render(ev, frag, items);
      this.mergeBoundary(items);
      // A page that adds nothing visible (deltas of a message already shown): take
      // bigger steps, up to the REST limit, until something shows.
      this.pageSize = items.length ? PAGE : Math.min(5000, (this.pageSize || PAGE) * 2);
      const before = this.log.scrollHeight;
      const top = this.log.scrollTop;
      this.list.prepend(frag);
      this.items = items.concat(this.items);
      this.log.scrollTop = top + (this.log.scrollHeight - before);
      this.first = from;
      this.trimBottom();
    } catch (err) {
      this.note(`Could not load older messages: ${err.message}`, 'error');
    } finally {
      this.loading = false;
      this.olderBtn.textContent = 'Load older messages';
      this.updateOlder();
    }
    // Still at the top (the page added little): keep going.
    if (this.first > 1 && this.log.scrollTop < 200) setTimeout(() => this.loadOlder(), 0);
  }

  /** A streamed text run at the end of an older page belongs to the window's first item. */
  mergeBoundary(older) {
    const last = older[older.length - 1];
    const next = this.items[0];
    if (!last || !next || last.type !== 'stream' || !last.open || last.turnId !== next.turnId) return;
    if (next.type === 'stream' && next.open) {
      next.textNode.insertData(0, last.textNode.data + last.buf);
      next.seq = last.seq;
    } else if (next.type !== 'assistant') return;
    older.pop();
    last.el.remove();
    last.dead = true;
  }

  /** Drops the window and shows the newest part again. */
  async jumpLatest() {
    this.jumpBtn.hidden = true;
    for (const it of this.items) { it.el.remove(); it.dead = true; }
    this.items = [];
    this.cards.clear();
    let after = Math.max(0, this.tip - PAGE);
    this.first = after + 1;
    try {
      for (;;) {
        const page = await this.fetchPage(after, 5000);
        for (const ev of page.events || []) {
          if (ev.seq > this.tip) {
            this.tip = ev.seq;
            this.sideEffects(ev);
          }
          this.render(ev, this.list, this.items);
          after = ev.seq;
        }
        if (!page.hasMore && after >= this.tip) break;
        if (!(page.events || []).length) break;
      }
      this.liveEdge = true;
      this.trimTop();
      this.shownSeq = this.tip;
      this.app.reportSeen(this.id);
    } catch (err) {
      this.note(`Could not load: ${err.message}`, 'error');
      this.jumpBtn.hidden = false;
    }
    this.updateOlder();
    this.scrollToBottom();
  }

  // ---- rendering one event ----------------------------------------------------------

  push(target, items, item, ev) {
    item.seq = ev.seq;
    item.turnId = ev.turnId;
    item.el.dataset.seq = ev.seq;
    item.el.dataset.kind = item.type;
    target.append(item.el);
    items.push(item);
    this.rewinds.added(item, ev);
    return item;
  }

  openStream(items, turnId) {
    for (let i = items.length - 1; i >= 0 && i >= items.length - 4; i--) {
      const it = items[i];
      if (it.type === 'stream' && it.open && it.turnId === turnId) return it;
    }
    return null;
  }

  /**
   * Shows one event: a new item in `items` (appended to `target`), or a change to an
   * item already there (a delta to its message, a result to its tool card).
   * @param {HistoryEvent} ev
   * @param {Node} target
   * @param {any[]} items
   */
  render(ev, target, items) {
    const add = (type, el, extra = {}) => this.push(target, items, { type, el, ...extra }, ev);
    this.rewinds.seen(ev);
    switch (ev.kind) {
      case 'history_rewound':
        return add('info', this.rewinds.line(ev));
      case 'checkpoint': {
        const line = this.rewinds.checkpoints.line(ev);
        return line ? add('info', line) : null;
      }
      case 'restored':
        return add('info', this.rewinds.checkpoints.restoredLine(ev));
      case 'forked':
        return add('info', h('div.line-event.forked', h('span', { 'aria-hidden': 'true' }, '↳ '), forkedText(ev)));
      case 'imported':
        return add('info', h('div.line-event.forked', h('span', { 'aria-hidden': 'true' }, '↳ '), importedText(ev)));
      case 'turn_started':
        return null;
      case 'user_message': {
        const cls = ev.internal ? 'msg.user.internal' : 'msg.user';
        const label = ev.internal ? 'Server message (result pushed back)' : ev.delegatedBy ? 'Delegated by the Driver' : 'You';
        const body = ev.internal && ev.text.length > 400
          ? h('details', h('summary', `${ev.text.slice(0, 120)}…`), h('div.text', ev.text))
          : h('div.text', ev.text);
        return add('user', h(`div.${cls}`, h('div.who', label, h('time', clock(ev.ts))), body,
          attachmentsView(this.app.conn, this.id, ev.content)));
      }
      case 'review':
        return this.reviewed(ev, items, add);
      case 'text_delta': {
        const open = this.openStream(items, ev.turnId);
        if (open) {
          // Appending to a long text node copies it; gather the chunks and write them
          // once per frame instead.
          open.buf += ev.text;
          this.dirty.add(open);
          if (!this.flushing) {
            this.flushing = true;
            requestAnimationFrame(() => this.flush());
          }
          return null;
        }
        const textNode = document.createTextNode(ev.text);
        return add('stream', h('div.msg.assistant.streaming', h('div.who', 'Assistant', h('time', clock(ev.ts))), h('div.text.plain', textNode)), { open: true, textNode, buf: '' });
      }
      case 'assistant_message': {
        const open = this.openStream(items, ev.turnId);
        const body = markdownOrText(ev.text);
        if (open) {
          open.buf = '';
          this.dirty.delete(open);
          open.open = false;
          open.type = 'assistant';
          open.el.dataset.kind = 'assistant';
          open.el.classList.remove('streaming');
          open.el.lastChild.replaceWith(body);
          return null;
        }
        return add('assistant', h('div.msg.assistant', h('div.who', 'Assistant', h('time', clock(ev.ts))), body));
      }
      case 'thinking':
        return add('thinking', h('details.thinking', h('summary', 'Thinking'), h('div.text', ev.text)));
      case 'tool_call': {
        const result = h('pre.tool-out', 'running…');
        const edits = changeEdits(ev.changes);
        // A file edit opens as its diff (long diffs show their start); other tools
        // stay closed with their JSON input.
        const el = edits.length
          ? h('details.card.tool.edit.pending', { open: true },
            h('summary', h('span.tool-name', ev.name), h('span.tool-preview', edits.map((e) => e.path).join(', ')), h('span.tool-state', '…')),
            h('div.card-body', diffView(edits), h('div.label', 'Result'), result))
          : h('details.card.tool.pending',
            h('summary', h('span.tool-name', ev.name), h('span.tool-preview', preview(ev.input)), h('span.tool-state', '…')),
            h('div.card-body', h('div.label', 'Input'), h('pre', json(ev.input)), h('div.label', 'Result'), result));
        const item = add('tool', el, { result, name: ev.name, input: ev.input });
        this.cards.set(ev.callId, item);
        return item;
      }
      case 'tool_result': {
        const card = this.cards.get(ev.callId);
        if (card && !card.dead) {
          card.result.textContent = json(ev.output);
          card.el.classList.remove('pending');
          card.el.classList.add(ev.isError ? 'failed' : 'ok');
          card.el.querySelector('.tool-state').textContent = ev.isError ? 'error' : 'done';
          return null;
        }
        return add('tool', h(`details.card.tool.${ev.isError ? 'failed' : 'ok'}`,
          h('summary', h('span.tool-name', 'result'), h('span.tool-preview', preview(ev.output)), h('span.tool-state', ev.isError ? 'error' : 'done')),
          h('div.card-body', h('pre.tool-out', json(ev.output)))));
      }
      case 'turn_completed': {
        const text = ev.status === 'completed' ? 'Turn completed'
          : ev.status === 'interrupted' ? 'Turn interrupted'
          : ev.status === 'limited' ? `Stopped by the vendor’s limit${ev.resetsAt ? ` until ${new Date(ev.resetsAt).toLocaleString()}` : ''}${ev.error ? `: ${ev.error}` : ''}`
          : `Turn failed${ev.error ? `: ${ev.error}` : ''}`;
        const usage = ev.usage;
        return add('turn', h(`div.turn-end.${ev.status}`, h('span', text),
          usage ? h('span.turn-usage', { title: 'Tokens (and cost, where the vendor reports one) of this turn' }, formatUsage(usage)) : null,
          h('time', clock(ev.ts))));
      }
      case 'error':
        return add('error', h('div.line-event.error', { role: 'alert' }, `Error: ${ev.message}`));
      case 'info': {
        const due = /^scheduled message (\S+) is due$/.exec(ev.text || '');
        if (due) {
          const line = h('div.line-event.schedule-fired', '⏰ Scheduled message due');
          this.scheduleLines.set(due[1], line);
          this.fillScheduleLine(due[1]);
          return add('info', line);
        }
        return add('info', h('div.line-event', ev.text));
      }
      case 'schedule_occurrence':
        return add('info', h('div.line-event.schedule-fired', occurrenceText(ev)));
      case 'commands':
        return add('info', h('div.line-event.muted', `The agent offers ${ev.commands.length} slash command${ev.commands.length === 1 ? '' : 's'} (type / in the message box)`));
      case 'loop_started':
        return add('info', h('div.line-event.loop', `↻ Loop started: up to ${ev.maxIterations} iterations toward “${ev.goal}”, checked by ${ev.check.command ? 'a command' : 'a judge'}`));
      case 'loop_iteration':
        return add('info', h(`details.card.loop-check.${ev.check.passed ? 'ok' : 'failed'}`,
          h('summary', `↻ Iteration ${ev.n}: check ${ev.check.passed ? 'passed' : 'failed'}`),
          h('div.card-body', h('pre.tool-out', ev.check.output || '(no output)'))));
      case 'loop_ended':
        return add('info', h('div.line-event.loop', `↻ Loop ended after ${ev.iterations} iteration${ev.iterations === 1 ? '' : 's'}: ${loopEndText(ev.reason)}`));
      case 'background_tasks':
        return add('info', h('div.line-event.muted', ev.tasks?.length ? `Background: ${ev.tasks.map((t) => t.description || t.taskId).join(', ')}` : 'Background work finished'));
      case 'plan':
        return add('info', h('details.card.plan', { open: true }, h('summary', 'Plan'),
          h('ol', ev.entries.map((e) => h(`li.plan-${e.status}`, `${e.content} (${e.status.replace('_', ' ')})`)))));
      case 'config_changed':
        return add('info', h('div.line-event.muted', `Settings: ${[ev.vendor, ev.model, ev.effort, ev.permissionMode].filter(Boolean).join(' · ')}`));
      case 'delegation': {
        const mine = ev.from === this.id;
        const text = ev.active
          ? (mine ? 'Delegated to the Worker' : 'Delegation from the Driver started')
          : (mine ? 'The Worker finished the delegation' : 'Delegation ended');
        const cost = h('span.delegation-cost');
        if (mine && !ev.active) {
          const line = { el: cost, to: ev.to, ts: ev.ts };
          this.costLines.push(line);
          if (this.costLines.length > 200) this.costLines.shift();
          this.fillCost(line);
          this.refreshUsage();
        }
        // A Worker in its own worktree: what it changed, how its checks went (the
        // Worker's conversation has their output), and a way to review it.
        const checks = checksSummaryText(ev.changes?.checks || []);
        const changed = mine && !ev.active && ev.changes
          ? h('span.delegation-changes', ` · changed ${summaryText(ev.changes)} on `, h('code', ev.changes.branch),
            checks ? h('span.delegation-checks', ` · ${checks}`) : null, ' ',
            h('button.btn.tiny', { type: 'button', onclick: () => this.app.openChanges(ev.to) }, 'Review the Worker’s changes'))
          : null;
        return add('info', h(`div.line-event.delegation${ev.active ? '.active' : ''}`, `⇄ ${text}`, cost, changed));
      }
      case 'git_state':
        return add('info', h('div.line-event.muted.git-state', `Working directory: ${ev.files.length ? summaryText(summaryOf(ev)) : 'no changes'}${ev.branch ? ` on ${ev.branch}` : ''}`));
      case 'merged':
        return add('info', h('div.line-event.merged', `Merged ${ev.branch} into ${ev.base} (${ev.strategy})`));
      case 'rebased':
        return add('info', h('div.line-event.rebased', rebasedLineText(ev)));
      case 'check':
        return add('info', checkLine(ev));
      case 'script':
        return this.scriptEvent(ev, items, add);
      case 'overlap':
        // Older pages of history (scrolling up) reach the overlaps only through here.
        this.learnOverlap(ev);
        return add('info', h('div.line-event.overlap', overlapLineText(ev.paths, this.sessionName(ev.withSessionId))));
      case 'discarded':
        return add('info', h('div.line-event.discarded', `Discarded the worktree and its branch ${ev.branch}`));
      case 'pair_created':
        return add('info', h('div.line-event.delegation', ev.pair.workerName ? `⇄ Driver and Worker ${ev.pair.workerName} paired` : '⇄ Driver and Worker paired'));
      case 'pair_closed':
        return add('info', h('div.line-event.delegation', '⇄ Pair closed'));
      case 'handoff_created':
        return add('info', h('div.line-event', 'Continued in ', h('a', { href: `#/s/${ev.targetSessionId}` }, ev.targetTitle || ev.targetSessionId), ` (${ev.targetVendor})`));
      case 'handoff_context':
        return add('info', h('div.line-event', 'Continues ', h('a', { href: `#/s/${ev.sourceSessionId}` }, ev.sourceTitle || ev.sourceSessionId), ` (${ev.sourceVendor})`));
      case 'permission_request':
        return this.permissionCard(ev, add);
      case 'permission_resolved': {
        this.settled.add(ev.requestId);
        const card = this.perms.get(ev.requestId);
        if (card && !card.dead) card.settle();
        return null;
      }
      case 'worker_proposal':
        return this.proposalCard(ev, add);
      case 'worker_proposal_update': {
        const card = this.proposals.get(ev.proposalId);
        if (card && !card.dead) {
          card.update(ev);
          return null;
        }
        return add('info', h('div.line-event.delegation', `Proposal ${ev.status}${ev.error ? `: ${ev.error}` : ''}`));
      }
      default:
        return add('info', h('div.line-event.muted', ev.kind));
    }
  }

  /**
   * A turn's `review` event comes right after its `user_message` (live, or in the
   * same page of history): that message becomes the review's card, with the text
   * the agent got folded away under it. Without the message (it is before the
   * window), or without a turn (a review by another agent that failed, had no
   * comments, or waits behind a running turn), the card stands alone.
   * @param {Extract<HistoryEvent, {kind: 'review'}>} ev
   * @param {any[]} items
   * @param {(type: string, el: HTMLElement) => any} add
   */
  reviewed(ev, items, add) {
    const card = reviewCard(ev, { name: (id) => this.sessionName(id) });
    // Who wrote it: the person, or (a review by another agent) that agent.
    const who = ev.reviewer ? `Reviewer · ${ev.reviewer.vendor}` : 'You';
    const msg = ev.turnId ? items.slice(-4).reverse().find((it) => it.type === 'user' && it.turnId === ev.turnId && !it.dead) : null;
    const text = msg?.el.querySelector(':scope > .text');
    if (!text) return add('user', h('div.msg.user.review', h('div.who', who, h('time', clock(ev.ts))), card));
    msg.el.classList.add('review');
    const label = msg.el.querySelector(':scope > .who')?.firstChild;
    if (ev.reviewer && label?.nodeType === Node.TEXT_NODE) label.textContent = who;
    text.before(card);
    card.after(h('details.review-message', h('summary', 'Message sent to the agent'), text));
    return null;
  }

  /**
   * A `script` event: a new line, or (`foldsInto`) the script's line shown already,
   * redrawn for it, so a setup's progress and a run started and stopped again stay
   * one line each.
   * @param {Extract<HistoryEvent, {kind: 'script'}>} ev
   * @param {any[]} items
   * @param {(type: string, el: HTMLElement, extra?: object) => any} add
   */
  scriptEvent(ev, items, add) {
    let shown = null;
    for (let i = items.length - 1; i >= 0 && !shown; i--) {
      if (items[i].type === 'script' && items[i].script.name === ev.name) shown = items[i];
    }
    if (shown && foldsInto(shown.script, ev, shown === items[items.length - 1])) {
      shown.script = ev;
      updateScriptLine(shown.el, ev);
      return null;
    }
    return add('script', scriptLine(ev), { script: ev });
  }

  permissionCard(ev, add) {
    // The same request shown from `pendingPermissions` before its event was replayed:
    // the event's card takes its place.
    const early = this.perms.get(ev.requestId);
    if (early?.pending && !early.dead) {
      early.el.remove();
      early.dead = true;
      const at = this.items.indexOf(early);
      if (at >= 0) this.items.splice(at, 1);
    }
    const tool = ev.toolName || 'a tool';
    // Settled before this card was drawn (a page of history): no prompt, one line.
    if (this.settled.has(ev.requestId)) {
      return add('permission', h('div.line-event.muted.perm-closed', { dataset: { request: ev.requestId } }, `Permission for ${tool} was asked`));
    }
    const status = h('span.card-state', 'waiting for you');
    const msgId = `perm-msg-${ev.requestId}`;
    const msg = h('input.field', { type: 'text', id: msgId, placeholder: 'Optional message to the agent', 'aria-label': `Message with the answer about ${tool}` });
    // The vendor's own answers ("Always allow in this session", "Approve and accept
    // edits", ...) when it offers them; each sends its fields. Else allow or deny.
    const choices = ev.choices?.length ? ev.choices : [{ label: 'Allow', allow: true }, { label: 'Deny', allow: false }];
    const buttons = choices.map((c) => h(c.allow ? (c.remember || c.permissionMode ? 'button.btn.allow' : 'button.btn.primary.allow') : 'button.btn.danger.deny',
      { type: 'button', onclick: () => answer(c) }, c.label));
    // An edit shows the diff it would make.
    const edits = changeEdits(ev.changes);
    const plan = ev.permissionKind === 'plan';
    const body = plan
      ? h('div.plan', typeof ev.input?.plan === 'string' ? renderMarkdown(ev.input.plan) : h('p.muted', 'The agent asks to leave plan mode.'))
      : edits.length ? [diffView(edits), h('details', h('summary', 'Input'), h('pre', json(ev.input, 4000)))] : h('pre', json(ev.input, 4000));
    const el = h('div.card.permission', { role: 'group', 'aria-label': plan ? 'Plan approval' : `Permission request for ${tool}`, dataset: { request: ev.requestId } },
      h('div.card-head', h('strong', plan ? 'Plan: approve to carry it out' : `Permission: ${tool}`), status),
      body,
      h('div.row', msg, ...buttons));
    const item = add('permission', el);
    /** What this page answered (true/false), once it has sent an answer. */
    item.answer = undefined;
    const enable = (on) => buttons.forEach((b) => { b.disabled = !on; });
    const done = (text) => {
      status.textContent = text;
      enable(false);
      msg.disabled = true;
      el.classList.add('done');
    };
    // The request is settled. If this page answered, the card keeps the answer;
    // otherwise (answered elsewhere, or withdrawn when its turn ended) the prompt
    // goes away and one line says it was asked.
    item.settle = () => {
      if (item.closed) return;
      if (item.answer !== undefined) {
        done(item.answer ? 'allowed' : 'denied');
        return;
      }
      const hadFocus = el.contains(document.activeElement);
      const line = h('div.line-event.muted.perm-closed', { dataset: { request: ev.requestId } }, `Permission for ${tool} is no longer pending`);
      line.dataset.seq = el.dataset.seq;
      line.dataset.kind = 'permission';
      el.replaceWith(line);
      item.el = line;
      item.closed = true;
      if (hadFocus) this.input.focus();
    };
    const answer = async (choice) => {
      const ok = choice.allow;
      enable(false);
      item.answer = ok;
      const fields = { sessionId: this.id, requestId: ev.requestId, allow: ok };
      if (choice.remember) fields.remember = choice.remember;
      if (choice.permissionMode) fields.permissionMode = choice.permissionMode;
      if (msg.value.trim()) fields.message = msg.value.trim();
      try {
        await this.app.conn.request('chat.permission-response', fields);
        done(ok ? 'allowed' : 'denied');
      } catch (err) {
        item.answer = undefined;
        if (err.code === 'NO_SUCH_PERMISSION') {
          item.settle();
          return;
        }
        status.textContent = `not sent: ${err.message}`;
        enable(true);
      }
    };
    /** Answers as a choice of the card does (a notification's action uses it). */
    item.respond = answer;
    this.perms.set(ev.requestId, item);
    return item;
  }

  proposalCard(ev, add) {
    const rec = ev.recommended || {};
    const vendors = this.app.installedVendors();
    const vendorSel = h('select.field', { 'aria-label': 'Worker vendor' }, vendors.map((v) => h('option', { value: v.id, selected: v.id === rec.vendor }, v.displayName)));
    const modelSel = h('select.field', { 'aria-label': 'Worker model' });
    const effortSel = h('select.field', { 'aria-label': 'Worker effort' });
    const fill = () => {
      const v = vendors.find((x) => x.id === vendorSel.value) || { models: [], effortLevels: [] };
      clear(modelSel).append(...v.models.map((m) => h('option', { value: m, selected: m === rec.model }, m)));
      clear(effortSel).append(...v.effortLevels.map((e) => h('option', { value: e, selected: e === rec.effort }, e)));
    };
    vendorSel.addEventListener('change', fill);
    fill();
    const status = h('span.card-state', ev.autoApproved ? 'auto-approved' : ev.status);
    const accept = h('button.btn.primary', { type: 'button', onclick: () => respond(true) }, 'Accept');
    const decline = h('button.btn', { type: 'button', onclick: () => respond(false) }, 'Decline');
    const controls = h('div.row.choices', vendorSel, modelSel, effortSel, accept, decline);
    const el = h('div.card.proposal', { role: 'group', 'aria-label': 'Worker proposal' },
      h('div.card-head', h('strong', 'Worker proposal'), status),
      h('div.summary', ev.summary),
      h('details', { open: true }, h('summary', 'Plan'), h('div.text', markdownOrText(ev.plan || ''))),
      controls);
    const item = add('proposal', el);
    item.update = (u, fromEvent = true) => {
      // The reply to our own answer can come after later events; never go back.
      if (!fromEvent && item.seen) return;
      if (fromEvent) item.seen = true;
      status.textContent = u.status + (u.error ? `: ${u.error}` : '');
      el.dataset.status = u.status;
      controls.hidden = true;
    };
    if (ev.status !== 'pending' || ev.autoApproved) controls.hidden = true;
    el.dataset.status = ev.status;
    const respond = async (accepted) => {
      accept.disabled = true;
      decline.disabled = true;
      const fields = { sessionId: this.id, proposalId: ev.proposalId, accepted };
      if (accepted) Object.assign(fields, { vendor: vendorSel.value, model: modelSel.value || undefined, effort: effortSel.value || undefined });
      try {
        const reply = await this.app.conn.request('proposal.respond', fields);
        item.update({ status: reply.status }, false);
      } catch (err) {
        status.textContent = `failed: ${err.message}`;
        accept.disabled = false;
        decline.disabled = false;
      }
    };
    this.proposals.set(ev.proposalId, item);
    return item;
  }
}

function markdownOrText(text) {
  if (text.length > MARKDOWN_LIMIT) return h('div.text.plain', text);
  return h('div.text.md', renderMarkdown(text));
}

function preview(v) {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  if (!s) return '';
  return s.length > 90 ? `${s.slice(0, 90)}…` : s;
}

export { ago };

/**
 * Why a loop ended, in words.
 * @param {import('./wire.js').LoopEndReason} reason
 */
function loopEndText(reason) {
  switch (reason) {
    case 'passed': return 'the check passed';
    case 'maxIterations': return 'the last iteration’s check failed too';
    case 'stopped': return 'stopped';
    case 'interrupted': return 'its turn was interrupted';
    default: return 'its turn failed';
  }
}

/** What an occurrence of a recurring schedule did, in words ("⏰ Recurring message #3 skipped: a turn was running").
 * @param {{number: number, outcome: string}} ev */
export function occurrenceText(ev) {
  const said = {
    sent: 'sent',
    queued: 'queued behind the running turn',
    skipped: 'skipped: a turn was running',
    failed: 'could not be sent',
  }[ev.outcome] || ev.outcome;
  return `⏰ Recurring message #${ev.number} ${said}`;
}
