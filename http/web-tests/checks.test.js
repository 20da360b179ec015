import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import {
  statusWord, statusMark, durationText, outcomeText, checkLineText, metaText, runSummaryText, checksSummaryText, checkLine, checkRow,
} from '../web/checks.js';

/** A check result: `name` ended with `status` after `durationMs`, writing `logTail`. */
const check = (name, status, exitCode, durationMs, logTail = '') => ({ name, status, exitCode, durationMs, logTail });

const tests = check('tests', 'passed', 0, 1234, 'ok\n');
const lint = check('lint', 'failed', 2, 80, 'no\n');
const slow = check('slow', 'timedOut', null, 1000);

test('each status has a word and a mark', () => {
  assert.deepEqual(['passed', 'failed', 'timedOut'].map(statusWord), ['passed', 'failed', 'timed out']);
  assert.deepEqual(['passed', 'failed', 'timedOut'].map(statusMark), ['✓', '✗', '⏱']);
  assert.equal(statusWord(/** @type {any} */ ('skipped')), 'skipped', 'a newer server’s status shows as it came');
});

test('durations in tenths of a second under a minute, then minutes and seconds', () => {
  assert.equal(durationText(0), '0.0 s');
  assert.equal(durationText(80), '0.1 s');
  assert.equal(durationText(1234), '1.2 s');
  assert.equal(durationText(59_940), '59.9 s');
  assert.equal(durationText(59_960), '1 min 0 s');
  assert.equal(durationText(60_000), '1 min 0 s');
  assert.equal(durationText(125_400), '2 min 5 s');
});

test('a check line says the outcome, the exit code of a failure, and how long it took', () => {
  assert.equal(outcomeText(tests), 'tests passed');
  assert.equal(outcomeText(lint), 'lint failed (exit 2)');
  assert.equal(outcomeText(slow), 'slow timed out');
  assert.equal(checkLineText(tests), '✓ tests passed · 1.2 s');
  assert.equal(checkLineText(lint), '✗ lint failed (exit 2) · 0.1 s');
  assert.equal(checkLineText(slow), '⏱ slow timed out · 1.0 s');
  assert.equal(metaText(lint), 'exit 2 · 0.1 s');
  assert.equal(metaText(slow), '1.0 s', 'killed: no exit code');
});

test('summaries of a run and of a delegation’s checks', () => {
  assert.equal(runSummaryText([]), '');
  assert.equal(runSummaryText([tests]), 'The check passed');
  assert.equal(runSummaryText([tests, tests]), 'All 2 checks passed');
  assert.equal(runSummaryText([lint]), '0 of 1 check passed');
  assert.equal(runSummaryText([tests, lint, slow]), '1 of 3 checks passed');
  assert.equal(checksSummaryText([]), '');
  assert.equal(checksSummaryText([tests, lint, slow]), 'checks: tests passed, lint failed (exit 2), slow timed out');
});

test('output is text in a details, and a check without output has none', () => {
  const row = checkRow(check('x', 'failed', 1, 5, '<b>not markup</b>'));
  const [out] = row.all('pre');
  assert.equal(out.textContent, '<b>not markup</b>');
  assert.equal(out.all('b').length, 0);
  assert.equal(row.all('details').length, 1);
  assert.equal(row.all('summary')[0].textContent, 'Output of x');
  assert.equal(checkRow(slow).all('details').length, 0);
  assert.equal(checkRow(slow).textContent, 'slow⏱ timed out1.0 sNo output.');
  assert.equal(checkLine(lint).all('summary')[0].textContent, '✗ lint failed (exit 2) · 0.1 s');
  assert.equal(checkLine(slow).textContent, '⏱ slow timed out · 1.0 s');
});
