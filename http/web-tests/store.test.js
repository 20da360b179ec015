import test from 'node:test';
import assert from 'node:assert/strict';
import { Store, layoutFor, parseRoute, tree, formatUsage, shownStatus, statusText } from '../web/store.js';

const session = (id, extra = {}) => ({ id, title: id, vendor: 'scripted', model: '', effort: '', status: 'idle', lastActivity: 1, backgroundTasks: [], ...extra });

test('an upsert that changes nothing notifies no one', () => {
  const store = new Store();
  const seen = [];
  store.on('session', (id) => seen.push(id));
  assert.equal(store.upsertSession(session('a')), true);
  assert.equal(store.upsertSession(session('a')), false);
  assert.equal(store.upsertSession(session('a', { status: 'running' })), true);
  assert.deepEqual(seen, ['a', 'a']);
  assert.equal(store.runningCount(), 1);
});

test('the layout is a tagged object chosen from the route and the pairs', () => {
  const store = new Store();
  assert.deepEqual(layoutFor(parseRoute('#/s/a'), store), { kind: 'loading', id: 'a' });
  store.listComplete = true;
  assert.deepEqual(layoutFor(parseRoute('#/s/a'), store), { kind: 'missing', id: 'a' });
  store.upsertSession(session('d', { pairId: 'p' }));
  store.upsertSession(session('w', { pairId: 'p' }));
  store.upsertSession(session('x'));
  store.setPairs([{ pairId: 'p', driverId: 'd', workerId: 'w', createdAt: 1, state: 'active' }]);
  assert.deepEqual(layoutFor(parseRoute('#/s/w'), store), { kind: 'pair', driverId: 'd', workerId: 'w' });
  assert.deepEqual(layoutFor(parseRoute('#/s/x/with/d'), store), { kind: 'side', left: 'x', right: 'd' });
  assert.deepEqual(layoutFor(parseRoute('#/'), store), { kind: 'none' });
  let changes = 0;
  store.on('layout', () => changes++);
  store.setLayout({ kind: 'one', id: 'x' });
  store.setLayout({ kind: 'one', id: 'x' });
  assert.equal(changes, 1);
  assert.deepEqual(store.shown(), ['x']);
});

test('the tree puts Workers and children under their Driver or parent', () => {
  const store = new Store();
  store.upsertSession(session('d', { lastActivity: 5 }));
  store.upsertSession(session('w', { lastActivity: 9 }));
  store.upsertSession(session('c', { parentId: 'd', lastActivity: 7 }));
  store.setPairs([{ pairId: 'p', driverId: 'd', workerId: 'w', createdAt: 1, state: 'active' }]);
  const t = tree(store);
  assert.deepEqual(t.roots.map((s) => s.id), ['d']);
  assert.deepEqual(t.children.get('d').map((s) => s.id), ['w', 'c']);
});

test('queues are kept per session and only changes notify', () => {
  const store = new Store();
  let n = 0;
  store.on('queue', () => n++);
  store.setQueue('a', [{ queueId: 'q_1', text: 'hi' }]);
  store.setQueue('a', [{ queueId: 'q_1', text: 'hi' }]);
  store.setQueue('a', []);
  assert.equal(n, 2);
});

test('a turn\'s usage and a sum of them read alike', () => {
  assert.equal(formatUsage({ inputTokens: 1200, cachedInputTokens: 0, outputTokens: 30, costUsd: 0.5 }), '1.2k in · 30 out · $0.50');
  assert.equal(formatUsage({ turns: 2, inputTokens: 100, cachedInputTokens: 0, outputTokens: 20 }), '100 in · 20 out');
  assert.equal(formatUsage(null), '');
});

test('a session whose node is away is shown unavailable, its status kept', () => {
  const away = session('a', { status: 'running', node: 'n1', nodeUnavailable: true });
  assert.equal(shownStatus(away), 'unavailable');
  assert.equal(statusText(away), 'unavailable');
  assert.equal(away.status, 'running');
  assert.equal(shownStatus(session('b', { status: 'waiting' })), 'waiting');
});
