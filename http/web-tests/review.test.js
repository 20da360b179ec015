import test from 'node:test';
import assert from 'node:assert/strict';
import { wrap } from './fake-dom.js';
import { unifiedDiff, lineNumbers, diffView, COLLAPSE_AT } from '../web/diff.js';
import { anchorOf, sideOf, commentAt, reviewTitle, reviewHeading, reviewCard, reviewerChoice, lineName } from '../web/review.js';

const DIFF = [
  'diff --git a/src/a.rs b/src/a.rs',
  '--- a/src/a.rs',
  '+++ b/src/a.rs',
  '@@ -1,6 +1,7 @@',
  ' fn main() {',
  '-    old();',
  '+    new();',
  '+    more();',
  '     a();',
  '     b();',
  '     c();',
  '@@ -20,3 +21,3 @@ fn tail() {',
  ' x();',
  '-y();',
  '+z();',
  '\\ No newline at end of file',
  'diff --git a/new.txt b/new.txt',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/new.txt',
  '@@ -0,0 +1,2 @@',
  '+one',
  '+two',
  'diff --git a/gone.txt b/gone.txt',
  'deleted file mode 100644',
  '--- a/gone.txt',
  '+++ /dev/null',
  '@@ -1 +0,0 @@',
  '-bye',
].join('\n');

const [edit, added, deleted] = unifiedDiff(DIFF);
const numbers = lineNumbers(edit.lines);

test('each diff line gets its old and new file numbers from the hunk headers', () => {
  assert.deepEqual(numbers, [
    [null, null], // @@ -1,6 +1,7 @@
    [1, 1], // fn main() {
    [2, null], // -old();
    [null, 2], // +new();
    [null, 3], // +more();
    [3, 4],
    [4, 5],
    [5, 6],
    [null, null], // @@ -20,3 +21,3 @@
    [20, 21],
    [21, null], // -y();
    [null, 22], // +z();
  ]);
  assert.deepEqual(lineNumbers(added.lines), [[null, null], [null, null], [null, 1], [null, 2]], 'a new file: its header line, then new lines from 1');
  assert.deepEqual(lineNumbers(deleted.lines), [[null, null], [null, null], [1, null]]);
  assert.deepEqual(lineNumbers([['@', 'edit 1 of 2'], ['+', 'x']]), [[null, null], [null, null]], 'no hunk header: no numbers');
});

test('a selection anchors on the side of the line it started on', () => {
  const at = (start, to) => anchorOf(edit.lines, numbers, start, to);
  assert.deepEqual(at(3, 3), { side: 'new', line: 2 }, 'an added line');
  assert.deepEqual(at(2, 2), { side: 'old', line: 2 }, 'a removed line');
  assert.deepEqual(at(5, 5), { side: 'new', line: 4 }, 'a context line is on the new side');
  assert.deepEqual(at(3, 6), { side: 'new', line: 2, endLine: 5 });
  assert.deepEqual(at(6, 3), { side: 'new', line: 2, endLine: 5 }, 'upwards too');
  assert.deepEqual(at(2, 5), { side: 'old', line: 2, endLine: 3 }, 'from a removed line: old numbers only');
  assert.deepEqual(at(1, 4), { side: 'new', line: 1, endLine: 3 }, 'the removed line between is skipped on the new side');
  assert.equal(at(6, 9), null, 'two hunks');
  assert.equal(sideOf('-'), 'old');
  assert.equal(sideOf(' '), 'new');
  assert.equal(sideOf('+'), 'new');
});

test('comment places and the review title', () => {
  assert.equal(commentAt({ path: 'src/a.rs', side: 'new', line: 3 }), 'src/a.rs:3');
  assert.equal(commentAt({ path: 'src/a.rs', side: 'new', line: 3, endLine: 5 }), 'src/a.rs:3–5');
  assert.equal(commentAt({ path: 'src/a.rs', side: 'new', line: 3, endLine: 3 }), 'src/a.rs:3');
  assert.equal(commentAt({ path: 'gone.txt', side: 'old', line: 1 }), 'gone.txt:1 (old)');
  assert.equal(reviewTitle(1), 'Review · 1 comment');
  assert.equal(reviewTitle(3), 'Review · 3 comments');
  assert.equal(lineName('a.txt', '+', 2), 'Comment on added line 2 of a.txt');
  assert.equal(lineName('a.txt', '-', 2), 'Comment on removed line 2 of a.txt');
  assert.equal(lineName('a.txt', ' ', 4), 'Comment on line 4 of a.txt');
});

test('the review card shows the title, the summary and each comment as text', () => {
  const card = wrap(reviewCard({
    summary: 'Nice, <b>but</b>:',
    comments: [
      { path: 'src/a.rs', line: 2, endLine: 3, side: 'new', body: 'Why two calls?' },
      { path: 'src/a.rs', line: 2, side: 'old', body: '<img src=x onerror=alert(1)>' },
    ],
  }));
  assert.equal(card.all('div')[1].textContent, 'Review · 2 comments');
  assert.equal(card.all('p')[0].textContent, 'Nice, <b>but</b>:');
  assert.deepEqual(card.all('li').map((li) => li.textContent), ['src/a.rs:2–3Why two calls?', 'src/a.rs:2 (old)<img src=x onerror=alert(1)>']);
  assert.equal(card.all('img').length, 0, 'user text is never markup');
  assert.equal(wrap(reviewCard({ comments: [{ path: 'a', line: 1, side: 'new', body: 'x' }] })).all('p').length, 0, 'no summary, no paragraph');
});

test('a review by an agent is titled by its vendor, and a failed one says so', () => {
  const reviewer = { sessionId: 's_rev', vendor: 'codex' };
  const one = [{ path: 'a', line: 1, side: 'new', body: 'x' }];
  assert.equal(reviewHeading({ comments: one }), 'Review · 1 comment', 'the person’s own review');
  assert.equal(reviewHeading({ comments: one, reviewer }), 'Review by codex · 1 comment');
  assert.equal(reviewHeading({ comments: [], reviewer }), 'Review by codex · 0 comments');
  assert.equal(reviewHeading({ comments: [], reviewer, failed: 'no JSON' }), 'Review by codex failed');
  assert.equal(reviewHeading({ comments: [], failed: 'ignored without a reviewer' }), 'Review · 0 comments');
});

test('the card of an agent’s review names and links its session; a failed one has a mark, words and no comments', () => {
  const reviewer = { sessionId: 's_rev', vendor: 'codex' };
  const card = wrap(reviewCard({ reviewer, summary: 'Risky.', comments: [{ path: 'a.txt', line: 1, side: 'new', body: 'Why?' }] },
    { name: (id) => `Review of <${id}>` }));
  assert.equal(card.all('div')[0].classList.contains('by-agent'), true);
  assert.equal(card.all('div')[1].textContent, 'Review by codex · 1 comment');
  const link = card.all('a')[0];
  assert.equal(link.getAttribute('href'), '#/s/s_rev');
  assert.equal(link.textContent, 'Review of <s_rev>', 'the name is text');
  assert.equal(card.all('p')[0].textContent, 'Written by a codex agent in the session Review of <s_rev>');
  assert.deepEqual(card.all('li').map((li) => li.textContent), ['a.txt:1Why?']);
  const empty = wrap(reviewCard({ reviewer, comments: [] }));
  assert.equal(empty.all('a')[0].textContent, 's_rev', 'no names: the id');
  assert.equal(empty.all('ol').length, 0, 'nothing to list: no empty list');

  const failed = wrap(reviewCard({ reviewer, comments: [], failed: 'its answer holds no JSON object with `comments`' }));
  assert.equal(failed.all('div')[0].classList.contains('failed'), true);
  assert.equal(failed.all('div')[1].textContent, 'Review by codex failed');
  const why = failed.all('p').find((p) => p.classList.contains('review-failed'));
  assert.equal(why.textContent, '✕ Failed: its answer holds no JSON object with `comments`');
  assert.equal(why.all('span')[0].getAttribute('aria-hidden'), 'true', 'the mark is decoration; the words say it');
  assert.equal(failed.all('ol').length, 0, 'no comments list');
});

test('the default reviewer is another installed vendor than the session’s own', () => {
  const vendors = [
    { id: 'claude', installed: true },
    { id: 'codex', installed: false },
    { id: 'scripted', installed: true },
  ];
  assert.equal(reviewerChoice(vendors, 'claude'), 'scripted');
  assert.equal(reviewerChoice(vendors, 'scripted'), 'claude');
  assert.equal(reviewerChoice(vendors, 'scripted', 'scripted'), 'scripted', 'a choice made stays');
  assert.equal(reviewerChoice(vendors, 'claude', 'codex'), 'scripted', 'not a vendor that is not installed');
  assert.equal(reviewerChoice([{ id: 'scripted', installed: true }], 'scripted'), 'scripted', 'only its own: that one');
  assert.equal(reviewerChoice([], 'scripted'), '');
});

test('a reviewable diff draws one row per line, each decorated, with what the hook adds after it', () => {
  const seen = [];
  const view = diffView([edit], {
    row: (e, i, row) => {
      seen.push(i);
      return e.lines[i][0] === '+' ? document.createElement('aside') : null;
    },
  });
  assert.equal(view.all('pre').length, 0);
  assert.deepEqual(seen, edit.lines.map((_, i) => i));
  const rows = view.all('div').filter((d) => d.classList.contains('dl'));
  assert.equal(rows.length, edit.lines.length);
  assert.equal(rows[3].textContent, '+    new();');
  assert.equal(view.all('aside').length, 3, 'one per added line');

  const long = { path: 'big', lines: Array.from({ length: COLLAPSE_AT + 5 }, (_, i) => /** @type {[string, string]} */ (['+', `l${i}`])) };
  const calls = [];
  diffView([long], { row: (e, i) => { calls.push(i); return null; } });
  assert.equal(calls.length, COLLAPSE_AT, 'a long diff draws its start first');
});
