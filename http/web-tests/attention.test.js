// What the page shows of the server's attention (the list badge, the title's count)
// and how it reports what it shows (`client.seen`, debounced per session).
import test from 'node:test';
import assert from 'node:assert/strict';
import { Store, SeenReports, attentionOf, attentionCount, attentionBadge, countedTitle } from '../web/store.js';

const session = (id, extra = {}) => ({ id, title: id, vendor: 'scripted', model: '', effort: '', status: 'idle', lastActivity: 1, backgroundTasks: [], ownerId: 'admin', ...extra });

test('the title counts needs_input and failed only', () => {
  const list = [
    session('a', { attention: 'needs_input' }),
    session('b', { attention: 'failed' }),
    session('c', { attention: 'done_unseen' }),
    session('d', { attention: 'none' }),
    session('e', { status: 'running' }),
    session('f'), // an older server: no field at all
  ];
  assert.equal(attentionCount(list), 2);
  assert.equal(attentionCount([]), 0);
  assert.equal(attentionCount([session('r', { status: 'running', attention: 'none' })]), 0, 'a running turn is not attention');
  assert.equal(attentionOf(session('f')), 'none');
  assert.equal(attentionOf(undefined), 'none');
  const store = new Store();
  store.userId = 'admin';
  for (const s of list) store.upsertSession(s);
  assert.equal(store.attentionCount(), 2);
  store.upsertSession(session('a', { attention: 'none' }));
  assert.equal(store.attentionCount(), 1);
  // Another user's session is theirs to attend to.
  store.upsertSession(session('g', { attention: 'failed', ownerId: 'bob' }));
  assert.equal(store.attentionCount(), 1);
});

test('the title gets the count as a prefix, and loses it at 0', () => {
  assert.equal(countedTitle('tandem', 2), '(2) tandem');
  assert.equal(countedTitle('tandem', 0), 'tandem');
  assert.equal(countedTitle('(3) tandem', 1), '(1) tandem', 'an old count is replaced');
  assert.equal(countedTitle('(3) tandem', 0), 'tandem');
  assert.equal(countedTitle('tandem · sign in', 1), '(1) tandem · sign in');
});

test('each attention has its words, none has no badge', () => {
  assert.equal(attentionBadge('none'), null);
  assert.equal(attentionBadge(undefined), null);
  const needs = attentionBadge('needs_input');
  assert.equal(needs.text, 'Needs you');
  assert.equal(needs.label, 'Needs you');
  const failed = attentionBadge('failed');
  assert.equal(failed.text, 'Failed');
  assert.equal(failed.label, 'Failed');
  const fresh = attentionBadge('done_unseen');
  assert.equal(fresh.kind, 'new');
  assert.equal(fresh.label, 'New', 'the dot has words for a screen reader');
  assert.equal(fresh.text, '', 'on screen it is a dot');
  for (const a of ['needs_input', 'failed', 'done_unseen']) assert.ok(attentionBadge(a).title, `${a} has a tooltip`);
});

test('only the owner reports: owns() needs the user and the session', () => {
  const store = new Store();
  store.upsertSession(session('mine', { ownerId: 'alice' }));
  store.upsertSession(session('theirs', { ownerId: 'bob' }));
  assert.equal(store.owns('mine'), false, 'the user is not known yet');
  store.userId = 'alice';
  assert.equal(store.owns('mine'), true);
  assert.equal(store.owns('theirs'), false);
  assert.equal(store.owns('gone'), false);
});

/** A clock and timers the test moves by hand. */
function fakeTime() {
  let now = 0;
  /** @type {{at: number, fn: () => void, id: number}[]} */
  let timers = [];
  let nextId = 1;
  return {
    now: () => now,
    setTimer: (fn, ms) => { const id = nextId++; timers.push({ at: now + ms, fn, id }); return id; },
    clearTimer: (id) => { timers = timers.filter((t) => t.id !== id); },
    /** Moves the clock by `ms`, running the timers due on the way. */
    advance(ms) {
      const end = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.fn();
      }
      now = end;
    },
    pending: () => timers.length,
  };
}

test('seen reports: a burst is sent once, then at most once a second, only when the seq grew', () => {
  const t = fakeTime();
  const sent = [];
  const r = new SeenReports((id, seq) => sent.push([id, seq, t.now()]), { ...t, interval: 1000, settle: 50 });
  // Opening: a replay of many events is one report, after the settle time.
  for (let seq = 1; seq <= 20; seq++) r.note('a', seq);
  assert.deepEqual(sent, []);
  t.advance(50);
  assert.deepEqual(sent, [['a', 20, 50]]);
  // Nothing new: nothing sent.
  r.note('a', 20);
  r.note('a', 7);
  t.advance(5000);
  assert.equal(sent.length, 1);
  // New events stream in: one report per second at most, with the newest seq.
  r.note('a', 21);
  t.advance(50);
  assert.deepEqual(sent.at(-1), ['a', 21, 5100]);
  r.note('a', 22);
  r.note('a', 23);
  t.advance(500);
  assert.equal(sent.length, 2, 'not again within the second');
  t.advance(500);
  assert.deepEqual(sent.at(-1), ['a', 23, 6100]);
  // Sessions are independent.
  r.note('b', 4);
  t.advance(50);
  assert.deepEqual(sent.at(-1), ['b', 4, 6150]);
});

test('seen reports: again re-sends a seq already sent, forget drops what waits', () => {
  const t = fakeTime();
  const sent = [];
  const r = new SeenReports((id, seq) => sent.push([id, seq]), { ...t });
  r.note('a', 5);
  t.advance(100);
  assert.deepEqual(sent, [['a', 5]]);
  // The server still counts the session unseen (a report lost): asked again.
  r.note('a', 5, true);
  t.advance(2000);
  assert.deepEqual(sent, [['a', 5], ['a', 5]]);
  r.note('a', 0, true);
  r.note('a', -1);
  t.advance(2000);
  assert.equal(sent.length, 2, 'nothing shown yet: nothing to report');
  // Closed before the wait ended: nothing is sent, and reopening reports anew.
  r.note('a', 6);
  r.forget('a');
  assert.equal(t.pending(), 0);
  t.advance(2000);
  assert.equal(sent.length, 2);
  r.note('a', 6);
  t.advance(100);
  assert.deepEqual(sent.at(-1), ['a', 6]);
});
