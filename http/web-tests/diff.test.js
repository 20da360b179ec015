import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import { fileEdits, changeEdits, lineDiff, diffView, unifiedDiff, COLLAPSE_AT } from '../web/diff.js';

test('Claude Edit: changed lines between common context', () => {
  const [e] = fileEdits('Edit', { file_path: 'src/a.rs', old_string: 'a\nb\nc', new_string: 'a\nB\nc' });
  assert.equal(e.path, 'src/a.rs');
  assert.deepEqual(e.lines, [[' ', 'a'], ['-', 'b'], ['+', 'B'], [' ', 'c']]);
});

test('Claude Write and MultiEdit', () => {
  const [w] = fileEdits('Write', { file_path: 'new.txt', content: 'x\ny\n' });
  assert.deepEqual(w.lines, [['+', 'x'], ['+', 'y']]);
  const [m] = fileEdits('MultiEdit', { file_path: 'f', edits: [{ old_string: 'a', new_string: 'b' }, { old_string: 'c', new_string: 'd' }] });
  assert.deepEqual(m.lines.filter(([op]) => op === '@').length, 2);
  assert.deepEqual(m.lines.filter(([op]) => op !== '@'), [['-', 'a'], ['+', 'b'], ['-', 'c'], ['+', 'd']]);
});

test('Codex file changes: unified diffs and added files', () => {
  const edits = fileEdits('apply_patch', { changes: [
    { path: 'a.py', kind: { type: 'update' }, diff: '--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n' },
    { path: 'b.py', kind: { type: 'add' }, diff: 'print(1)\n' },
  ] });
  assert.equal(edits.length, 2);
  assert.deepEqual(edits[0].lines, [['@', '@@ -1,2 +1,2 @@'], [' ', 'x = 1'], ['-', 'y = 2'], ['+', 'y = 3']]);
  assert.deepEqual(edits[1].lines, [['+', 'print(1)']]);
});

test('ACP diff content', () => {
  const [e] = fileEdits('edit', { content: [{ type: 'diff', path: '/w/x', oldText: 'old', newText: 'new' }] });
  assert.equal(e.path, '/w/x');
  assert.deepEqual(e.lines, [['-', 'old'], ['+', 'new']]);
});

test('tools that edit no file give nothing', () => {
  assert.deepEqual(fileEdits('Bash', { command: 'ls' }), []);
  assert.deepEqual(fileEdits('Edit', null), []);
});

test('long diffs are collapsed behind a button', () => {
  const big = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
  const view = diffView(fileEdits('Write', { file_path: 'big', content: big }));
  const pre = view.all('pre')[0];
  assert.equal(pre.all('span').length, COLLAPSE_AT);
  assert.equal(view.all('button')[0].textContent, 'Show all 100 lines');
  assert.equal(lineDiff('', 'a').length, 1);
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
