// The files at the end of each turn: a `checkpoint` event's line with its "Restore
// files" (`session.restore`), a `restored` event's line with its "Undo", and whether
// an edit of a message has files to restore.

import { h } from './dom.js';
import { formDialog } from './dialogs.js';

/**
 * @typedef {import('./wire.js').CheckpointInfo} CheckpointInfo
 * @typedef {import('./rewind.js').Deps} Deps
 */

/** The checkpoints of the files at the end of each turn, and the restores. */
export class Checkpoints {
  /** @param {Deps} deps */
  constructor(deps) {
    this.deps = deps;
    /** The first line of each turn's user message, to name the turn. @type {Map<string, string>} */
    this.texts = new Map();
  }

  /** @param {any} ev */
  seen(ev) {
    if (ev.kind === 'user_message' && ev.turnId && !ev.internal) this.texts.set(ev.turnId, ev.text);
  }

  /** @param {string} turnId */
  name(turnId) {
    return turnName(turnId, this.texts.get(turnId));
  }

  /**
   * A `checkpoint` event's line, with its Restore; none for the checkpoint a restore
   * made (its restore's Undo stands for it).
   * @param {any} ev
   * @returns {HTMLElement | null}
   */
  line(ev) {
    if (isUndoCheckpoint(ev.turnId)) return null;
    const btn = this.button('Restore files', `Restore files to the end of ${turnName(ev.turnId)}`,
      () => this.confirm(ev.turnId, 'Restore the files?',
        `The working directory’s files go back to how they were at the end of ${this.name(ev.turnId)}: files changed since are put back, files added since are removed, ignored files stay. You can undo it.`,
        'Restore files'));
    return h('div.line-event.checkpoint', { title: fileList(ev) || null }, h('span', checkpointText(ev)), btn);
  }

  /**
   * A `restored` event's line, with the Undo that restores the checkpoint made just
   * before it.
   * @param {any} ev
   */
  restoredLine(ev) {
    const text = restoredText(ev, this.name(ev.turnId));
    const btn = this.button('Undo', `Undo: ${text}`,
      () => this.confirm(ev.undo, 'Undo the restore?',
        'The files go back to how they were just before this restore; changes made since are replaced.', 'Undo restore'));
    return h('div.line-event.restored', { title: fileList(ev) || null }, h('span', `↺ ${text}`), btn);
  }

  /**
   * A Restore or Undo: off while a turn runs, when the server would refuse it.
   * @param {string} text
   * @param {string} label
   * @param {() => void} onclick
   */
  button(text, label, onclick) {
    return h('button.btn.tiny.restore', { type: 'button', 'aria-label': label, disabled: this.deps.busy(), onclick }, text);
  }

  /** Follows the session's state: Restore and Undo wait for the turn to end. @param {ParentNode} root */
  sync(root) {
    const busy = this.deps.busy();
    for (const b of /** @type {NodeListOf<HTMLButtonElement>} */ (root.querySelectorAll('button.restore'))) b.disabled = busy;
  }

  /**
   * Asks, then restores checkpoint `turnId`; a refusal (a turn started, an ignored
   * file in the way) shows in the dialog, with the paths it names.
   * @param {string} turnId
   * @param {string} title
   * @param {string} intro
   * @param {string} submitLabel
   */
  confirm(turnId, title, intro, submitLabel) {
    const d = formDialog({
      title,
      intro,
      className: 'restore',
      fields: [],
      submitLabel,
      submit: async () => {
        await this.deps.request('session.restore', { sessionId: this.deps.sessionId, turnId });
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }

  /**
   * Whether a checkpoint precedes the turn `turnId` (which ended at seq `end`): what
   * an edit of its message restores the files to.
   * @param {string} turnId
   * @param {number | undefined} end
   */
  async before(turnId, end) {
    try {
      const r = await this.deps.request('session.checkpoints', { sessionId: this.deps.sessionId });
      return checkpointBefore(r.checkpoints, turnId, end);
    } catch {
      // Not a git repository, or the connection went: the box stays unchecked.
      return false;
    }
  }
}

/**
 * Whether the server has files to restore for an edit of the message of `turnId`: a
 * checkpoint of another turn recorded before that turn ended (the previous turn's may
 * land after the next one started).
 * @param {CheckpointInfo[]} list
 * @param {string} turnId
 * @param {number | undefined} end the seq of the turn's `turn_completed`
 */
export function checkpointBefore(list, turnId, end) {
  return list.some((c) => c.turnId !== turnId && c.seq < (end ?? Infinity));
}

/** A checkpoint the server made just before a restore, to undo it. @param {string | undefined} turnId */
export function isUndoCheckpoint(turnId) {
  return (turnId || '').startsWith('restore_');
}

/** How many files a checkpoint or restore changed, those it does not list included. @param {{files: string[], filesOmitted?: number}} ev */
export function fileCount(ev) {
  return ev.files.length + (ev.filesOmitted || 0);
}

/** @param {{files: string[], filesOmitted?: number}} ev */
function files(ev) {
  const n = fileCount(ev);
  return n ? `${n} file${n === 1 ? '' : 's'}` : 'no file changed';
}

/** The paths, for the line's tooltip. @param {{files: string[], filesOmitted?: number}} ev */
function fileList(ev) {
  return ev.files.join('\n') + (ev.filesOmitted ? `\n… and ${ev.filesOmitted} more` : '');
}

/**
 * A turn as people know it: "turn 2", and its message's start when known.
 * @param {string} turnId
 * @param {string} [text] the turn's user message
 */
export function turnName(turnId, text) {
  const n = /^turn_(\d+)$/.exec(turnId);
  const name = n ? `turn ${n[1]}` : turnId;
  const first = (text || '').split('\n')[0].trim();
  if (!first) return name;
  return `${name} (“${first.length > 40 ? `${first.slice(0, 40)}…` : first}”)`;
}

/** "Checkpoint · 3 files". @param {{files: string[], filesOmitted?: number}} ev */
export function checkpointText(ev) {
  return `Checkpoint · ${files(ev)}`;
}

/**
 * "Files restored to turn 2 · 3 files"; restoring the checkpoint a restore made
 * undoes that restore.
 * @param {{turnId?: string | null, files: string[], filesOmitted?: number}} ev
 * @param {string} name the restored turn's name
 */
export function restoredText(ev, name) {
  if (isUndoCheckpoint(ev.turnId || '')) return `Restore undone · ${files(ev)}`;
  return `Files restored to ${name} · ${files(ev)}`;
}
