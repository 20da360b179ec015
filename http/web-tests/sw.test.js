// The service worker (http/web/sw.js, a classic worker script) run in a bare context
// with a fake cache store and network: which requests it answers (the shell's paths
// only, never /api, /ws, /mcp or /metrics), that it answers them from the cache of its
// build, and that a new build's worker drops the old cache.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const SOURCE = readFileSync(new URL('../web/sw.js', import.meta.url), 'utf8');
const ORIGIN = 'http://127.0.0.1:4000';
const PATHS = ['/', '/manifest.webmanifest', '/assets/app.js', '/assets/style.css'];

/** A fake response: `body` and `ok`. */
const response = (body, ok = true) => ({ body, ok, type: 'basic', clone() { return response(body, ok); } });

/**
 * Runs sw.js for build `build` as the server serves it, over `store` (cache name ->
 * Map(path -> response)). Network answers come from `network` (path -> body).
 */
function load(build, store = new Map(), network = {}) {
  const handlers = {};
  const fetched = [];
  const ctx = {
    URL,
    Request: class { constructor(url, init) { this.url = new URL(url, ORIGIN).href; this.method = 'GET'; this.init = init; } },
    location: { origin: ORIGIN },
    addEventListener: (type, fn) => { handlers[type] = fn; },
    skipWaiting: async () => { ctx.skipped = true; },
    clients: { claim: async () => { ctx.claimed = true; } },
    fetch: async (req) => {
      const path = new URL(req.url).pathname;
      fetched.push(path);
      if (!(path in network)) throw new TypeError('Failed to fetch');
      return response(network[path]);
    },
    caches: {
      open: async (name) => {
        if (!store.has(name)) store.set(name, new Map());
        const c = store.get(name);
        return {
          match: async (path) => c.get(path),
          put: async (path, resp) => { c.set(path, resp); },
          addAll: async (reqs) => {
            for (const r of reqs) c.set(new URL(r.url).pathname, await ctx.fetch(r));
          },
        };
      },
      keys: async () => [...store.keys()],
      delete: async (name) => store.delete(name),
    },
  };
  ctx.self = ctx;
  vm.createContext(ctx);
  vm.runInContext(`self.TANDEM_SHELL = ${JSON.stringify({ build, paths: PATHS })};\n${SOURCE}`, ctx);
  return { ctx, handlers, fetched, store };
}

/** Fires an extendable event and waits for what it extends itself with. */
async function fire(handler, extra = {}) {
  let done = Promise.resolve();
  let answer = null;
  handler({
    ...extra,
    waitUntil: (p) => { done = p; },
    respondWith: (p) => { answer = p; },
  });
  await done;
  return answer;
}

const get = (path, method = 'GET') => ({ request: { url: new URL(path, ORIGIN).href, method } });

test('only the shell is answered; the API, the socket, MCP and metrics are not', () => {
  const { ctx } = load('b1');
  const at = (url) => ctx.shellPath(url, ORIGIN, PATHS);
  assert.equal(at(`${ORIGIN}/`), '/');
  assert.equal(at(`${ORIGIN}/?token=abc#/s/x`), '/', 'the query string and the hash do not count');
  assert.equal(at(`${ORIGIN}/assets/app.js`), '/assets/app.js');
  assert.equal(at(`${ORIGIN}/manifest.webmanifest`), '/manifest.webmanifest');
  for (const p of ['/api/v1/sessions', '/api/v1/vendors', '/ws', '/ws?token=x', '/mcp', '/metrics', '/assets/unknown.js', '/sw.js', '/index.html']) {
    assert.equal(at(`${ORIGIN}${p}`), null, p);
  }
  assert.equal(at('http://elsewhere.example/'), null, 'another origin');
  assert.equal(at('http://127.0.0.1:4001/assets/app.js'), null, 'another port');
  assert.equal(at('not a url'), null);
});

test('a new build drops the shells of other builds and nothing else', () => {
  const { ctx } = load('b2');
  assert.deepEqual(ctx.staleShellCaches(['tandem-shell-b1', 'tandem-shell-b2', 'other', 'tandem-shell-b0'], 'tandem-shell-b2'), ['tandem-shell-b1', 'tandem-shell-b0']);
  assert.deepEqual(ctx.staleShellCaches([], 'tandem-shell-b2'), []);
});

test('install keeps the shell, activate takes over and clears the old build', async () => {
  const network = { '/': 'page v2', '/manifest.webmanifest': '{}', '/assets/app.js': 'app v2', '/assets/style.css': 'css v2' };
  const store = new Map([['tandem-shell-b1', new Map([['/', response('page v1')]])], ['someone-else', new Map()]]);
  const { ctx, handlers } = load('b2', store, network);
  await fire(handlers.install);
  assert.equal(ctx.skipped, true);
  assert.deepEqual([...store.get('tandem-shell-b2').keys()].sort(), [...PATHS].sort());
  await fire(handlers.activate);
  assert.equal(ctx.claimed, true);
  assert.deepEqual([...store.keys()].sort(), ['someone-else', 'tandem-shell-b2']);
});

test('the shell comes from the cache first; everything else is left to the network', async () => {
  const network = { '/': 'page', '/manifest.webmanifest': '{}', '/assets/app.js': 'app', '/assets/style.css': 'css', '/api/v1/vendors': '[]' };
  const { handlers, fetched, store } = load('b3', new Map(), network);
  await fire(handlers.install);
  fetched.length = 0;
  // Offline now: the shell still answers, from the cache alone.
  for (const k of Object.keys(network)) delete network[k];
  const page = await fire(handlers.fetch, get('/?token=t'));
  assert.equal((await page).body, 'page');
  assert.equal((await fire(handlers.fetch, get('/assets/app.js'))).body, 'app');
  assert.deepEqual(fetched, [], 'no network for a kept file');
  // Not the shell: the worker does not answer, so the browser goes to the network.
  for (const p of ['/api/v1/vendors', '/ws', '/mcp', '/metrics']) {
    assert.equal(await fire(handlers.fetch, get(p)), null, p);
  }
  assert.equal(await fire(handlers.fetch, get('/', 'POST')), null, 'only GET');
  assert.deepEqual([...store.get('tandem-shell-b3').keys()].filter((k) => !PATHS.includes(k)), [], 'nothing else was kept');
});

test('a shell file missing from the cache is fetched and kept', async () => {
  const network = { '/assets/app.js': 'app' };
  const { handlers, fetched, store } = load('b4', new Map(), network);
  assert.equal((await fire(handlers.fetch, get('/assets/app.js'))).body, 'app');
  assert.deepEqual(fetched, ['/assets/app.js']);
  assert.equal(store.get('tandem-shell-b4').get('/assets/app.js').body, 'app');
  await assert.rejects(fire(handlers.fetch, get('/assets/style.css')).then((p) => p), /Failed to fetch/, 'offline and not kept: the network error');
});
