import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import {
  scriptTitle, statusWord, statusMark, scriptLineText, foldsInto, collapseScripts, scriptLine, portText, runStateText,
} from '../web/scripts.js';

/** A `script` event: `name` is at `status`, with `exitCode` and the output `logTail`. */
const script = (name, status, exitCode = null, logTail = '') => ({ kind: 'script', name, status, exitCode, logTail });
/** Another item of the conversation. */
const other = (text) => ({ kind: 'info', text });

test('each script and status has words, and each status a mark', () => {
  assert.deepEqual(['setup', 'run', 'archive'].map(scriptTitle), ['Setup', 'Run script', 'Archive script']);
  const all = ['running', 'passed', 'failed', 'timedOut', 'stopped'];
  assert.deepEqual(all.map(statusWord), ['running', 'passed', 'failed', 'timed out', 'stopped']);
  assert.deepEqual(all.map(statusMark), ['▶', '✓', '✗', '⏱', '■']);
  assert.equal(statusWord(/** @type {any} */ ('paused')), 'paused', 'a newer server’s status shows as it came');
  assert.equal(scriptTitle(/** @type {any} */ ('teardown')), 'teardown');
});

test('a line says what runs, or the name, outcome and exit code of what ended', () => {
  assert.equal(scriptLineText(script('setup', 'running')), 'Setting up the worktree…');
  assert.equal(scriptLineText(script('run', 'running')), 'Run script started');
  assert.equal(scriptLineText(script('archive', 'running')), 'Running the archive script…');
  assert.equal(scriptLineText(script('setup', 'passed', 0)), '✓ Setup passed (exit 0)');
  assert.equal(scriptLineText(script('setup', 'failed', 4)), '✗ Setup failed (exit 4)');
  assert.equal(scriptLineText(script('setup', 'failed')), '✗ Setup failed', 'a copy that failed ran no command');
  assert.equal(scriptLineText(script('setup', 'timedOut')), '⏱ Setup timed out');
  assert.equal(scriptLineText(script('run', 'stopped')), '■ Run script stopped');
  assert.equal(scriptLineText(script('archive', 'passed', 0)), '✓ Archive script passed (exit 0)');
});

test('a script’s progress and end are one line, in the place of its start', () => {
  const progress = [script('setup', 'running'), ...Array.from({ length: 50 }, (_, i) => script('setup', 'running', null, `step ${i}\n`))];
  const end = script('setup', 'passed', 0, 'done\n');
  assert.deepEqual(collapseScripts([other('a'), ...progress, end, other('b')]), [other('a'), end, other('b')]);
  // A turn sent during the setup shows between its events: the line still follows it.
  const sent = other('message');
  assert.deepEqual(collapseScripts([script('setup', 'running'), sent, script('setup', 'running', null, 'x'), end]), [end, sent]);
  // Once ended, a script of that name after something else is a line of its own.
  const run1 = script('run', 'stopped');
  const run2 = script('run', 'running');
  assert.deepEqual(collapseScripts([script('run', 'running'), run1, other('m'), run2]), [run1, other('m'), run2]);
  // Back to back, runs started and stopped are one line: the latest.
  assert.deepEqual(collapseScripts([script('run', 'running'), run1, script('run', 'running'), run1]), [run1]);
  // Different scripts never fold into each other.
  const archive = script('archive', 'passed', 0);
  assert.deepEqual(collapseScripts([run1, script('archive', 'running'), archive]), [run1, archive]);
  assert.equal(foldsInto(script('run', 'running'), script('archive', 'running'), true), false);
  assert.equal(foldsInto(script('setup', 'passed', 0), script('setup', 'failed', 1), false), false);
  assert.equal(foldsInto(script('setup', 'running'), script('setup', 'passed', 0), false), true);
});

test('a line’s output is text in a details; a line without output has none', () => {
  const failed = scriptLine(script('setup', 'failed', 4, '<b>broken</b>\n'));
  const [out] = failed.all('pre');
  assert.equal(out.textContent, '<b>broken</b>\n');
  assert.equal(out.all('b').length, 0);
  assert.equal(failed.all('summary')[0].textContent, '✗ Setup failed (exit 4)');
  assert.ok(failed.classList.contains('st-failed'));
  assert.equal(failed.dataset.script, 'setup');
  const started = scriptLine(script('run', 'running'));
  assert.equal(started.all('details').length, 0);
  assert.equal(started.textContent, 'Run script started');
  const setup = scriptLine(script('setup', 'running', null, 'npm ci\n'), true);
  assert.equal(setup.all('summary')[0].textContent, 'Setting up the worktree…');
  // The fake DOM's details has no `open` property: `h` sets the attribute.
  assert.equal(setup.all('details')[0].getAttribute('open'), '', 'a redrawn line keeps its output open');
  assert.equal(failed.all('details')[0].getAttribute('open'), null);
});

test('the port and the run’s state in words', () => {
  assert.equal(portText(41000), 'Port 41000');
  assert.equal(portText(null), '');
  assert.equal(portText(undefined), '');
  assert.equal(runStateText({ running: true }), 'Running');
  assert.equal(runStateText({ running: false }), 'Not started');
  assert.equal(runStateText({ running: false, status: 'stopped' }), 'Stopped');
  assert.equal(runStateText({ running: false, status: 'failed', exitCode: 1 }), 'Ended: failed (exit 1)');
  assert.equal(runStateText({ running: false, status: 'passed', exitCode: 0 }), 'Ended: passed (exit 0)');
});
