// File edits as diffs: the `changes` of a tool call or a permission request (every
// vendor's edits, in the one shape the server gives them), and unified diffs (git's).
// `changeEdits` and `unifiedDiff` are pure (node tests them); `diffView` draws their
// result with DOM nodes, collapsed when long.

import { h } from './dom.js';

/** Diff lines shown before a diff is collapsed behind "Show all". */
export const COLLAPSE_AT = 40;

/**
 * One file's change: `lines` are `[op, text]` with op `' '` (context), `'-'`, `'+'`
 * or `'@'` (a hunk header).
 * @typedef {{path: string, lines: [string, string][]}} FileEdit
 */

/**
 * A tool call's (or a permission request's) `changes` as file edits: each change's diff lines, `@@` hunk headers
 * as `'@'` lines; a renamed file is named with where it goes.
 * @param {import('./wire.js').FileChange[] | undefined} changes
 * @returns {FileEdit[]}
 */
export function changeEdits(changes) {
  return (changes || []).map((c) => ({
    path: c.movePath ? `${c.path} → ${c.movePath}` : c.path,
    lines: (c.diff ? splitLines(c.diff) : []).map((l) => /** @type {[string, string]} */ (
      l.startsWith('@@') ? ['@', l] : [l[0] === '+' || l[0] === '-' ? l[0] : ' ', l.slice(1)])),
  }));
}

/** @param {string} text */
function splitLines(text) {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * What a reviewable diff (review.js) adds to each of its lines: `row` gets the
 * line's element to decorate (a gutter button) and returns a node to put after it
 * (the line's comments), or null. Called again for every line when "Show all"
 * redraws the diff.
 * @typedef {{row: (edit: FileEdit, index: number, row: HTMLElement) => Node | null}} LineHooks
 */

/**
 * Draws file edits: per file a header with its name and counts, then the lines.
 * A diff longer than COLLAPSE_AT lines shows its start and a "Show all" button.
 * With `hooks` each line is a block of its own (so comments and a form can sit
 * between lines) instead of a line of one `<pre>`.
 * @param {FileEdit[]} edits
 * @param {LineHooks | null} [hooks]
 */
export function diffView(edits, hooks = null) {
  return h('div.diffs', edits.map((e) => {
    const added = e.lines.filter(([op]) => op === '+').length;
    const removed = e.lines.filter(([op]) => op === '-').length;
    const label = `Changes to ${e.path || 'a file'}`;
    // Focusable: a wide diff scrolls sideways, also by keyboard. (A reviewable one
    // holds buttons, which already take the focus into it.)
    const body = hooks
      ? h('div.diff.reviewable', { role: 'group', 'aria-label': label })
      : h('pre.diff', { 'aria-label': label, tabindex: '0' });
    /** @param {number} count */
    const fill = (count) => {
      body.textContent = '';
      e.lines.slice(0, count).forEach(([op, text], i) => {
        const cls = op === '+' ? 'add' : op === '-' ? 'del' : op === '@' ? 'hunk' : 'ctx';
        const shown = op === '@' ? text : `${op}${text}`;
        if (!hooks) {
          body.append(h(`span.dl.${cls}`, shown), '\n');
          return;
        }
        const row = h(`div.dl.${cls}`, h('span.code', shown));
        const after = hooks.row(e, i, row);
        body.append(row);
        if (after) body.append(after);
      });
    };
    const long = e.lines.length > COLLAPSE_AT;
    fill(long ? COLLAPSE_AT : e.lines.length);
    const more = long
      ? h('button.btn.tiny.show-all', { type: 'button', onclick: () => { fill(e.lines.length); more.remove(); } },
        `Show all ${e.lines.length} lines`)
      : null;
    return h('div.file-diff',
      h('div.diff-head', h('span.diff-file', e.path || '(file)'), h('span.diff-add', `+${added}`), h('span.diff-del', `−${removed}`)),
      body, more);
  }));
}

/**
 * Each line's number in the old and in the new file, `[old, new]`, counted from the
 * hunk headers (their `-a,b +c,d`) that `unifiedDiff` keeps as `'@'` lines. A side
 * a line is not on is null: a removed line has no new number, an added one no old
 * one, and headers and notes (and lines outside any hunk) have neither.
 * @param {[string, string][]} lines
 * @returns {[number | null, number | null][]}
 */
export function lineNumbers(lines) {
  let oldNo = 0;
  let newNo = 0;
  let inHunk = false;
  return lines.map(([op, text]) => {
    if (op === '@') {
      const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
      inHunk = !!m;
      if (m) {
        oldNo = Number(m[1]);
        newNo = Number(m[2]);
      }
      return [null, null];
    }
    if (!inHunk) return [null, null];
    if (op === '-') return [oldNo++, null];
    if (op === '+') return [null, newNo++];
    return [oldNo++, newNo++];
  });
}

/**
 * A unified diff (`git diff` output, one file or several) as file edits: one per
 * `diff --git` section (or per `---`/`+++` pair), hunk headers as `'@'` lines, the
 * `\ No newline at end of file` marker and git's own header lines left out. The path
 * is the new side's (`b/…`), or the old side's for a deleted file.
 * @param {string} text
 * @returns {FileEdit[]}
 */
export function unifiedDiff(text) {
  /** @type {FileEdit[]} */
  const out = [];
  /** @type {FileEdit | null} */
  let cur = null;
  // Lines the current hunk still has on its old and new side (from its header).
  let oldLeft = 0;
  let newLeft = 0;
  // Whether the current file had a hunk: a `---` line after one starts the next file.
  let hadHunk = false;
  /** @param {string} path */
  const start = (path) => {
    cur = { path, lines: [] };
    out.push(cur);
    oldLeft = 0;
    newLeft = 0;
    hadHunk = false;
  };
  /** @param {string} p */
  const strip = (p) => p.replace(/^"|"$/g, '').replace(/^[ab]\//, '');
  for (const line of splitLines(text)) {
    if (oldLeft > 0 || newLeft > 0) {
      const op = line[0];
      if (op === '\\') continue;
      if (op === '-') oldLeft--;
      else if (op === '+') newLeft--;
      else if (op === ' ' || line === '') {
        oldLeft--;
        newLeft--;
      } else {
        // A short hunk (a truncated diff): what follows is a header again.
        oldLeft = 0;
        newLeft = 0;
      }
      if (oldLeft > 0 || newLeft > 0 || op === '-' || op === '+' || op === ' ' || line === '') {
        cur?.lines.push([op === '-' || op === '+' ? op : ' ', line.slice(1)]);
        continue;
      }
    }
    if (line.startsWith('\\')) continue;
    const git = /^diff --git "?a\/(.*?)"? "?b\/(.*?)"?$/.exec(line);
    const hunk = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (git) start(git[2]);
    else if (line.startsWith('--- ')) {
      if (!cur || hadHunk) start(strip(line.slice(4)));
    } else if (line.startsWith('+++ ')) {
      const path = line.slice(4);
      if (cur && path !== '/dev/null') cur.path = strip(path);
    } else if (hunk) {
      if (!cur) start('');
      hadHunk = true;
      oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
      newLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
      cur?.lines.push(['@', line]);
    } else if (cur && /^(Binary files|new file|deleted file|rename |similarity|old mode|new mode)/.test(line)) {
      // Git's header lines that say something a reader needs (no hunk may follow).
      cur.lines.push(['@', line]);
    } else if (!cur && line.trim()) {
      // Not a diff (a marker from the server, such as a truncation note): a note.
      start('');
      cur?.lines.push(['@', line]);
    } else if (cur && line.trim() && !/^(index |diff )/.test(line)) {
      cur.lines.push(['@', line]);
    }
  }
  return out;
}
