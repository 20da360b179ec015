// A repository's checks (`[[checks]]` in its `.tandem/worktree.toml`), as the page
// shows their outcomes: run from the Changes panel (`session.check`), as `check`
// events in the conversation, and on a worktree Worker's delegation end. The words
// are pure functions (tested under node); the two views of one check are built here
// so the panel and the conversation say the same thing.

import { h } from './dom.js';

/**
 * @typedef {import('./wire.js').CheckResult} CheckResult
 * @typedef {import('./wire.js').CheckStatus} CheckStatus
 */

/** A mark and a word per status: the word is always shown, so colour is never alone. */
const STATUS = { passed: ['✓', 'passed'], failed: ['✗', 'failed'], timedOut: ['⏱', 'timed out'] };

/** "passed", "failed", "timed out" (an unknown status as it came). @param {CheckStatus} status */
export function statusWord(status) {
  return STATUS[status]?.[1] || status;
}

/** "✓", "✗", "⏱" ("?" for an unknown status). @param {CheckStatus} status */
export function statusMark(status) {
  return STATUS[status]?.[0] || '?';
}

/**
 * "0.1 s", "12.3 s", "2 min 5 s": tenths while they matter, whole seconds after.
 * @param {number} ms
 */
export function durationText(ms) {
  const tenths = Math.round(ms / 100);
  // 59.96 s would show as "60.0 s": minutes from there.
  if (tenths < 600) return `${(tenths / 10).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** "tests passed", "lint failed (exit 2)", "slow timed out". @param {CheckResult} c */
export function outcomeText(c) {
  const exit = c.status === 'failed' && c.exitCode != null ? ` (exit ${c.exitCode})` : '';
  return `${c.name} ${statusWord(c.status)}${exit}`;
}

/** The conversation's line for a `check` event: "✓ tests passed · 1.2 s". @param {CheckResult} c */
export function checkLineText(c) {
  return `${statusMark(c.status)} ${outcomeText(c)} · ${durationText(c.durationMs)}`;
}

/**
 * The panel row's details after the badge: "exit 2 · 0.1 s" (no exit code when the
 * check was killed or did not start).
 * @param {CheckResult} c
 */
export function metaText(c) {
  return [c.exitCode != null ? `exit ${c.exitCode}` : '', durationText(c.durationMs)].filter(Boolean).join(' · ');
}

/**
 * What a run came to, for the panel's status line: "All 2 checks passed", "The
 * check passed", "1 of 2 checks passed". Empty for no checks (the panel says why instead).
 * @param {CheckResult[]} checks
 */
export function runSummaryText(checks) {
  if (!checks.length) return '';
  const passed = checks.filter((c) => c.status === 'passed').length;
  const noun = `check${checks.length === 1 ? '' : 's'}`;
  if (passed < checks.length) return `${passed} of ${checks.length} ${noun} passed`;
  return checks.length === 1 ? 'The check passed' : `All ${checks.length} checks passed`;
}

/**
 * A delegation line's summary of the checks run on the Worker's branch:
 * "checks: tests passed, lint failed (exit 2)"; empty when none ran.
 * @param {CheckResult[]} checks
 */
export function checksSummaryText(checks) {
  return checks.length ? `checks: ${checks.map(outcomeText).join(', ')}` : '';
}

/**
 * A check's output folded away (text only, preformatted), or a note that it wrote
 * nothing. The summary names the check, so several outputs are told apart.
 * @param {CheckResult} c
 * @param {any} summary what the summary shows
 */
function output(c, summary) {
  return h('details.check-log', h('summary', summary), h('pre.check-out', c.logTail));
}

/** The conversation's line for a `check` event, its output under it. @param {CheckResult} c */
export function checkLine(c) {
  const text = checkLineText(c);
  const cls = `line-event.check.st-${c.status}`;
  return c.logTail ? h(`div.${cls}`, output(c, text)) : h(`div.${cls}`, text);
}

/** The Changes panel's row for one check: name, status, exit code, duration, output. @param {CheckResult} c */
export function checkRow(c) {
  return h('li.check',
    h('div.check-head',
      h('span.check-name', c.name),
      h(`span.check-badge.st-${c.status}`, h('span', { 'aria-hidden': 'true' }, `${statusMark(c.status)} `), statusWord(c.status)),
      h('span.check-meta', metaText(c))),
    c.logTail ? output(c, ['Output', h('span.sr', ` of ${c.name}`)]) : h('p.check-none', 'No output.'));
}
