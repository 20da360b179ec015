// Attention: which sessions need the person (a turn ended while they were not
// looking, a permission waits), counted in the tab title, and desktop notifications
// through the Notification API once the person has allowed them.

/** @typedef {import('./store.js').Store} Store */

export class Attention {
  /** @param {Store} store */
  constructor(store) {
    this.store = store;
    this.store.on('attention', () => this.title());
    document.addEventListener('visibilitychange', () => this.seen());
  }

  /** True when the person can see session `id` now. @param {string} id */
  watching(id) {
    return document.visibilityState === 'visible' && this.store.shown().includes(id);
  }

  /** Whether the person allowed notifications. */
  static allowed() {
    return typeof Notification !== 'undefined' && Notification.permission === 'granted';
  }

  /** Asks for consent; resolves with the browser's answer. */
  static async ask() {
    if (typeof Notification === 'undefined') return 'unsupported';
    return Notification.requestPermission();
  }

  /**
   * A turn of session `id` ended with `status`: counted until seen, and notified
   * when the tab is not visible.
   * @param {string} id
   * @param {string} status
   */
  turnEnded(id, status) {
    if (this.watching(id)) return;
    this.store.setAttention(id, true);
    if (document.visibilityState !== 'visible') {
      this.notify(`${this.name(id)}: turn ${status}`, 'The agent has finished its turn.', id);
    }
  }

  /**
   * Session `id` waits for a permission answer: counted and notified unless the
   * person is looking at it.
   * @param {string} id
   * @param {string} tool
   */
  permission(id, tool) {
    if (this.watching(id)) return;
    this.store.setAttention(id, true);
    this.notify(`${this.name(id)}: permission needed`, `The agent asks to use ${tool}.`, id);
  }

  /** Clears what the person can now see. */
  seen() {
    if (document.visibilityState !== 'visible') return;
    for (const id of this.store.shown()) this.store.setAttention(id, false);
  }

  /** @param {string} id */
  name(id) {
    return this.store.sessions.get(id)?.title || id;
  }

  /** @param {string} title @param {string} body @param {string} id */
  notify(title, body, id) {
    if (!Attention.allowed()) return;
    const n = new Notification(title, { body, tag: `tandem-${id}` });
    n.onclick = () => {
      window.focus();
      location.hash = `#/s/${id}`;
      n.close();
    };
  }

  /** The tab title counts the sessions that need attention. */
  title() {
    const n = this.store.attention.size;
    document.title = n ? `(${n}) tandem` : 'tandem';
  }
}
