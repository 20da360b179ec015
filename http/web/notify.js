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

// ---- answers chosen on a push notification (sw.js) -----------------------------------

/**
 * What the service worker hands over from a notification: the session to show and,
 * when an action ("Allow once", "Deny") was chosen, the permission's answer.
 * @typedef {{sessionId: string, requestId: string | null, answer: 'allow' | 'deny' | null}} Notice
 */

/** The service worker's cache of answers waiting for a page (sw.js: NOTICE_CACHE). */
const NOTICE_CACHE = 'tandem-notices';
/** An answer kept longer than this is not sent: the person chose it too long ago. */
const NOTICE_TTL_MS = 5 * 60 * 1000;

/**
 * @param {any} v
 * @returns {Notice | null}
 */
function asNotice(v) {
  if (!v || typeof v.sessionId !== 'string' || !v.sessionId) return null;
  const answer = v.answer === 'allow' || v.answer === 'deny' ? v.answer : null;
  const requestId = answer && typeof v.requestId === 'string' && v.requestId ? v.requestId : null;
  return { sessionId: v.sessionId, requestId, answer: requestId ? answer : null };
}

/**
 * The answer a page opened from a notification was opened for: the worker kept it
 * under the one-time key in the address (`?notice=KEY`), which is dropped from the
 * address and from the cache either way. Null when there is none (or it is stale):
 * the address alone never answers anything.
 * @returns {Promise<Notice | null>}
 */
export async function takeNotice() {
  const params = new URLSearchParams(location.search);
  const key = params.get('notice');
  if (!key) return null;
  params.delete('notice');
  const rest = params.toString();
  history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  if (typeof caches === 'undefined') return null;
  try {
    const cache = await caches.open(NOTICE_CACHE);
    const path = `/notice/${encodeURIComponent(key)}`;
    const hit = await cache.match(path);
    if (!hit) return null;
    await cache.delete(path);
    const kept = await hit.json();
    if (!(Date.now() - Number(kept.at) < NOTICE_TTL_MS)) return null;
    return asNotice(kept);
  } catch {
    return null;
  }
}

/**
 * Calls `onNotice` for each notification click the service worker passes to this
 * page (only the worker can post on `navigator.serviceWorker`).
 * @param {(n: Notice) => void} onNotice
 */
export function listenForNotices(onNotice) {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (e) => {
    if (e.data?.type !== 'tandem.notice') return;
    const n = asNotice(e.data);
    if (n) onNotice(n);
  });
}

/**
 * Shows the notice's session and sends its answer, if any: through the permission's
 * card once the session's view holds it (the card then says what was answered), else
 * with the same `chat.permission-response` the card sends.
 * @param {import('./app.js').App} app
 * @param {Notice} n
 */
export async function openNotice(app, n) {
  const hash = `#/s/${encodeURIComponent(n.sessionId)}`;
  if (location.hash !== hash) location.hash = hash;
  if (!n.answer || !n.requestId) return;
  const allow = n.answer === 'allow';
  // The card comes with the view's subscription (the request's event, or the
  // subscription's pending requests): wait for it, or for the subscription to have
  // come without it, at most 20 s.
  /** @type {any} */
  let card = null;
  const until = Date.now() + 20000;
  let subscribed = 0;
  for (;;) {
    const view = app.views.get(n.sessionId);
    card = view?.perms.get(n.requestId) || null;
    if (card || Date.now() > until) break;
    if (view && view.subscribedAt !== Infinity) {
      subscribed = subscribed || Date.now();
      if (Date.now() - subscribed > 1500) break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (card?.respond && !card.closed && card.answer === undefined) {
    card.respond({ label: allow ? 'Allow' : 'Deny', allow });
    app.toast(allow ? 'Allowed once, from the notification' : 'Denied, from the notification');
    return;
  }
  if (card) {
    app.toast('That permission was already answered.', 'error');
    return;
  }
  try {
    await app.conn.request('chat.permission-response', { sessionId: n.sessionId, requestId: n.requestId, allow });
    app.toast(allow ? 'Allowed once, from the notification' : 'Denied, from the notification');
  } catch (err) {
    const e = /** @type {any} */ (err);
    app.toast(e?.code === 'NO_SUCH_PERMISSION' ? 'That permission is no longer waiting.' : `Answer not sent: ${e?.message}`, 'error');
  }
}
