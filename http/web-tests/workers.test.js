// A Driver with several Workers: how the store lays them out and when it re-reads
// the pairs (store.js).
import test from 'node:test';
import assert from 'node:assert/strict';
import { Store, layoutFor, layoutSessions, parseRoute, tree, groupOf, pairingChanged, workerNameOf } from '../web/store.js';

const session = (id, extra = {}) => ({ id, title: id, vendor: 'scripted', model: '', effort: '', status: 'idle', lastActivity: 1, backgroundTasks: [], ...extra });
const pair = (pairId, workerId, createdAt, workerName) => ({ pairId, driverId: 'd', workerId, createdAt, state: 'active', workerName });

/** A Driver `d` with Workers `b` (newer, listed first by the server) and `a`. */
function driverWithTwo() {
  const store = new Store();
  store.listComplete = true;
  const workers = [{ pairId: 'pa', workerId: 'a', workerName: 'alpha' }, { pairId: 'pb', workerId: 'b', workerName: 'beta' }];
  store.upsertSession(session('d', { pairId: 'pa', role: 'driver', workers }));
  store.upsertSession(session('a', { pairId: 'pa', role: 'worker' }));
  store.upsertSession(session('b', { pairId: 'pb', role: 'worker' }));
  store.setPairs([pair('pb', 'b', 2, 'beta'), pair('pa', 'a', 1, 'alpha')]);
  return store;
}

test('a Driver with several Workers is a group, its Workers oldest first, from any of them', () => {
  const store = driverWithTwo();
  const group = { kind: 'group', driverId: 'd', workerIds: ['a', 'b'] };
  for (const id of ['d', 'a', 'b']) assert.deepEqual(layoutFor(parseRoute(`#/s/${id}`), store), group);
  assert.deepEqual(layoutSessions(group), ['d', 'a', 'b']);
  assert.deepEqual(groupOf(group), { driverId: 'd', workerIds: ['a', 'b'] });
  assert.deepEqual(groupOf({ kind: 'pair', driverId: 'd', workerId: 'a' }), { driverId: 'd', workerIds: ['a'] });
  assert.equal(groupOf({ kind: 'side', left: 'a', right: 'b' }), null);
  assert.deepEqual(tree(store).children.get('d').map((s) => s.id), ['a', 'b']);
});

test('a Worker whose session the page does not know yet is left out until it does', () => {
  const store = driverWithTwo();
  store.setPairs([...store.pairs.values(), pair('pc', 'c', 3, 'gamma')]);
  assert.deepEqual(layoutFor(parseRoute('#/s/d'), store), { kind: 'group', driverId: 'd', workerIds: ['a', 'b'] });
  store.upsertSession(session('c', { pairId: 'pc', role: 'worker' }));
  assert.deepEqual(layoutFor(parseRoute('#/s/d'), store), { kind: 'group', driverId: 'd', workerIds: ['a', 'b', 'c'] });
});

test('a Worker closed leaves a pair, then one session', () => {
  const store = driverWithTwo();
  store.setPairs([pair('pa', 'a', 1, 'alpha')]);
  assert.deepEqual(layoutFor(parseRoute('#/s/d'), store), { kind: 'pair', driverId: 'd', workerId: 'a' });
  assert.deepEqual(layoutFor(parseRoute('#/s/b'), store), { kind: 'one', id: 'b' });
  store.setPairs([]);
  assert.deepEqual(layoutFor(parseRoute('#/s/d'), store), { kind: 'one', id: 'd' });
});

test('an upsert that changes a Driver\'s Workers tells the pairs\' listeners', () => {
  const store = driverWithTwo();
  let n = 0;
  store.on('pairs', () => n++);
  const d = store.sessions.get('d');
  const one = { ...d, workers: d.workers.slice(0, 1) };
  assert.equal(pairingChanged(d, one), true);
  assert.equal(pairingChanged(d, { ...d, status: 'running' }), false);
  assert.equal(pairingChanged(undefined, session('x')), false);
  assert.equal(pairingChanged(undefined, session('w', { pairId: 'p' })), true);
  store.upsertSession({ ...d, status: 'running' });
  assert.equal(n, 0);
  store.upsertSession(one);
  assert.equal(n, 1);
});

test('a pair from before Workers had names shows as "Worker"', () => {
  assert.equal(workerNameOf(pair('p', 'w', 1, undefined)), 'Worker');
  assert.equal(workerNameOf(pair('p', 'w', 1, 'alpha')), 'alpha');
});
