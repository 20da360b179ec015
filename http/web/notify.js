// Attention: desktop notifications through the Notification API once the person has
// allowed them (a turn ended while they were not looking, a permission waits), and the
// tab title that counts the sessions waiting for them. What a session asks of its
// owner is the server's (`SessionInfo.attention`); the page only reports what it shows
// (`client.seen`, see App.reportSeen).

import { countedTitle } from './store.js';

/** @typedef {import('./store.js').Store} Store */

export class Attention {
  /** @param {Store} store */
  constructor(store) {
    this.store = store;
    /** The page's title without a count (the login page has its own). */
    this.base = 'tandem';
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
   * A turn of session `id` ended with `status`: notified when the tab is not visible.
   * @param {string} id
   * @param {string} status
   */
  turnEnded(id, status) {
    if (this.watching(id)) return;
    if (document.visibilityState !== 'visible') {
      this.notify(`${this.name(id)}: turn ${status}`, 'The agent has finished its turn.', id);
    }
  }

  /**
   * Session `id` waits for a permission answer: notified unless the person is
   * looking at it.
   * @param {string} id
   * @param {string} tool
   */
  permission(id, tool) {
    if (this.watching(id)) return;
    this.notify(`${this.name(id)}: permission needed`, `The agent asks to use ${tool}.`, id);
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

  /** The tab title counts the sessions that wait for the person (see attentionCount). */
  title() {
    const title = countedTitle(this.base, this.store.attentionCount());
    if (document.title !== title) document.title = title;
  }
}
