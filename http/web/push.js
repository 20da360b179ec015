// Web Push for this device: a subscription made through the service worker with the
// server's VAPID key (`push.key`) and registered for the user (`push.subscribe`), so
// the server reaches the device when a session needs the user and no page shows it.
// The service worker (sw.js) shows what arrives.

/** @typedef {import('./conn.js').Conn} Conn */

/** True where this page can subscribe: a service worker, the Push API, a secure origin. */
export function pushSupported() {
  return window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window;
}

/**
 * The bytes of base64url `text` (the VAPID key as the server gives it).
 * @param {string} text
 */
function fromBase64Url(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/**
 * What to call this device in the user's lists (push devices, paired devices): its
 * platform, if the browser says.
 */
export function deviceLabel() {
  const nav = /** @type {Navigator & {userAgentData?: {platform?: string, mobile?: boolean}}} */ (navigator);
  const data = nav.userAgentData;
  if (data?.platform) return `${data.platform}${data.mobile ? ' phone' : ''} browser`;
  if (/iPhone|iPad/.test(navigator.userAgent)) return 'iPhone browser';
  return /Mobi|Android/.test(navigator.userAgent) ? 'Phone browser' : 'Browser';
}

/**
 * `promise`, or a rejection saying `what` did not happen within `ms`.
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
function within(promise, ms, what) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms)),
  ]);
}

/**
 * Subscribes this device (or renews its subscription) and registers it for the user.
 * Rejects with the browser's or the server's reason.
 * @param {Conn} conn
 * @returns {Promise<import('./wire.js').PushSubscription>}
 */
export async function subscribeDevice(conn) {
  const registration = await within(navigator.serviceWorker.ready, 10000, 'no service worker was ready');
  const { publicKey } = await conn.request('push.key', {});
  const key = fromBase64Url(publicKey);
  let subscription = await registration.pushManager.getSubscription();
  // A subscription made for another server key cannot be used: make a new one.
  const old = subscription?.options.applicationServerKey;
  if (subscription && old && new Uint8Array(old).join() !== key.join()) {
    await subscription.unsubscribe();
    subscription = null;
  }
  if (!subscription) {
    subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  }
  const json = subscription.toJSON();
  const answer = await conn.request('push.subscribe', {
    endpoint: json.endpoint || subscription.endpoint,
    keys: { p256dh: json.keys?.p256dh || '', auth: json.keys?.auth || '' },
    label: deviceLabel(),
  });
  return answer.subscription;
}
