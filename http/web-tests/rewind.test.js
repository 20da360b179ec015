import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import { branchable, forkedText } from '../web/rewind.js';
import {
  Checkpoints, checkpointBefore, isUndoCheckpoint, fileCount, turnName, checkpointText, restoredText,
} from '../web/checkpoints.js';

test('Edit and Fork are offered on messages of ended turns that no edit superseded', () => {
  const ended = new Map([['turn_1', 5]]);
  assert.equal(branchable('turn_1', ended, false), true);
  assert.equal(branchable('turn_1', ended, true), false, 'superseded');
  assert.equal(branchable('turn_2', ended, false), false, 'still running');
  assert.equal(branchable(undefined, ended, false), false, 'outside any turn');
});

test('an edit restores files only when a checkpoint of another turn came before its turn ended', () => {
  const cp = (turnId, seq) => ({ turnId, seq, commit: 'c', createdAt: 1, files: [] });
  assert.equal(checkpointBefore([], 'turn_1', 9), false);
  assert.equal(checkpointBefore([cp('turn_1', 10)], 'turn_1', 9), false, 'its own checkpoint comes after it');
  assert.equal(checkpointBefore([cp('turn_1', 10), cp('turn_2', 20)], 'turn_2', 18), true);
  // The previous turn's checkpoint landed after this turn started, before it ended.
  assert.equal(checkpointBefore([cp('turn_1', 14)], 'turn_2', 18), true);
  assert.equal(checkpointBefore([cp('turn_3', 30)], 'turn_2', 18), false, 'a later turn’s');
  assert.equal(checkpointBefore([cp('restore_12', 12)], 'turn_2', 18), true, 'a restore’s');
});

test('turns are named by number and by their message', () => {
  assert.equal(turnName('turn_3'), 'turn 3');
  assert.equal(turnName('turn_3', 'fix the tests\nand more'), 'turn 3 (“fix the tests”)');
  assert.equal(turnName('turn_3', 'x'.repeat(50)), `turn 3 (“${'x'.repeat(40)}…”)`);
  assert.equal(turnName('odd'), 'odd');
});

test('checkpoint and restored lines count the files they left out too', () => {
  assert.equal(fileCount({ files: ['a', 'b'], filesOmitted: 3 }), 5);
  assert.equal(checkpointText({ files: ['a', 'b', 'c'] }), 'Checkpoint · 3 files');
  assert.equal(checkpointText({ files: ['a'] }), 'Checkpoint · 1 file');
  assert.equal(checkpointText({ files: [] }), 'Checkpoint · no file changed');
  assert.equal(restoredText({ turnId: 'turn_2', files: ['a'], filesOmitted: 1 }, 'turn 2'), 'Files restored to turn 2 · 2 files');
  assert.equal(restoredText({ turnId: 'restore_40', files: ['a'] }, 'restore_40'), 'Restore undone · 1 file');
  assert.equal(isUndoCheckpoint('restore_40'), true);
  assert.equal(isUndoCheckpoint('turn_4'), false);
});

test('a fork says where it came from', () => {
  assert.equal(forkedText({ sourceTitle: 'Main', sourceSessionId: 's1', turns: 2, conversation: 'vendor' }), 'Forked from “Main” after 2 turns');
  assert.equal(forkedText({ sourceTitle: '', sourceSessionId: 's1', turns: 1, conversation: 'transcript' }),
    'Forked from “s1” after 1 turn · given to the agent as a transcript');
});

/** Checkpoints of session `s1`, busy or not, whose requests `request` answers. */
function checkpoints(busy, request = async () => ({})) {
  return new Checkpoints({ sessionId: 's1', request, note() {}, busy: () => busy, title: () => 'S', open() {} });
}

test('a checkpoint line has a Restore named after its turn, off while a turn runs', () => {
  const c = checkpoints(false);
  c.seen({ kind: 'user_message', turnId: 'turn_2', text: 'two' });
  const line = c.line({ kind: 'checkpoint', turnId: 'turn_2', files: ['a.txt'] });
  assert.equal(line.textContent, 'Checkpoint · 1 fileRestore files');
  const [btn] = line.all('button');
  assert.equal(btn.getAttribute('aria-label'), 'Restore files to the end of turn 2');
  assert.equal(btn.getAttribute('disabled'), null);
  const busy = checkpoints(true).line({ kind: 'checkpoint', turnId: 'turn_2', files: [] });
  assert.equal(busy.all('button')[0].getAttribute('disabled'), '');
  assert.equal(c.line({ kind: 'checkpoint', turnId: 'restore_9', files: [] }), null, 'an undo checkpoint has no line');
});

test('a restored line names the turn and has an Undo', () => {
  const c = checkpoints(false);
  c.seen({ kind: 'user_message', turnId: 'turn_1', text: 'one' });
  const line = c.restoredLine({ kind: 'restored', turnId: 'turn_1', files: ['a.txt', 'b.txt'], undo: 'restore_7' });
  assert.equal(line.textContent, '↺ Files restored to turn 1 (“one”) · 2 filesUndo');
  assert.equal(line.all('button')[0].getAttribute('aria-label'), 'Undo: Files restored to turn 1 (“one”) · 2 files');
});

test('the edit’s restore box follows the server’s checkpoint list', async () => {
  const list = [{ turnId: 'turn_1', seq: 6, commit: 'c', createdAt: 1, files: [] }];
  const c = checkpoints(false, async () => ({ sessionId: 's1', checkpoints: list }));
  assert.equal(await c.before('turn_2', 12), true);
  assert.equal(await c.before('turn_1', 5), false);
  const failing = checkpoints(false, async () => { throw new Error('no repository'); });
  assert.equal(await failing.before('turn_2', 12), false);
});
