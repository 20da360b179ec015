// "On this machine": the Claude Code and Codex sessions already on the server's
// machine (`external.list`, their CLIs' own transcripts under the user's roots), each
// with Continue (`external.import`): a session whose history holds the transcript's
// conversation and whose next turn resumes the CLI's session. A session already
// continued here opens instead.

import { h, clear } from './dom.js';

/** @typedef {import('./conn.js').Conn} Conn */
/** @typedef {import('./wire.js').ExternalSession} ExternalSession */

/** Words for the CLIs by vendor id. */
const CLI = { claude: 'Claude Code', codex: 'Codex' };

/** The history line of an `imported` event. @param {any} ev */
export function importedText(ev) {
  const cli = CLI[ev.vendor] || ev.vendor;
  const left = ev.messages - ev.shown;
  const older = left > 0 ? ` (the ${left} oldest not shown)` : '';
  const bad = ev.skippedLines ? ` · ${ev.skippedLines} unreadable line${ev.skippedLines === 1 ? '' : 's'} skipped` : '';
  return `Continued from ${cli} session ${ev.vendorSessionId}: ${ev.messages} message${ev.messages === 1 ? '' : 's'}${older}${bad}`;
}

/** "3 messages · 2 h ago" for a listed session. @param {ExternalSession} s */
export function externalMeta(s, now = Date.now()) {
  const mins = Math.max(0, Math.round((now - s.lastActivity) / 60000));
  const ago = mins < 1 ? 'just now' : mins < 60 ? `${mins} min ago` : mins < 48 * 60 ? `${Math.round(mins / 60)} h ago` : `${Math.round(mins / 1440)} days ago`;
  return `${CLI[s.vendor] || s.vendor} · ${s.messages} message${s.messages === 1 ? '' : 's'} · ${ago}`;
}

/**
 * Shows the dialog; `open(id)` shows a tandem session.
 * @param {Conn} conn @param {(id: string) => void} open
 */
export async function openOnThisMachine(conn, open) {
  const list = h('ul.machine-list', { 'aria-label': 'Sessions on this machine' });
  const error = h('div.error-text', { role: 'alert' });
  const close = h('button.btn', { type: 'button', onclick: () => dialog.close() }, 'Close');
  const dialog = /** @type {HTMLDialogElement} */ (h('dialog.create.machine', { 'aria-labelledby': 'machine-title' },
    h('h2#machine-title', 'On this machine'),
    h('p.muted', 'Claude Code and Codex sessions found on the server’s machine, in your folders.'),
    list, error,
    h('div.row.end', close)));
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
  list.append(h('li.muted', 'Looking…'));
  let found;
  try {
    found = /** @type {{sessions: ExternalSession[]}} */ (await conn.rest('GET', '/external-sessions')).sessions;
  } catch (e) {
    clear(list);
    error.textContent = `Cannot list them: ${e.message}`;
    return;
  }
  clear(list);
  if (!found.length) list.append(h('li.muted', 'None found.'));
  for (const s of found) {
    const go = h('button.btn.tiny.primary', {
      type: 'button',
      'aria-label': `${s.sessionId ? 'Open' : 'Continue'} ${s.title}`,
      onclick: async () => {
        error.textContent = '';
        go.disabled = true;
        try {
          const info = s.sessionId ? { id: s.sessionId } : await conn.rest('POST', '/external-sessions/import', { vendor: s.vendor, vendorSessionId: s.vendorSessionId });
          dialog.close();
          open(info.id);
        } catch (e) {
          error.textContent = e.message;
          go.disabled = false;
        }
      },
    }, s.sessionId ? 'Open' : 'Continue');
    list.append(h('li.machine-item', { dataset: { vendorSession: s.vendorSessionId } },
      h('div.machine-text', h('strong', s.title), h('div.muted', externalMeta(s)), h('code.muted', s.cwd)),
      go));
  }
}
