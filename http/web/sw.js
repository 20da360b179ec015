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
