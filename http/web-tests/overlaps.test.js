import test from 'node:test';
import assert from 'node:assert/strict';
import {
  Overlaps, siblingsByPath, listWords, badgeText, noticeText, overlapLineText, rebaseResultText, rebasedLineText,
} from '../web/overlaps.js';

/** An `overlap` event with `seq`, about sibling `withSessionId`. */
const overlap = (seq, withSessionId, paths) => ({ kind: 'overlap', seq, sessionId: 's1', ts: 0, withSessionId, paths });

/** The current overlaps after `events`, in any order. */
function current(events) {
  const o = new Overlaps();
  for (const ev of events) o.seen(ev);
  return o.current();
}

test('the newest overlap event per sibling is the current state; an empty one ended it', () => {
  assert.deepEqual(current([]), []);
  assert.deepEqual(current([overlap(3, 'b', ['a.txt']), overlap(5, 'c', ['x', 'y']), overlap(8, 'b', ['a.txt', 'b.txt'])]),
    [{ withSessionId: 'b', paths: ['a.txt', 'b.txt'] }, { withSessionId: 'c', paths: ['x', 'y'] }]);
  assert.deepEqual(current([overlap(3, 'b', ['a.txt']), overlap(5, 'c', ['x']), overlap(9, 'b', [])]),
    [{ withSessionId: 'c', paths: ['x'] }], 'b ended');
  assert.deepEqual(current([overlap(3, 'b', ['a.txt']), overlap(9, 'b', []), overlap(12, 'b', ['c.txt'])]),
    [{ withSessionId: 'b', paths: ['c.txt'] }], 'and began again');
});

test('an older event read after a newer one (a page of history) changes nothing', () => {
  const o = new Overlaps();
  assert.equal(o.seen(overlap(9, 'b', [])), true);
  assert.equal(o.seen(overlap(3, 'b', ['a.txt'])), false);
  assert.equal(o.seen(overlap(9, 'b', [])), false, 'the same event again (a replay)');
  assert.deepEqual(o.current(), []);
});

test('each path names the siblings that changed it too', () => {
  const by = siblingsByPath([{ withSessionId: 'b', paths: ['a.txt', 'b.txt'] }, { withSessionId: 'c', paths: ['a.txt'] }]);
  assert.deepEqual([...by], [['a.txt', ['b', 'c']], ['b.txt', ['b']]]);
});

test('badges, notices and conversation lines name the sibling and the files', () => {
  assert.equal(listWords([]), '');
  assert.equal(listWords(['A']), 'A');
  assert.equal(listWords(['A', 'B', 'C']), 'A, B and C');
  assert.equal(badgeText(['Other']), 'also changed in Other');
  assert.equal(badgeText(['B', 'C']), 'also changed in B and C');
  assert.equal(noticeText(1, 'Other'), '1 file is also changed in Other');
  assert.equal(noticeText(3, 'Other'), '3 files are also changed in Other');
  assert.equal(overlapLineText(['a.txt', 'b.txt'], 'Other'), 'Also changed in Other: a.txt, b.txt');
  assert.equal(overlapLineText(['1', '2', '3', '4', '5', '6', '7'], 'Other'), 'Also changed in Other: 1, 2, 3, 4, 5 and 2 more');
  assert.equal(overlapLineText([], 'Other'), 'No longer overlapping with Other');
});

test('a rebase says where the branch is now', () => {
  const r = { sessionId: 's1', branch: 'tandem/x', base: 'main', onto: '0123456789abcdef', head: 'fedcba9876543210', moved: true };
  assert.equal(rebaseResultText(r), 'Rebased onto main (0123456)');
  assert.equal(rebaseResultText({ ...r, moved: false }), 'Already on main’s head');
  assert.equal(rebasedLineText({ kind: 'rebased', seq: 4, sessionId: 's1', ts: 0, branch: 'tandem/x', base: 'main', onto: '0123456789abcdef', head: 'f' }),
    'Rebased tandem/x onto main (0123456)');
});
