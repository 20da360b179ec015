import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import { changeEdits, diffView, unifiedDiff, COLLAPSE_AT } from '../web/diff.js';

test('long diffs are collapsed behind a button', () => {
  const big = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
  const diff = big.split('\n').map((l) => `+${l}\n`).join('');
  const view = diffView(changeEdits([{ path: 'big', kind: 'add', diff }]));
  const pre = view.all('pre')[0];
  assert.equal(pre.all('span').length, COLLAPSE_AT);
  assert.equal(view.all('button')[0].textContent, 'Show all 100 lines');
});

test('unified diffs from git: files, hunks, new and deleted files, binary', () => {
  const text = [
    'diff --git a/src/a.rs b/src/a.rs',
    'index 1111111..2222222 100644',
    '--- a/src/a.rs',
    '+++ b/src/a.rs',
    '@@ -1,3 +1,3 @@',
    ' fn a() {',
    '-    1',
    '+    2',
    ' }',
    '\\ No newline at end of file',
    'diff --git a/new.txt b/new.txt',
    'new file mode 100644',
    'index 0000000..3333333',
    '--- /dev/null',
    '+++ b/new.txt',
    '@@ -0,0 +1,2 @@',
    '+--- looks like a header',
    '+x',
    'diff --git a/gone.txt b/gone.txt',
    'deleted file mode 100644',
    '--- a/gone.txt',
    '+++ /dev/null',
    '@@ -1 +0,0 @@',
    '-bye',
    'diff --git a/logo.png b/logo.png',
    'Binary files a/logo.png and b/logo.png differ',
  ].join('\n');
  const edits = unifiedDiff(text);
  assert.deepEqual(edits.map((e) => e.path), ['src/a.rs', 'new.txt', 'gone.txt', 'logo.png']);
  assert.deepEqual(edits[0].lines, [['@', '@@ -1,3 +1,3 @@'], [' ', 'fn a() {'], ['-', '    1'], ['+', '    2'], [' ', '}']]);
  assert.deepEqual(edits[1].lines, [['@', 'new file mode 100644'], ['@', '@@ -0,0 +1,2 @@'], ['+', '--- looks like a header'], ['+', 'x']]);
  assert.deepEqual(edits[2].lines, [['@', 'deleted file mode 100644'], ['@', '@@ -1 +0,0 @@'], ['-', 'bye']]);
  assert.deepEqual(edits[3].lines, [['@', 'Binary files a/logo.png and b/logo.png differ']]);
});

test('a truncated diff keeps what came and shows the marker as a note', () => {
  const edits = unifiedDiff('--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\n-b\n[diff truncated at 1 MiB]\n');
  assert.equal(edits.length, 1);
  assert.equal(edits[0].path, 'f');
  assert.deepEqual(edits[0].lines, [['@', '@@ -1,5 +1,5 @@'], [' ', 'a'], ['-', 'b'], ['@', '[diff truncated at 1 MiB]']]);
  assert.deepEqual(unifiedDiff(''), []);
});

test('a tool call\'s changes are its file edits', () => {
  const edits = changeEdits([
    { path: 'a.rs', kind: 'modify', diff: '@@ -1,2 +1,2 @@\n keep\n-old\n+new\n' },
    { path: 'old.txt', kind: 'rename', movePath: 'new.txt', diff: '' },
  ]);
  assert.deepEqual(edits[0], { path: 'a.rs', lines: [['@', '@@ -1,2 +1,2 @@'], [' ', 'keep'], ['-', 'old'], ['+', 'new']] });
  assert.deepEqual(edits[1], { path: 'old.txt → new.txt', lines: [] });
  assert.deepEqual(changeEdits(undefined), []);
});
