// Working beside sibling worktrees: which files this session and its owner's other
// worktree sessions of the same repository have both changed (the server's `overlap`
// events), and the words the page uses for them and for a rebase onto the base's
// head. No DOM here: the Changes panel and the conversation draw these.

/**
 * @typedef {Extract<import('./wire.js').HistoryEvent, {kind: 'overlap'}>} OverlapEvent
 * @typedef {Extract<import('./wire.js').HistoryEvent, {kind: 'rebased'}>} RebasedEvent
 * @typedef {{withSessionId: string, paths: string[]}} Overlap
 */

/** Paths a conversation line names before it says how many more there are. */
const LINE_PATHS = 5;

/**
 * What one session shares with its siblings. Each `overlap` event says everything
 * about its `withSessionId`, so the newest one per sibling is the state; newest by
 * seq, because an older page of history can be read after the live events.
 */
export class Overlaps {
  constructor() {
    /** @type {Map<string, {seq: number, paths: string[]}>} */
    this.latest = new Map();
  }

  /**
   * Takes one event; true when it is newer than what was known of that sibling.
   * @param {OverlapEvent} ev
   */
  seen(ev) {
    const known = this.latest.get(ev.withSessionId);
    if (known && known.seq >= ev.seq) return false;
    this.latest.set(ev.withSessionId, { seq: ev.seq, paths: ev.paths });
    return true;
  }

  /** The overlaps going on now; one with no paths has ended. @returns {Overlap[]} */
  current() {
    return [...this.latest]
      .filter(([, o]) => o.paths.length)
      .map(([withSessionId, o]) => ({ withSessionId, paths: o.paths }));
  }
}

/**
 * The siblings each path is also changed in.
 * @param {Overlap[]} overlaps
 * @returns {Map<string, string[]>}
 */
export function siblingsByPath(overlaps) {
  /** @type {Map<string, string[]>} */
  const by = new Map();
  for (const o of overlaps) {
    for (const p of o.paths) by.set(p, [...(by.get(p) || []), o.withSessionId]);
  }
  return by;
}

/** "A", "A and B", "A, B and C". @param {string[]} words */
export function listWords(words) {
  if (words.length < 2) return words.join('');
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

/** A listed file's badge. @param {string[]} names the siblings' names */
export function badgeText(names) {
  return `also changed in ${listWords(names)}`;
}

/** The panel's notice of one overlap. @param {number} files @param {string} name */
export function noticeText(files, name) {
  return `${files} file${files === 1 ? ' is' : 's are'} also changed in ${name}`;
}

/**
 * The conversation's line for an `overlap` event; a long list is cut short (the
 * Changes panel marks every file).
 * @param {string[]} paths
 * @param {string} name the sibling's name
 */
export function overlapLineText(paths, name) {
  if (!paths.length) return `No longer overlapping with ${name}`;
  const more = paths.length - LINE_PATHS;
  return `Also changed in ${name}: ${paths.slice(0, LINE_PATHS).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** A commit as people read it. @param {string} commit */
export function shortCommit(commit) {
  return commit.slice(0, 7);
}

/** What the Changes panel says after Rebase. @param {import('./wire.js').SessionRebaseResult} r */
export function rebaseResultText(r) {
  return r.moved ? `Rebased onto ${r.base} (${shortCommit(r.onto)})` : `Already on ${r.base}’s head`;
}

/** The conversation's line for a `rebased` event. @param {RebasedEvent} ev */
export function rebasedLineText(ev) {
  return `Rebased ${ev.branch} onto ${ev.base} (${shortCommit(ev.onto)})`;
}
