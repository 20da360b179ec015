// Going back in a conversation: the "Edit" action on the user messages of ended turns
// (`chat.edit-send`, optionally with the files restored), the "Fork" action beside it
// (`session.fork`), and superseded branches shown collapsed with their turn count,
// expandable. A branch is known from the session's `superseded` list (so a page of
// older events is collapsed even without its `history_rewound` event) and from the
// `history_rewound` events that arrive live. The files' checkpoints and restores are
// in checkpoints.js.

import { h } from './dom.js';
import { formDialog } from './dialogs.js';
import { Checkpoints } from './checkpoints.js';

/**
 * @typedef {import('./wire.js').SupersededRange} SupersededRange
 * @typedef {import('./wire.js').SessionInfo} SessionInfo
 * @typedef {{seq: number, el: HTMLElement, type: string, turnId?: string, editBtn?: HTMLButtonElement, forkBtn?: HTMLButtonElement, text?: string, dead?: boolean}} Item
 */

/**
 * What the view gives its rewinds.
 * @typedef {object} Deps
 * @property {string} sessionId
 * @property {(method: string, params: object) => Promise<any>} request the WebSocket request function
 * @property {(text: string, kind?: string) => void} note shows a message under the composer
 * @property {() => boolean} busy whether the session runs a turn now
 * @property {() => string} title the session's title
 * @property {(session: SessionInfo) => void} open shows a session just made (a fork)
 */

/** What one conversation view keeps about rewinds. */
export class Rewinds {
  /** @param {Deps} deps */
  constructor(deps) {
    this.deps = deps;
    this.sessionId = deps.sessionId;
    /** The checkpoints and restores of the files. */
    this.checkpoints = new Checkpoints(deps);
    /** Known ranges by the seq of their `history_rewound`. @type {Map<number, SupersededRange>} */
    this.ranges = new Map();
    /** Ranges a person expanded, by `rewoundAt`. @type {Set<number>} */
    this.expanded = new Set();
    /** Rendered items by seq, to (un)collapse them. @type {Map<number, Item>} */
    this.items = new Map();
    /** User messages by turn, until their turn ends. @type {Map<string, Item>} */
    this.waiting = new Map();
    /** Turns known to have ended (their end may be rendered before the message is
     * paged in), with the seq of their `turn_completed`. @type {Map<string, number>} */
    this.ended = new Map();
  }

  /** Takes the ranges of the session's metadata. @param {SupersededRange[] | undefined} list */
  learn(list) {
    let changed = false;
    for (const r of list || []) {
      if (!this.ranges.has(r.rewoundAt)) {
        this.ranges.set(r.rewoundAt, r);
        changed = true;
      }
    }
    if (changed) this.applyAll();
  }

  /** @param {number} seq */
  covering(seq) {
    return [...this.ranges.values()].filter((r) => r.supersededFrom <= seq && seq <= r.supersededTo);
  }

  /** Hidden unless every branch holding it is expanded; superseded ones are dimmed. @param {Item} item */
  apply(item) {
    const over = this.covering(item.seq);
    item.el.classList.toggle('superseded', over.length > 0);
    item.el.hidden = over.some((r) => !this.expanded.has(r.rewoundAt));
    const offer = branchable(item.turnId, this.ended, over.length > 0);
    if (item.editBtn) item.editBtn.hidden = !offer;
    if (item.forkBtn) item.forkBtn.hidden = !offer;
  }

  applyAll() {
    for (const item of this.items.values()) {
      if (item.dead) this.items.delete(item.seq);
      else this.apply(item);
    }
  }

  /**
   * A rendered item: collapsed if superseded; a user message gets its Edit and Fork
   * actions.
   * @param {Item} item
   * @param {any} ev the event it shows
   */
  added(item, ev) {
    this.items.set(item.seq, item);
    if (ev.kind === 'user_message' && !ev.internal && !ev.delegatedBy && ev.turnId) {
      item.text = ev.text;
      item.editBtn = /** @type {HTMLButtonElement} */ (h('button.btn.tiny.edit', {
        type: 'button',
        title: 'Edit this message and run the conversation again from here',
        'aria-label': 'Edit this message',
        hidden: true,
        onclick: () => this.startEdit(item),
      }, 'Edit'));
      item.forkBtn = /** @type {HTMLButtonElement} */ (h('button.btn.tiny.fork', {
        type: 'button',
        title: 'Continue this conversation up to here in a new session; this one stays as it is',
        'aria-label': 'Fork from this message',
        hidden: true,
        onclick: () => this.startFork(item),
      }, 'Fork'));
      item.el.querySelector('.who')?.append(item.editBtn, item.forkBtn);
      this.waiting.set(ev.turnId, item);
    }
    this.apply(item);
  }

  /** Any event: turn ends enable Edit and Fork, rewinds collapse their branch. @param {any} ev */
  seen(ev) {
    this.checkpoints.seen(ev);
    if (ev.kind === 'turn_completed' && ev.turnId) {
      this.ended.set(ev.turnId, ev.seq);
      const item = this.waiting.get(ev.turnId);
      if (item) {
        this.waiting.delete(ev.turnId);
        this.apply(item);
      }
    } else if (ev.kind === 'history_rewound') {
      this.learn([{ anchorSeq: ev.anchorSeq, supersededFrom: ev.supersededFrom, supersededTo: ev.supersededTo, turns: ev.turns, rewoundAt: ev.seq }]);
    }
  }

  /**
   * The line standing for a collapsed branch, with its toggle.
   * @param {any} ev a `history_rewound` event
   */
  line(ev) {
    const n = ev.turns;
    const label = `Earlier branch: ${n} turn${n === 1 ? '' : 's'}, replaced by an edit`;
    const btn = h('button.btn.link.branch-toggle', { type: 'button', 'aria-expanded': 'false' }, 'Show');
    btn.onclick = () => {
      const open = !this.expanded.has(ev.seq);
      if (open) this.expanded.add(ev.seq);
      else this.expanded.delete(ev.seq);
      btn.textContent = open ? 'Hide' : 'Show';
      btn.setAttribute('aria-expanded', String(open));
      this.applyAll();
    };
    return h('div.line-event.rewound', h('span', `↶ ${label}`), btn);
  }

  /**
   * Replaces a message's text with an editor. "Also restore files" starts checked
   * when a checkpoint precedes the message's turn, so the restore the server would
   * make exists (else it refuses with `NO_SUCH_CHECKPOINT`).
   * @param {Item} item
   */
  startEdit(item) {
    const text = /** @type {HTMLElement | null} */ (item.el.querySelector('.text'));
    if (!text || item.el.querySelector('form.edit-form')) return;
    const area = /** @type {HTMLTextAreaElement} */ (h('textarea.input.edit-input', { rows: 3, 'aria-label': 'Edited message' }));
    area.value = item.text || '';
    let touched = false;
    const restore = /** @type {HTMLInputElement} */ (h('input.restore-files', { type: 'checkbox', name: 'restoreFiles', onchange: () => { touched = true; } }));
    this.checkpoints.before(item.turnId || '', this.ended.get(item.turnId || '')).then((yes) => {
      if (!touched) restore.checked = yes;
    });
    const cancel = () => { form.remove(); text.hidden = false; item.editBtn?.focus(); };
    const form = h('form.edit-form', {
      onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); this.send(item, area.value, restore.checked, cancel); },
    }, area, h('div.row',
      h('label.check', { title: 'Put the files back as they were when this message’s turn started' }, restore, 'Also restore files'),
      h('button.btn.primary.tiny', { type: 'submit' }, 'Send edit'),
      h('button.btn.tiny', { type: 'button', onclick: cancel }, 'Cancel')));
    area.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); cancel(); }
      if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
    });
    text.hidden = true;
    text.after(form);
    area.focus();
  }

  /**
   * @param {Item} item
   * @param {string} content
   * @param {boolean} restoreFiles put the files back first
   * @param {() => void} done closes the editor
   */
  async send(item, content, restoreFiles, done) {
    if (!content.trim()) return;
    /** @type {import('./wire.js').ChatEditSendParams} */
    const params = { sessionId: this.sessionId, anchorSeq: item.seq, content };
    if (restoreFiles) params.restoreFiles = true;
    try {
      await this.deps.request('chat.edit-send', params);
      done();
      this.deps.note('');
    } catch (err) {
      this.deps.note(`Not edited: ${/** @type {Error} */ (err).message}`, 'error');
    }
  }

  /**
   * Asks for the fork's title (optional), forks at the message and opens the fork.
   * @param {Item} item
   */
  startFork(item) {
    const title = /** @type {HTMLInputElement} */ (h('input.field', { type: 'text', name: 'title', maxlength: 200, placeholder: `${this.deps.title()} · fork` }));
    const d = formDialog({
      title: 'Fork the conversation',
      className: 'fork',
      intro: 'A new session starts with this conversation up to the end of this message’s turn. This session stays as it is.',
      fields: [['Title (optional)', title]],
      submitLabel: 'Fork',
      submit: async () => {
        /** @type {import('./wire.js').SessionForkParams} */
        const params = { sessionId: this.sessionId, anchorSeq: item.seq };
        if (title.value.trim()) params.title = title.value.trim();
        const r = await this.deps.request('session.fork', params);
        // Closed first: the new session's composer cannot take the focus while a
        // modal dialog makes the rest of the page inert.
        d.close();
        this.deps.open(r.session);
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }
}

/**
 * Whether a user message offers Edit and Fork: its turn ended and no edit superseded
 * it.
 * @param {string | undefined} turnId
 * @param {Map<string, number>} ended turns that ended
 * @param {boolean} superseded
 */
export function branchable(turnId, ended, superseded) {
  return !superseded && !!turnId && ended.has(turnId);
}

/** "Forked from “Title” after 2 turns". @param {{sourceTitle: string, sourceSessionId: string, turns: number, conversation: string}} ev */
export function forkedText(ev) {
  const how = ev.conversation === 'transcript' ? ' · given to the agent as a transcript' : '';
  return `Forked from “${ev.sourceTitle || ev.sourceSessionId}” after ${ev.turns} turn${ev.turns === 1 ? '' : 's'}${how}`;
}
