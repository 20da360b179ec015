// A session's "Changes" panel: what its working directory changed (the `git_state`
// the server publishes after a turn, or `GET .../changes` when the panel opens),
// each file opening its unified diff, "Run checks" (the repository's declared
// checks, checks.js), the run script with its log and the worktree's port
// (scripts.js), and for a worktree session "Rebase", "Merge…" and "Discard".
// It follows `git_state` events as they come; nothing polls (but an open Run log
// while its script runs: no event carries a run's output). Lines of the diffs take
// comments, sent to the agent as a review (review.js); "Ask another agent to review"
// has an agent of another vendor review them (review.js's ReviewBy). Files a sibling
// worktree changed too are marked, from the view's `overlap` events (overlaps.js).

import { h, clear, append, keepFocus } from './dom.js';
import { checkRow, runSummaryText } from './checks.js';
import { RunScript } from './scripts.js';
import { diffView, unifiedDiff } from './diff.js';
import { formDialog } from './dialogs.js';
import { ReviewDraft, ReviewBy } from './review.js';
import { siblingsByPath, badgeText, noticeText, rebaseResultText } from './overlaps.js';

/**
 * @typedef {import('./wire.js').GitState} GitState
 * @typedef {import('./wire.js').ChangedFile} ChangedFile
 */

/** Words for a file's status, as the list shows them (a letter and its meaning). */
const STATUS = { added: ['A', 'added'], modified: ['M', 'modified'], deleted: ['D', 'deleted'], renamed: ['R', 'renamed'] };

/**
 * "3 files · +10 −2" for a list of changed files (or a delegation's summary).
 * @param {{files: number, added: number, removed: number}} s
 */
export function summaryText(s) {
  return `${s.files} file${s.files === 1 ? '' : 's'} · +${s.added} −${s.removed}`;
}

/** @param {GitState} state */
export function summaryOf(state) {
  return {
    files: state.files.length,
    added: state.files.reduce((n, f) => n + f.added, 0),
    removed: state.files.reduce((n, f) => n + f.removed, 0),
  };
}

export class ChangesPanel {
  /**
   * @param {import('./chat.js').ChatView} view the conversation this panel belongs to
   */
  constructor(view) {
    this.view = view;
    this.app = view.app;
    /** The last state read or received; null until then. @type {GitState | null} */
    this.state = null;
    /** Why there is no state (not a git repository, a failed read). */
    this.problem = '';
    /** The working directory is in no git repository: nothing to check or merge. */
    this.noRepo = false;
    /** Paths whose diff is open, so a new state keeps them open (and re-reads them). @type {Set<string>} */
    this.open = new Set();
    /** Bumped per state, so a diff read for an older state is not shown. */
    this.gen = 0;
    /** Whether the review form had the focus when the diffs were last redrawn. */
    this.refocusForm = false;
    const headId = `changes-head-${view.id}`;
    this.headEl = h('div.ws-branch');
    this.statusEl = h('p.ws-status', { role: 'status' });
    this.overlapsEl = h('div.ws-overlaps');
    this.rebaseBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.rebase() }, 'Rebase');
    /** What the last Rebase did, or why it was refused. */
    this.rebaseEl = h('p.ws-rebase', { role: 'status' });
    /** A rebase is on its way (a second press would only be refused). */
    this.rebasing = false;
    this.mergeBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.openMerge() }, 'Merge…');
    this.discardBtn = h('button.btn.tiny.danger', { type: 'button', onclick: () => this.openDiscard() }, 'Discard');
    this.checkBtn = h('button.btn.tiny', { type: 'button', onclick: () => this.runChecks() }, 'Run checks');
    /** A `session.check` is on its way. */
    this.checking = false;
    /** Why the last Run checks was refused. */
    this.checkError = '';
    /**
     * This panel's own run, shown until the session's record says something newer
     * (`over`: the record's `lastChecks` as JSON when the reply came).
     * @type {{checks: import('./wire.js').CheckResult[], over: string} | null}
     */
    this.ran = null;
    /** The results drawn, as JSON: an unchanged record does not redraw (and close open outputs). */
    this.checksKey = '';
    this.checksStatusEl = h('p.ws-checks-status', { role: 'status' });
    this.checksListEl = h('ul.ws-checks', { 'aria-label': 'Checks' });
    this.checksEl = h('div.ws-checks-section', h('h4', 'Checks'), this.checksStatusEl, this.checksListEl);
    /** The repository's run script: Run, Stop, its log, the worktree's port. */
    this.run = new RunScript({ sessionId: view.id, conn: this.app.conn, port: () => view.info.workspace?.port });
    this.actionsEl = h('div.row.ws-actions', this.checkBtn, this.rebaseBtn, this.mergeBtn, this.discardBtn);
    this.listEl = h('ul.ws-files', { 'aria-label': 'Changed files' });
    /** The comments written on this panel's diffs, until sent. */
    this.review = new ReviewDraft({ sessionId: view.id, conn: this.app.conn, root: this.listEl, isWorker: () => view.info?.role === 'worker' });
    /** "Ask another agent to review": a review by another vendor (`session.review-by`). */
    this.reviewBy = new ReviewBy({ sessionId: view.id, conn: this.app.conn, vendors: () => this.app.store.vendors, ownVendor: () => view.info?.vendor || '' });
    this.el = h('section.ws-panel.changes', { id: `changes-${view.id}`, 'aria-labelledby': headId, onkeydown: (/** @type {KeyboardEvent} */ e) => view.panelKey(e) },
      h('div.panel-head', h('h3', { id: headId }, 'Changes'),
        h('button.btn.tiny', { type: 'button', 'aria-label': 'Close changes', onclick: () => view.showPanel(null) }, '✕')),
      this.overlapsEl, this.headEl, this.actionsEl, this.rebaseEl, this.checksEl, this.run.el, this.statusEl, this.listEl, this.review.el, this.reviewBy.el);
    this.render();
  }

  /** Reads the state from REST (when the panel opens; events keep it current after). */
  async load() {
    const events = this.view.gitEvents;
    try {
      const s = await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.view.id)}/changes`);
      this.problem = '';
      this.noRepo = false;
      if (events !== this.view.gitEvents) return;
      // The view keeps the newest state and hands it back to this panel.
      this.view.onGitState(s);
    } catch (e) {
      const err = /** @type {import('./conn.js').RequestError} */ (e);
      this.problem = err.code === 'NOT_A_GIT_REPOSITORY'
        ? 'The working directory is not in a git repository: there are no changes to show.'
        : `Changes could not be read: ${err.message}`;
      // What events said stays shown, unless there is no repository at all.
      this.noRepo = err.code === 'NOT_A_GIT_REPOSITORY';
      if (this.noRepo) this.state = null;
      this.render();
    }
  }

  /** A new state (event or REST): re-render, keeping open diffs open. @param {GitState} state */
  update(state) {
    this.state = state;
    this.problem = '';
    this.noRepo = false;
    this.gen++;
    this.render();
  }

  /** The session's record changed (its workspace discarded, say). */
  refreshHead() {
    this.renderHead();
  }

  renderHead() {
    const ws = this.view.info.workspace;
    const s = this.state;
    const active = !!ws && ws.mode === 'worktree' && ws.state !== 'discarded';
    const checkable = ws?.state !== 'discarded' && !this.noRepo;
    this.actionsEl.hidden = !active && !checkable;
    this.rebaseEl.hidden = !active;
    for (const btn of [this.rebaseBtn, this.mergeBtn, this.discardBtn]) {
      btn.hidden = !active;
      // The server would refuse them while checks run too (SESSION_BUSY).
      btn.disabled = this.view.busy || this.checking;
    }
    this.rebaseBtn.title = ws ? `Move ${ws.branch} onto the current head of ${ws.base}` : '';
    this.checkBtn.hidden = !checkable;
    this.checkBtn.disabled = this.view.busy;
    // Off while its own run goes, but not `disabled`: that would drop the focus.
    this.checkBtn.setAttribute('aria-disabled', String(this.checking));
    this.renderChecks(checkable);
    this.run.el.hidden = !checkable;
    this.run.render();
    // Nothing to review without a repository, or once the worktree is gone.
    this.reviewBy.el.hidden = !checkable;
    this.reviewBy.fill();
    const parts = [];
    if (ws?.mode === 'worktree') {
      parts.push(h('span', 'Own worktree on ', h('code', ws.branch), ' from ', h('code', ws.base)));
      if (ws.state === 'discarded') parts.push(h('strong.ws-discarded', ' · discarded'));
    } else if (s?.branch) {
      parts.push(h('span', 'On ', h('code', s.branch)));
    }
    if (s && s.base) parts.push(h('span', ` · ${s.ahead} ahead, ${s.behind} behind ${s.base}`));
    if (s?.dirty) parts.push(h('span', ' · uncommitted changes'));
    clear(this.headEl).append(...parts);
    if (ws?.state === 'discarded') {
      // Nothing is left to show or to merge.
      this.state = null;
      this.open.clear();
      clear(this.listEl);
      this.statusEl.textContent = 'The worktree and its branch were discarded.';
    }
  }

  render() {
    this.renderFiles();
    this.renderOverlaps();
  }

  renderFiles() {
    this.renderHead();
    const s = this.state;
    if (this.view.info.workspace?.state === 'discarded') return;
    if (!s) {
      this.statusEl.textContent = this.problem || 'Reading changes…';
      clear(this.listEl);
      return;
    }
    const sum = summaryOf(s);
    this.statusEl.textContent = this.problem || (s.files.length ? summaryText(sum) : 'No changes.');
    const paths = new Set(s.files.map((f) => f.path));
    for (const p of [...this.open]) if (!paths.has(p)) this.open.delete(p);
    const focused = /** @type {HTMLElement | null} */ (document.activeElement);
    const focusPath = focused && this.listEl.contains(focused) ? focused.dataset.path : null;
    // A comment being written comes back with its diff, read anew below; so does
    // the focus it had.
    if (focused && this.review.formEl.contains(focused)) this.refocusForm = true;
    clear(this.listEl).append(...s.files.map((f) => this.fileRow(f)));
    if (focusPath) /** @type {HTMLElement | null} */ (this.listEl.querySelector(`button.ws-file[data-path="${CSS.escape(focusPath)}"]`))?.focus();
  }

  /** @param {ChangedFile} f */
  fileRow(f) {
    const [letter, word] = STATUS[f.status] || ['?', f.status];
    const slot = h('div.ws-diff');
    const btn = h('button.ws-file', {
      type: 'button',
      'aria-expanded': String(this.open.has(f.path)),
      dataset: { path: f.path },
      onclick: () => {
        if (this.open.has(f.path)) {
          this.open.delete(f.path);
          btn.setAttribute('aria-expanded', 'false');
          clear(slot);
        } else {
          this.open.add(f.path);
          btn.setAttribute('aria-expanded', 'true');
          this.showDiff(f, slot);
        }
      },
    },
    h(`span.ws-st.st-${f.status}`, { title: word }, letter, h('span.sr', ` ${word} `)),
    h('span.ws-path', f.path),
    // Filled by renderOverlaps; inside the button, so its name says it too.
    h('span.ws-overlap', { hidden: true }),
    f.binary ? h('span.muted', 'binary') : [h('span.diff-add', `+${f.added}`), h('span.diff-del', `−${f.removed}`)]);
    if (this.open.has(f.path)) this.showDiff(f, slot);
    return h('li', btn, slot);
  }

  /**
   * A notice per sibling this session overlaps with, and the badge of each listed
   * file one of them changed too. Drawn with the list, and alone when an `overlap`
   * event arrives (the rows stay, so open diffs are not read again).
   */
  renderOverlaps() {
    const current = this.view.overlaps.current();
    keepFocus(this.overlapsEl, () => clear(this.overlapsEl).append(...current.map((o) => {
      const name = this.view.sessionName(o.withSessionId);
      return h('p.ws-overlap-notice', h('span', noticeText(o.paths.length, name)), ' ',
        h('button.btn.tiny', { type: 'button', title: 'Open it with its Changes panel', onclick: () => this.app.openChanges(o.withSessionId) }, `Open ${name}`));
    })));
    const by = siblingsByPath(current);
    for (const badge of /** @type {NodeListOf<HTMLElement>} */ (this.listEl.querySelectorAll('button.ws-file .ws-overlap'))) {
      const ids = by.get(/** @type {HTMLElement} */ (badge.parentElement).dataset.path) || [];
      badge.hidden = !ids.length;
      // The commas set the badge apart in the button's name, as its box does on screen.
      clear(badge).append(...(ids.length ? [h('span.sr', ', '), badgeText(ids.map((id) => this.view.sessionName(id))), h('span.sr', ',')] : []));
    }
  }

  /** Reads one file's diff and draws it into `slot`. @param {ChangedFile} f @param {HTMLElement} slot */
  async showDiff(f, slot) {
    const gen = this.gen;
    if (!slot.firstChild) slot.append(h('p.muted', 'Reading the diff…'));
    let d;
    try {
      d = await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.view.id)}/changes/diff?path=${encodeURIComponent(f.path)}`);
    } catch (e) {
      if (gen === this.gen) clear(slot).append(h('p.error-text', `The diff could not be read: ${/** @type {Error} */ (e).message}`));
      return;
    }
    if (gen !== this.gen || !this.open.has(f.path)) return;
    /** @type {import('./wire.js').FileDiff} */
    const diff = d;
    const edits = unifiedDiff(diff.diff);
    const binary = (diff.binaryFiles || []).includes(f.path) || f.binary;
    // dom.js's append skips the nulls (the DOM's own would write "null").
    append(clear(slot), [
      binary ? h('p.muted', 'A binary file: its content is not shown.') : null,
      edits.length && !binary ? diffView(edits, this.review.hooks) : null,
      !edits.length && !binary ? h('p.muted', 'No difference in content (a mode change, or nothing left to show).') : null,
      diff.truncated ? h('p.ws-note', `The diff was cut at the server's size cap (against ${diff.against}).`) : null]);
    if (this.refocusForm && slot.contains(this.review.formEl)) {
      this.refocusForm = false;
      this.review.textEl.focus();
    }
  }

  // ---- checks ---------------------------------------------------------------------

  /** Runs the repository's checks; their results (or the refusal) show in the panel. */
  async runChecks() {
    if (this.checking || this.view.busy) return;
    this.checking = true;
    this.checkError = '';
    this.renderHead();
    try {
      const r = await this.app.conn.request('session.check', { sessionId: this.view.id });
      this.ran = { checks: r.checks, over: JSON.stringify(this.view.info.lastChecks ?? null) };
    } catch (e) {
      // SESSION_BUSY, or INVALID_ARGUMENT naming the broken .tandem/worktree.toml.
      this.checkError = `Checks not run: ${/** @type {Error} */ (e).message}`;
    } finally {
      this.checking = false;
      this.renderHead();
    }
  }

  /** The last results known (this panel's run, else the session's `lastChecks`), or null. */
  shownChecks() {
    const recorded = this.view.info.lastChecks ?? null;
    // The record catches up with this panel's run around its reply; once it says
    // something else after that, a run from elsewhere is newer.
    if (this.ran && this.ran.over !== JSON.stringify(recorded)) this.ran = null;
    return this.ran?.checks ?? recorded;
  }

  /** The Checks section: running, refused, or the results. @param {boolean} checkable */
  renderChecks(checkable) {
    const checks = this.shownChecks();
    const status = this.checking ? 'Running checks…'
      : this.checkError || (checks && !checks.length ? 'This repository declares no checks (.tandem/worktree.toml)' : runSummaryText(checks || []));
    this.checksStatusEl.textContent = status;
    this.checksStatusEl.classList.toggle('error-text', !this.checking && !!this.checkError);
    this.checksListEl.hidden = this.checking || !checks?.length;
    // Nothing ran and nothing runs: no empty heading.
    this.checksEl.hidden = !checkable || !status;
    const key = JSON.stringify(checks);
    if (key === this.checksKey) return;
    this.checksKey = key;
    clear(this.checksListEl).append(...(checks || []).map(checkRow));
  }

  // ---- rebase, merge and discard ------------------------------------------------

  /** Moves the branch onto its base's head; the answer, or the conflict, shows here. */
  async rebase() {
    if (this.rebasing) return;
    this.rebasing = true;
    this.rebaseEl.classList.remove('error-text');
    this.rebaseEl.textContent = 'Rebasing…';
    try {
      const r = await this.app.conn.request('session.rebase', { sessionId: this.view.id });
      this.rebaseEl.textContent = rebaseResultText(r);
    } catch (e) {
      // MERGE_CONFLICT's message names the files; nothing was changed.
      this.rebaseEl.classList.add('error-text');
      this.rebaseEl.textContent = `Not rebased: ${/** @type {Error} */ (e).message}`;
    } finally {
      this.rebasing = false;
    }
  }

  openMerge() {
    const ws = this.view.info.workspace;
    const strategy = /** @type {HTMLSelectElement} */ (h('select.field', { name: 'strategy' },
      h('option', { value: 'merge' }, 'Merge commit'), h('option', { value: 'squash' }, 'Squash into one commit')));
    const message = /** @type {HTMLInputElement} */ (h('input.field', { type: 'text', name: 'message', placeholder: 'Optional: tandem writes one' }));
    /** Set by "Merge anyway" for the one submit it makes. */
    let force = false;
    const d = formDialog({
      title: 'Merge this worktree',
      className: 'merge',
      intro: `Uncommitted changes are committed on ${ws?.branch || 'the branch'} first, then it is merged into ${ws?.base || 'its base'}. A conflict changes nothing.`,
      fields: [['Strategy', strategy], ['Message', message]],
      submitLabel: 'Merge',
      submit: async () => {
        /** @type {import('./wire.js').SessionMergeParams} */
        const params = { sessionId: this.view.id, strategy: /** @type {any} */ (strategy.value) };
        if (message.value.trim()) params.message = message.value.trim();
        if (force) params.force = true;
        force = false;
        const r = await this.app.conn.request('session.merge', params);
        this.app.toast(`Merged ${r.branch} into ${r.base}`);
      },
      // The repository wants passing checks first; the person may know better. A
      // plain button (not a submit), so Enter in a field never forces a merge.
      refused: (err) => err.code === 'CHECKS_FAILED'
        ? h('p.row', h('button.btn.danger', {
          type: 'button',
          onclick: () => {
            force = true;
            /** @type {HTMLFormElement} */ (d.el.querySelector('form')).requestSubmit();
          },
        }, 'Merge anyway'))
        : null,
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }

  openDiscard() {
    const ws = this.view.info.workspace;
    const d = formDialog({
      title: 'Discard this worktree?',
      className: 'discard',
      intro: `The worktree and its branch ${ws?.branch || ''} are deleted with every change not merged. The conversation stays.`,
      fields: [],
      submitLabel: 'Discard',
      danger: true,
      submit: async () => {
        const r = await this.app.conn.request('session.discard', { sessionId: this.view.id });
        this.app.toast(`Discarded ${r.branch}`);
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }
}
