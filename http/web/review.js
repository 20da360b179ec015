// Inline review of a session's changes (`chat.review`): comments on lines of the
// Changes panel's diffs, kept as a pending review until sent, and the card the
// conversation shows for a turn that carried a review.
//
// Choosing lines: every numbered line of a diff has a real <button> with its
// number, reachable by Tab. Click or Enter on it starts a comment there and opens a
// small form under the line; Shift+click or Shift+Enter on another line of the same
// hunk extends the comment to it (the form says so). A comment's side is that of
// the line it started on, `old` for a removed line and `new` otherwise, and its
// numbers are that side's file lines (from the hunk headers). Pending comments are
// kept by those numbers, not by their place in the page, so they find their lines
// again when a diff is redrawn or read anew.

import { h, clear } from './dom.js';
import { lineNumbers } from './diff.js';

/**
 * @typedef {import('./wire.js').ReviewComment} ReviewComment
 * @typedef {import('./wire.js').ReviewSide} ReviewSide
 * @typedef {import('./wire.js').Reviewer} Reviewer
 * @typedef {import('./diff.js').FileEdit} FileEdit
 * @typedef {{side: ReviewSide, line: number, endLine?: number}} Anchor
 * @typedef {{path: string, side?: ReviewSide, line: number, endLine?: number | null}} Place
 *   a comment's lines (its side is `new` unless it says `old`)
 */

/** Characters of a comment, and of the summary, that the server takes at most. */
const MAX_CHARS = 20000;

/** The column of `lineNumbers`' pairs that holds `side`'s numbers. @param {ReviewSide} side */
const column = (side) => (side === 'old' ? 0 : 1);

/** The side a comment starting on a line with diff op `op` is on. @param {string} op @returns {ReviewSide} */
export const sideOf = (op) => (op === '-' ? 'old' : 'new');

/**
 * Where a selection of diff lines anchors: from index `start` (where it began,
 * which gives the side) to index `to` (either direction), the first and last
 * numbers on that side. Null when the lines cross a hunk header (the server quotes
 * one hunk per comment) or none of them is numbered.
 * @param {[string, string][]} lines
 * @param {[number | null, number | null][]} numbers `lineNumbers(lines)`
 * @param {number} start
 * @param {number} to
 * @returns {Anchor | null}
 */
export function anchorOf(lines, numbers, start, to) {
  const side = sideOf(lines[start][0]);
  const col = column(side);
  const picked = [];
  for (let i = Math.min(start, to); i <= Math.max(start, to); i++) {
    if (lines[i][0] === '@') return null;
    const n = numbers[i][col];
    if (n !== null) picked.push(n);
  }
  if (!picked.length) return null;
  const [line, end] = [picked[0], picked[picked.length - 1]];
  return end === line ? { side, line } : { side, line, endLine: end };
}

/** The last line of a comment (or anchor). @param {{line: number, endLine?: number | null}} a */
const lastLine = (a) => a.endLine ?? a.line;

/**
 * "src/a.rs:3", "src/a.rs:3–5", with " (old)" for lines of the old version.
 * @param {Place} c
 */
export function commentAt(c) {
  const range = lastLine(c) === c.line ? `${c.line}` : `${c.line}–${lastLine(c)}`;
  return `${c.path}:${range}${c.side === 'old' ? ' (old)' : ''}`;
}

/** "Review · 1 comment", "Review · 3 comments". @param {number} n */
export function reviewTitle(n) {
  return `Review · ${n} comment${n === 1 ? '' : 's'}`;
}

/**
 * The card's title: "Review · 2 comments" for the person's own review; for one an
 * agent wrote, "Review by codex · 2 comments", or "Review by codex failed" when it
 * gave no usable answer.
 * @param {{comments?: ReviewComment[], reviewer?: Reviewer | null, failed?: string | null}} review
 */
export function reviewHeading(review) {
  const n = (review.comments || []).length;
  if (!review.reviewer) return reviewTitle(n);
  const by = `Review by ${review.reviewer.vendor}`;
  return review.failed ? `${by} failed` : `${by}${reviewTitle(n).slice('Review'.length)}`;
}

/**
 * The conversation's card for a `review` event: its title, who wrote it (an agent's
 * review names the reviewer's session, with a link to it), why it failed (then it
 * has no comments), its summary and comments. User text goes in as text nodes only.
 * @param {{comments: ReviewComment[], summary?: string | null, reviewer?: Reviewer | null, failed?: string | null}} review
 * @param {{name?: (id: string) => string}} [opts] `name`: a session's name as the page shows it
 */
export function reviewCard(review, opts = {}) {
  const comments = review.comments || [];
  const r = review.reviewer;
  const failed = r && review.failed ? review.failed : null;
  const name = r ? (opts.name ? opts.name(r.sessionId) : r.sessionId) : '';
  return h(`div.review-card${r ? '.by-agent' : ''}${failed ? '.failed' : ''}`,
    h('div.review-title', reviewHeading(review)),
    r ? h('p.review-reviewer', `Written by a ${r.vendor} agent in the session `,
      h('a', { href: `#/s/${encodeURIComponent(r.sessionId)}`, title: 'Open the reviewer’s session' }, name)) : null,
    // A mark and words: the colour is not the only sign.
    failed ? h('p.review-failed', h('span.review-mark', { 'aria-hidden': 'true' }, '✕ '), `Failed: ${failed}`) : null,
    review.summary ? h('p.review-summary', review.summary) : null,
    failed || !comments.length ? null : h('ol.review-comments', comments.map((c) => h('li', h('code.review-at', commentAt(c)), h('div.review-body', c.body)))));
}

/**
 * The vendor a review by another agent goes to by default: `current` while it is
 * still installed, else the first installed vendor other than the session's own
 * (`own`), else the first installed one; '' when none is.
 * @param {{id: string, installed: boolean}[]} vendors
 * @param {string} own
 * @param {string} [current]
 */
export function reviewerChoice(vendors, own, current = '') {
  const ids = vendors.filter((v) => v.installed).map((v) => v.id);
  if (current && ids.includes(current)) return current;
  return ids.find((id) => id !== own) ?? ids[0] ?? '';
}

/**
 * The accessible name of a line's comment button: which line, of which file, and
 * whether it was added or removed (what its colour says).
 * @param {string} path
 * @param {string} op
 * @param {number} n
 */
export function lineName(path, op, n) {
  const kind = op === '+' ? 'added line' : op === '-' ? 'removed line' : 'line';
  return `Comment on ${kind} ${n} of ${path}`;
}

/**
 * The pending review of one session's Changes panel: the comments written so far,
 * the one comment being written (at most one form is open), and the bar that lists
 * them and sends them.
 */
export class ReviewDraft {
  /**
   * @param {object} deps
   * @param {string} deps.sessionId
   * @param {import('./conn.js').Conn} deps.conn
   * @param {HTMLElement} deps.root the element holding the panel's diffs
   * @param {() => boolean} deps.isWorker whether the session is a Worker, whose review
   *   may go to its Driver instead
   */
  constructor({ sessionId, conn, root, isWorker }) {
    this.sessionId = sessionId;
    this.conn = conn;
    this.root = root;
    this.isWorker = isWorker;
    /** @type {ReviewComment[]} */
    this.comments = [];
    /** The comment being written: where it began (`start`, a number on its side) and
     * what it covers. @type {{path: string, start: number, anchor: Anchor} | null} */
    this.draft = null;
    /** Line numbers per drawn diff, computed once per diff read. @type {WeakMap<FileEdit, [number | null, number | null][]>} */
    this.numbers = new WeakMap();
    this.sending = false;
    /** What `diffView` calls for each line. @type {import('./diff.js').LineHooks} */
    this.hooks = { row: (edit, i, row) => this.decorate(edit, i, row) };
    this.buildForm();
    this.buildBar();
    this.renderBar();
  }

  /** @param {FileEdit} edit */
  numbersOf(edit) {
    let n = this.numbers.get(edit);
    if (!n) {
      n = lineNumbers(edit.lines);
      this.numbers.set(edit, n);
    }
    return n;
  }

  // ---- the lines ------------------------------------------------------------------

  /**
   * Gives a numbered line its comment button and returns the box under it where its
   * comments (and the form) go. Both carry the line's numbers, by which comments
   * find their lines.
   * @param {FileEdit} edit
   * @param {number} i
   * @param {HTMLElement} row
   */
  decorate(edit, i, row) {
    const op = edit.lines[i][0];
    const [oldNo, newNo] = this.numbersOf(edit)[i];
    const n = sideOf(op) === 'old' ? oldNo : newNo;
    if (n === null) {
      row.prepend(h('span.ln'));
      return null;
    }
    const data = { path: edit.path, old: String(oldNo ?? ''), new: String(newNo ?? '') };
    Object.assign(row.dataset, data);
    row.classList.toggle('picked', this.covers(row.dataset));
    row.prepend(h('button.ln', {
      type: 'button',
      'aria-label': lineName(edit.path, op, n),
      dataset: data,
      onclick: (/** @type {MouseEvent} */ e) => this.pick(edit, i, e.shiftKey),
      onkeydown: (/** @type {KeyboardEvent} */ e) => {
        // Enter alone is the button's click; with Shift it extends.
        if (e.key === 'Enter' && e.shiftKey) {
          e.preventDefault();
          this.pick(edit, i, true);
        }
      },
    }, String(n)));
    const box = h('div.dl-notes', { dataset: data });
    this.fillBox(box);
    return box;
  }

  /**
   * A line's button was pressed: start a comment there, or (`extend`, with a comment
   * begun in the same file) stretch that comment to it.
   * @param {FileEdit} edit
   * @param {number} i
   * @param {boolean} extend
   */
  pick(edit, i, extend) {
    const numbers = this.numbersOf(edit);
    const d = this.draft;
    if (extend && d && d.path === edit.path) {
      const start = numbers.findIndex((n) => n[column(d.anchor.side)] === d.start);
      const anchor = start < 0 ? null : anchorOf(edit.lines, numbers, start, i);
      if (!anchor) {
        this.formError.textContent = 'A comment covers lines of one hunk: pick a line of the same hunk.';
        this.textEl.focus();
        return;
      }
      d.anchor = anchor;
    } else {
      const anchor = /** @type {Anchor} */ (anchorOf(edit.lines, numbers, i, i));
      this.draft = { path: edit.path, start: anchor.line, anchor };
      this.textEl.value = '';
    }
    this.formError.textContent = '';
    this.refresh();
    this.textEl.focus();
  }

  /** Every line's box shows its comments and, under the draft's last line, the form. */
  refresh() {
    for (const box of /** @type {NodeListOf<HTMLElement>} */ (this.root.querySelectorAll('.dl-notes'))) this.fillBox(box);
    for (const row of /** @type {NodeListOf<HTMLElement>} */ (this.root.querySelectorAll('div.dl[data-path]'))) {
      row.classList.toggle('picked', this.covers(row.dataset));
    }
    this.renderBar();
  }

  /**
   * Whether the draft covers the line with these numbers.
   * @param {DOMStringMap} nums
   */
  covers(nums) {
    const d = this.draft;
    if (!d || d.path !== nums.path) return false;
    const n = Number(nums[d.anchor.side]);
    return !!nums[d.anchor.side] && n >= d.anchor.line && n <= lastLine(d.anchor);
  }

  /**
   * Whether a comment (or the draft) ends on the line with these numbers.
   * @param {Place} c
   * @param {DOMStringMap} box
   */
  endsAt(c, box) {
    return c.path === box.path && box[c.side || 'new'] === String(lastLine(c));
  }

  /** @param {HTMLElement} box */
  fillBox(box) {
    const notes = this.comments.filter((c) => this.endsAt(c, box.dataset)).map((c) => this.note(c));
    const d = this.draft;
    const form = d && this.endsAt({ path: d.path, ...d.anchor }, box.dataset) ? this.formEl : null;
    if (!notes.length && !form && !box.firstChild) return;
    clear(box).append(...notes);
    if (form) {
      this.formLabel.textContent = `Comment on ${commentAt({ path: d.path, ...d.anchor })}`;
      box.append(form);
    }
  }

  /** A pending comment under its line. @param {ReviewComment} c */
  note(c) {
    return h('div.review-note',
      h('div.review-note-head', h('code.review-at', commentAt(c)), h('span.muted', 'pending'), this.removeButton(c)),
      h('div.review-body', c.body));
  }

  /** @param {ReviewComment} c */
  removeButton(c) {
    return h('button.btn.tiny', { type: 'button', 'aria-label': `Remove the comment on ${commentAt(c)}`, onclick: () => {
      this.comments = this.comments.filter((x) => x !== c);
      this.errorEl.textContent = '';
      this.refresh();
      if (this.comments.length) this.sendBtn.focus();
      else this.focusLine(c.path, c.side || 'new', c.line);
    } }, 'Remove');
  }

  // ---- the form -------------------------------------------------------------------

  buildForm() {
    const id = `review-text-${this.sessionId}`;
    this.formLabel = h('label', { for: id });
    this.textEl = /** @type {HTMLTextAreaElement} */ (h('textarea.field.review-text', { id, rows: 3, maxlength: MAX_CHARS,
      onkeydown: (/** @type {KeyboardEvent} */ e) => {
        if (e.key === 'Escape') {
          // Closes the form, not the panel (which would take the text with it).
          e.preventDefault();
          this.cancel();
        } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          this.add();
        }
      } }));
    this.formError = h('p.error-text', { role: 'alert' });
    this.formEl = h('div.review-form',
      this.formLabel,
      h('p.muted.review-hint', 'Shift+click or Shift+Enter on another line number of this hunk extends the comment. Ctrl+Enter adds it.'),
      this.textEl, this.formError,
      h('div.row', h('button.btn.tiny.primary', { type: 'button', onclick: () => this.add() }, 'Add comment'),
        h('button.btn.tiny', { type: 'button', onclick: () => this.cancel() }, 'Cancel')));
  }

  /** The draft's comment joins the pending review; the focus goes back to its line. */
  add() {
    const d = this.draft;
    const body = this.textEl.value.trim();
    if (!d) return;
    if (!body) {
      this.formError.textContent = 'Write the comment first.';
      this.textEl.focus();
      return;
    }
    this.comments.push({ path: d.path, ...d.anchor, body });
    this.errorEl.textContent = '';
    this.close(d);
  }

  cancel() {
    if (this.draft) this.close(this.draft);
  }

  /** Closes the form and gives the focus to the line the comment began on. @param {{path: string, start: number, anchor: Anchor}} d */
  close(d) {
    this.draft = null;
    this.formEl.remove();
    this.refresh();
    this.focusLine(d.path, d.anchor.side, d.start);
  }

  /**
   * Focuses the comment button of a line, when its diff is open.
   * @param {string} path
   * @param {ReviewSide} side
   * @param {number} n
   */
  focusLine(path, side, n) {
    const sel = `button.ln[data-path="${CSS.escape(path)}"][data-${side}="${n}"]`;
    /** @type {HTMLElement | null} */ (this.root.querySelector(sel))?.focus();
  }

  // ---- the bar: the pending comments, a summary, Send ------------------------------

  buildBar() {
    const headId = `review-head-${this.sessionId}`;
    this.headEl = h('h4', { id: headId });
    this.listEl = h('ol.review-pending');
    this.summaryEl = /** @type {HTMLTextAreaElement} */ (h('textarea.field', { rows: 2, maxlength: MAX_CHARS, 'aria-label': 'Review summary (optional)', placeholder: 'Summary (optional)' }));
    this.sendBtn = h('button.btn.primary', { type: 'button', onclick: () => this.send('session') });
    // A Worker's change is the Driver's to judge: the review can go there instead.
    this.driverBtn = h('button.btn', { type: 'button', onclick: () => this.send('driver') }, 'Send to its Driver');
    this.pendingEl = h('div.review-pending-box', this.headEl, this.listEl, this.summaryEl, h('div.row', this.sendBtn, this.driverBtn));
    // Focusable, so the focus has a place to go when Send goes away with its comments.
    this.statusEl = h('p.review-status', { role: 'status', tabindex: '-1' });
    this.errorEl = h('p.error-text.review-error', { role: 'alert' });
    this.el = h('section.review-bar', { 'aria-labelledby': headId }, this.pendingEl, this.errorEl, this.statusEl);
  }

  renderBar() {
    const n = this.comments.length;
    this.pendingEl.hidden = !n;
    this.headEl.textContent = `Pending review · ${n} comment${n === 1 ? '' : 's'}`;
    clear(this.listEl).append(...this.comments.map((c) => h('li',
      h('code.review-at', commentAt(c)), h('span.review-excerpt', c.body.length > 80 ? `${c.body.slice(0, 80)}…` : c.body),
      this.removeButton(c))));
    this.sendBtn.textContent = `Send review (${n})`;
    this.sendBtn.disabled = this.sending;
    this.driverBtn.hidden = !this.isWorker();
    this.driverBtn.disabled = this.sending;
    if (n) this.statusEl.textContent = '';
  }

  /**
   * Sends the pending comments to the session's agent, or to its Driver; they stay
   * when the server refuses them.
   * @param {import('./wire.js').ReviewTarget} to
   */
  async send(to) {
    const comments = this.comments.slice();
    if (!comments.length || this.sending) return;
    /** @type {import('./wire.js').ChatReviewParams} */
    const params = { sessionId: this.sessionId, comments };
    if (to === 'driver') params.to = 'driver';
    if (this.summaryEl.value.trim()) params.summary = this.summaryEl.value.trim();
    this.sending = true;
    this.errorEl.textContent = '';
    this.renderBar();
    try {
      await this.conn.request('chat.review', params);
      this.comments = this.comments.filter((c) => !comments.includes(c));
      this.summaryEl.value = '';
      this.sending = false;
      this.refresh();
      this.statusEl.textContent = `Review sent: ${comments.length} comment${comments.length === 1 ? '' : 's'} went to ${to === 'driver' ? 'its Driver' : 'the agent'}.`;
      if (!this.comments.length) this.statusEl.focus();
    } catch (e) {
      const err = /** @type {import('./conn.js').RequestError} */ (e);
      this.sending = false;
      this.renderBar();
      this.errorEl.textContent = err.code === 'INVALID_ANCHOR'
        ? `Not sent: the diff changed, and some comments are on lines it no longer shows. ${err.message}`
        : `Not sent: ${err.message}`;
    }
  }
}

/**
 * "Ask another agent to review" in the Changes panel: a vendor, optional
 * instructions, and a button that sends `session.review-by`. The review runs in a
 * session of its own; the status names it with a link, and the review comes back to
 * this session's conversation later (its card, `reviewCard`).
 */
export class ReviewBy {
  /**
   * @param {object} deps
   * @param {string} deps.sessionId
   * @param {import('./conn.js').Conn} deps.conn
   * @param {() => import('./wire.js').VendorInfo[]} deps.vendors the vendors the page knows
   * @param {() => string} deps.ownVendor the session's own vendor (not the default reviewer)
   */
  constructor({ sessionId, conn, vendors, ownVendor }) {
    this.sessionId = sessionId;
    this.conn = conn;
    this.vendors = vendors;
    this.ownVendor = ownVendor;
    /** A request is on its way. */
    this.sending = false;
    const headId = `review-by-head-${sessionId}`;
    const vendorId = `review-by-vendor-${sessionId}`;
    const textId = `review-by-text-${sessionId}`;
    this.vendorEl = /** @type {HTMLSelectElement} */ (h('select.field', { id: vendorId, name: 'vendor' }));
    this.textEl = /** @type {HTMLTextAreaElement} */ (h('textarea.field', { id: textId, name: 'instructions', rows: 3, maxlength: MAX_CHARS,
      placeholder: 'What to look for (optional)',
      onkeydown: (/** @type {KeyboardEvent} */ e) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          this.send();
        }
      } }));
    this.sendBtn = h('button.btn', { type: 'button', onclick: () => this.send() }, 'Ask for a review');
    this.errorEl = h('p.error-text.review-by-error', { role: 'alert' });
    this.statusEl = h('p.review-by-status', { role: 'status' });
    this.el = h('section.review-by', { 'aria-labelledby': headId },
      h('h4', { id: headId }, 'Ask another agent to review'),
      h('p.muted.review-hint', 'A read-only session of that agent reviews these changes; its comments come back to this conversation.'),
      h('div.review-by-fields',
        h('label', { for: vendorId }, 'Reviewer'), this.vendorEl,
        h('label', { for: textId }, 'Instructions (optional)'), this.textEl),
      h('div.row', this.sendBtn),
      this.errorEl, this.statusEl);
    this.fill();
  }

  /** The installed vendors as options; the chosen one stays chosen. */
  fill() {
    const vendors = this.vendors().filter((v) => v.installed);
    const chosen = reviewerChoice(vendors, this.ownVendor(), this.vendorEl.value);
    const key = JSON.stringify(vendors.map((v) => [v.id, v.displayName]));
    if (this.vendorEl.dataset.key !== key) {
      this.vendorEl.dataset.key = key;
      clear(this.vendorEl).append(...vendors.map((v) => h('option', { value: v.id }, v.displayName)));
    }
    this.vendorEl.value = chosen;
    this.sendBtn.setAttribute('aria-disabled', String(this.sending || !chosen));
  }

  /** Starts the review; the status says so, or the error why not. */
  async send() {
    const vendor = this.vendorEl.value;
    if (this.sending || !vendor) return;
    /** @type {import('./wire.js').SessionReviewByParams} */
    const params = { sessionId: this.sessionId, vendor };
    if (this.textEl.value.trim()) params.instructions = this.textEl.value;
    this.sending = true;
    this.errorEl.textContent = '';
    clear(this.statusEl).append(`Asking ${vendor} for a review…`);
    this.fill();
    try {
      const r = await this.conn.request('session.review-by', params);
      this.textEl.value = '';
      clear(this.statusEl).append(`Review by ${vendor} started. `,
        h('a.review-by-open', { href: `#/s/${encodeURIComponent(r.reviewSessionId)}` }, 'Open the review session'));
    } catch (e) {
      // CONFLICT: nothing to review; UNKNOWN vendor: 422; the message says which.
      clear(this.statusEl);
      this.errorEl.textContent = `Not started: ${/** @type {Error} */ (e).message}`;
    } finally {
      this.sending = false;
      this.fill();
    }
  }
}
