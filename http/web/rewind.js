// Edit and resend in a conversation: the "Edit" action on the user messages of ended
// turns (`chat.edit-send`), and superseded branches shown collapsed with their turn
// count, expandable. A branch is known from the session's `superseded` list (so a page
// of older events is collapsed even without its `history_rewound` event) and from the
// `history_rewound` events that arrive live.

import { h } from './dom.js';

/**
 * @typedef {import('./wire.js').SupersededRange} SupersededRange
 * @typedef {{seq: number, el: HTMLElement, type: string, turnId?: string, editBtn?: HTMLButtonElement, text?: string, dead?: boolean}} Item
 */

/** What one conversation view keeps about rewinds. */
export class Rewinds {
  /**
   * @param {string} sessionId
   * @param {(method: string, params: object) => Promise<any>} request the WebSocket request function
   * @param {(text: string, kind?: string) => void} note shows a message under the composer
   */
  constructor(sessionId, request, note) {
    this.sessionId = sessionId;
    this.request = request;
    this.note = note;
    /** Known ranges by the seq of their `history_rewound`. @type {Map<number, SupersededRange>} */
    this.ranges = new Map();
    /** Ranges a person expanded, by `rewoundAt`. @type {Set<number>} */
    this.expanded = new Set();
    /** Rendered items by seq, to (un)collapse them. @type {Map<number, Item>} */
    this.items = new Map();
    /** User messages by turn, until their turn ends. @type {Map<string, Item>} */
    this.waiting = new Map();
    /** Turns known to have ended (their end may be rendered before the message is paged in). @type {Set<string>} */
    this.ended = new Set();
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
    if (item.editBtn) item.editBtn.hidden = over.length > 0 || !(item.turnId && this.ended.has(item.turnId));
  }

  applyAll() {
    for (const item of this.items.values()) {
      if (item.dead) this.items.delete(item.seq);
      else this.apply(item);
    }
  }

  /**
   * A rendered item: collapsed if superseded; a user message gets its Edit action.
   * @param {Item} item
   * @param {any} ev the event it shows
   */
  added(item, ev) {
    this.items.set(item.seq, item);
    if (ev.kind === 'user_message' && !ev.internal && !ev.delegatedBy && ev.turnId) {
      item.text = ev.text;
      const btn = h('button.btn.tiny.edit', {
        type: 'button',
        title: 'Edit this message and run the conversation again from here',
        'aria-label': 'Edit this message',
        hidden: true,
        onclick: () => this.startEdit(item),
      }, 'Edit');
      item.editBtn = /** @type {HTMLButtonElement} */ (btn);
      item.el.querySelector('.who')?.append(btn);
      this.waiting.set(ev.turnId, item);
    }
    this.apply(item);
  }

  /** Any event: turn ends enable Edit, rewinds collapse their branch. @param {any} ev */
  seen(ev) {
    if (ev.kind === 'turn_completed' && ev.turnId) {
      this.ended.add(ev.turnId);
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

  /** Replaces a message's text with an editor. @param {Item} item */
  startEdit(item) {
    const text = /** @type {HTMLElement | null} */ (item.el.querySelector('.text'));
    if (!text || item.el.querySelector('form.edit-form')) return;
    const area = /** @type {HTMLTextAreaElement} */ (h('textarea.input.edit-input', { rows: 3, 'aria-label': 'Edited message' }));
    area.value = item.text || '';
    const cancel = () => { form.remove(); text.hidden = false; item.editBtn?.focus(); };
    const form = h('form.edit-form', {
      onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); this.send(item, area.value, cancel); },
    }, area, h('div.row',
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
   * @param {() => void} done closes the editor
   */
  async send(item, content, done) {
    if (!content.trim()) return;
    try {
      await this.request('chat.edit-send', { sessionId: this.sessionId, anchorSeq: item.seq, content });
      done();
      this.note('');
    } catch (err) {
      this.note(`Not edited: ${/** @type {Error} */ (err).message}`, 'error');
    }
  }
}
