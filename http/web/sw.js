// tandem's service worker: keeps the app shell (the page, its scripts, styles, icons
// and manifest) so that the page opens when the server cannot be reached, and says
// so, instead of a browser error page.
//
// The server serves this file at /sw.js behind one line of its own,
// `self.TANDEM_SHELL = {build, paths}`: `build` hashes every file the binary embeds,
// so a new binary gives this script new bytes; the browser then installs the new
// worker, which fills a cache named after its build and deletes the older ones.
// Only the shell's paths are answered (from the cache first); everything else (the
// API, the socket, MCP, metrics, uploads) goes to the network untouched and is never
// cached.

/** @type {{build: string, paths: string[]}} */
const tandemShell = /** @type {any} */ (self).TANDEM_SHELL || { build: 'dev', paths: [] };
const SHELL_CACHE_PREFIX = 'tandem-shell-';
const shellCache = SHELL_CACHE_PREFIX + tandemShell.build;

/**
 * The shell path `url` names, or null when the request is not the shell's (another
 * origin, another path: `/api/…`, `/ws`, `/mcp`, `/metrics`). The query string does
 * not count: `/?token=…` is the page.
 * @param {string} url
 * @param {string} origin the worker's own origin
 * @param {string[]} paths
 * @returns {string | null}
 */
function shellPath(url, origin, paths) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.origin !== origin) return null;
  return paths.includes(u.pathname) ? u.pathname : null;
}

/**
 * The caches an activated worker of build cache `current` deletes: the shells of
 * other builds (and nothing that is not a shell).
 * @param {string[]} names
 * @param {string} current
 * @returns {string[]}
 */
function staleShellCaches(names, current) {
  return names.filter((n) => n.startsWith(SHELL_CACHE_PREFIX) && n !== current);
}

/** @type {any} */
const worker = self;

worker.addEventListener('install', (/** @type {any} */ e) => {
  // Straight from the server, not from the HTTP cache: this build's files exactly.
  const requests = tandemShell.paths.map((p) => new Request(p, { cache: 'reload' }));
  e.waitUntil(caches.open(shellCache)
    .then((cache) => cache.addAll(requests))
    .then(() => worker.skipWaiting()));
});

worker.addEventListener('activate', (/** @type {any} */ e) => {
  e.waitUntil(caches.keys()
    .then((names) => Promise.all(staleShellCaches(names, shellCache).map((n) => caches.delete(n))))
    .then(() => worker.clients.claim()));
});

worker.addEventListener('fetch', (/** @type {any} */ e) => {
  if (e.request.method !== 'GET') return;
  const path = shellPath(e.request.url, worker.location.origin, tandemShell.paths);
  if (!path) return;
  e.respondWith(fromShell(path, e.request));
});

/**
 * The cached shell file, else the network's answer (kept when it is a success).
 * @param {string} path
 * @param {Request} request
 * @returns {Promise<Response>}
 */
async function fromShell(path, request) {
  const cache = await caches.open(shellCache);
  const hit = await cache.match(path);
  if (hit) return hit;
  const resp = await fetch(request);
  if (resp.ok && resp.type === 'basic') await cache.put(path, resp.clone());
  return resp;
}

// ---- Web Push: a session needs its owner ----------------------------------------------
//
// The server sends (RFC 8291, at most 4 KB) `{sessionId, title, body, attention, url,
// requestId?, tag}`: `url` is the session's deep link (`/#/s/ID`), `requestId` names a
// permission that waits, `tag` (`tandem-ID`) makes a newer message replace an older
// one. A permission can be answered from the notification: this worker holds no token,
// so it hands the answer to a page of this origin, which sends it (notify.js).

/**
 * @typedef {{sessionId?: string, title?: string, body?: string, attention?: string,
 *   url?: string, requestId?: string, tag?: string}} PushPayload
 * @typedef {{url: string, sessionId: string | null, requestId: string | null}} NoticeData
 */

/**
 * What a push message shows: its title and the options of `showNotification`.
 * A message that is not the JSON above still shows something (a push must).
 * @param {string | null} text the message's data as text
 * @param {string} origin the worker's own origin
 * @returns {{title: string, options: NotificationOptions & {actions?: {action: string, title: string}[], renotify?: boolean}}}
 */
function pushNotice(text, origin) {
  /** @type {PushPayload} */
  let p = {};
  try {
    const parsed = text ? JSON.parse(text) : null;
    if (parsed && typeof parsed === 'object') p = parsed;
  } catch { /* shown as a generic notice */ }
  const str = (/** @type {unknown} */ v) => (typeof v === 'string' && v ? v : null);
  const sessionId = str(p.sessionId);
  const requestId = sessionId ? str(p.requestId) : null;
  const tag = str(p.tag) || (sessionId ? `tandem-${sessionId}` : 'tandem');
  /** @type {NoticeData} */
  const data = { url: deepLink(p.url, sessionId, origin), sessionId, requestId };
  return {
    title: str(p.title) || 'tandem',
    options: {
      body: str(p.body) || 'A session needs you.',
      tag,
      // A newer message of the same session replaces the older one, and still alerts
      // when something waits again.
      renotify: p.attention === 'needs_input' || p.attention === 'failed',
      icon: '/assets/icon-192.png',
      badge: '/assets/icon-192.png',
      data,
      actions: requestId ? [{ action: 'allow', title: 'Allow once' }, { action: 'deny', title: 'Deny' }] : [],
    },
  };
}

/**
 * The page's path for a session: the message's `url` when it is of this origin,
 * else `/#/s/ID`, else the page.
 * @param {unknown} url
 * @param {string | null} sessionId
 * @param {string} origin
 * @returns {string}
 */
function deepLink(url, sessionId, origin) {
  if (typeof url === 'string' && url) {
    try {
      const u = new URL(url, origin);
      if (u.origin === origin) return u.pathname + u.search + u.hash;
    } catch { /* not a URL: the session's own link below */ }
  }
  return sessionId ? `/#/s/${encodeURIComponent(sessionId)}` : '/';
}

/** The cache that holds answers chosen on a notification until a page opened for them sends them. */
const NOTICE_CACHE = 'tandem-notices';

/**
 * The URL a click opens: the deep link; with an answer to a permission, also a
 * one-time key under which this worker keeps the answer (`/?notice=KEY#/s/ID`). The
 * address itself carries no answer: a link made elsewhere cannot answer anything.
 * @param {NoticeData} data
 * @param {string | null} notice the key, or null
 * @param {string} origin
 * @returns {string}
 */
function clickTarget(data, notice, origin) {
  const u = new URL(data.url || '/', origin);
  if (notice) u.searchParams.set('notice', notice);
  return u.href;
}

worker.addEventListener('push', (/** @type {any} */ e) => {
  let text = null;
  try {
    text = e.data ? e.data.text() : null;
  } catch { /* no readable data */ }
  const { title, options } = pushNotice(text, worker.location.origin);
  e.waitUntil(worker.registration.showNotification(title, options));
});

worker.addEventListener('notificationclick', (/** @type {any} */ e) => {
  const n = e.notification;
  n.close();
  const answer = e.action === 'allow' || e.action === 'deny' ? e.action : null;
  e.waitUntil(openFromNotice(/** @type {NoticeData} */ (n.data || { url: '/', sessionId: null, requestId: null }), answer));
});

/**
 * Focuses a page of this origin (the focused one first) and tells it what to show
 * and answer; opens the deep link when there is none.
 * @param {NoticeData} data
 * @param {string | null} answer
 */
async function openFromNotice(data, answer) {
  const origin = worker.location.origin;
  const all = await worker.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const pages = all.filter((/** @type {any} */ c) => new URL(c.url).origin === origin);
  const page = pages.find((/** @type {any} */ c) => c.focused) || pages[0];
  if (page) {
    await page.focus().catch(() => {});
    page.postMessage({ type: 'tandem.notice', url: data.url, sessionId: data.sessionId, requestId: answer ? data.requestId : null, answer });
    return;
  }
  let notice = null;
  if (answer && data.requestId && data.sessionId) {
    notice = crypto.randomUUID();
    const cache = await caches.open(NOTICE_CACHE);
    await cache.put(`/notice/${notice}`, new Response(JSON.stringify({ sessionId: data.sessionId, requestId: data.requestId, answer, at: Date.now() }),
      { headers: { 'content-type': 'application/json' } }));
  }
  await worker.clients.openWindow(clickTarget(data, notice, origin));
}
