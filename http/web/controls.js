// A session's controls for what its turns do on their own: what happens when its
// vendor's usage limit stops a turn (`onLimit`), and a loop toward a goal
// (`loop.start`, `loop.stop`); and the Worker approvals choice of "Add a Worker".

import { h, clear } from './dom.js';
import { formDialog } from './dialogs.js';

/** The choices of a Worker's permission requests (`workerApprovals`). */
export const WORKER_APPROVALS = [
  ['user', 'Ask me'],
  ['driver', 'Its Driver decides'],
  ['bypass', 'Allow everything'],
];

/** The "Worker approvals" select of the Add Worker dialog. */
export function workerApprovalsSelect() {
  return /** @type {HTMLSelectElement} */ (h('select.field', { name: 'workerApprovals' },
    ...WORKER_APPROVALS.map(([value, text]) => h('option', { value }, text))));
}

/**
 * The select's value for an `onLimit` (`"fail"`, `"wait"`, `{handoff: VENDOR}`).
 * @param {any} onLimit
 */
export function onLimitValue(onLimit) {
  if (onLimit && typeof onLimit === 'object' && onLimit.handoff) return `handoff:${onLimit.handoff}`;
  return onLimit === 'wait' ? 'wait' : 'fail';
}

/**
 * The `onLimit` of a select value.
 * @param {string} value
 * @returns {import('./wire.js').OnLimit}
 */
export function onLimitOf(value) {
  if (value.startsWith('handoff:')) return { handoff: value.slice('handoff:'.length) };
  return value === 'wait' ? 'wait' : 'fail';
}

/**
 * The "On limit" setting: its select, its error and the label around them.
 * @param {import('./chat.js').ChatView} view
 */
export function onLimitSetting(view) {
  const select = /** @type {HTMLSelectElement} */ (h('select.field.tiny', { 'aria-label': `On limit of ${view.info.title || view.id}`, name: 'onLimit' }));
  const error = h('span.error-text.setting-error', { role: 'alert' });
  select.addEventListener('change', async () => {
    error.textContent = '';
    select.disabled = true;
    try {
      const r = await view.app.conn.request('session.configure', { sessionId: view.id, onLimit: onLimitOf(select.value) });
      view.app.store.upsertSession(r.session);
    } catch (err) {
      error.textContent = `On limit not changed: ${/** @type {Error} */ (err).message}`;
    } finally {
      select.disabled = false;
      select.dataset.key = '';
      fillOnLimit(view, select);
    }
  });
  const wrap = h('label.setting', h('span', 'On limit'), select, error);
  return { select, error, wrap };
}

/**
 * Shows the session's `onLimit`, with a hand-off to each other installed vendor.
 * @param {import('./chat.js').ChatView} view @param {HTMLSelectElement} select
 */
export function fillOnLimit(view, select) {
  const current = onLimitValue(/** @type {any} */ (view.info).onLimit);
  const others = view.app.store.vendors.filter((v) => v.installed && v.id !== view.info.vendor).map((v) => v.id);
  /** @type {[string, string][]} */
  const options = [['fail', 'Stop'], ['wait', 'Wait and retry'], ...others.map((id) => /** @type {[string, string]} */ ([`handoff:${id}`, `Hand off to ${id}`]))];
  if (!options.some(([v]) => v === current)) options.push([current, current]);
  const key = JSON.stringify([options, current]);
  if (select.dataset.key === key) return;
  select.dataset.key = key;
  clear(select).append(...options.map(([value, text]) => h('option', { value, selected: value === current }, text)));
}

/**
 * The "Loop…" dialog: a goal, a check command, at most how many iterations.
 * @param {import('./chat.js').ChatView} view
 */
export function openLoop(view) {
  const goal = /** @type {HTMLTextAreaElement} */ (h('textarea.field', { name: 'goal', rows: 3, required: true }));
  goal.value = view.input.value;
  const command = /** @type {HTMLInputElement} */ (h('input.field', { name: 'command', required: true, placeholder: 'cargo test' }));
  const max = /** @type {HTMLInputElement} */ (h('input.field', { name: 'maxIterations', type: 'number', min: '1', max: '100', value: '5' }));
  const cooldown = /** @type {HTMLInputElement} */ (h('input.field', { name: 'cooldownSeconds', type: 'number', min: '0', max: '86400', value: '0' }));
  const d = formDialog({
    title: 'Loop until done',
    className: 'loop',
    intro: 'Each iteration is a turn toward the goal, given the last check’s output; after each, the check command runs in the session’s directory. The loop ends when it passes, after the last iteration, or when you stop it.',
    fields: [['Goal', goal], ['Check command', command], ['Iterations at most', max], ['Pause between, seconds', cooldown]],
    submitLabel: 'Start loop',
    submit: async () => {
      const r = await view.app.conn.request('loop.start', {
        sessionId: view.id,
        goal: goal.value.trim(),
        check: { command: command.value.trim() },
        maxIterations: Number(max.value),
        cooldownSeconds: Number(cooldown.value) || undefined,
      });
      view.note(`Loop started (${r.loop.loopId})`);
    },
  });
  d.el.addEventListener('close', () => d.el.remove());
  d.open();
}

/** Stops the session's loop. @param {import('./chat.js').ChatView} view */
export async function stopLoop(view) {
  try {
    await view.app.conn.request('loop.stop', { sessionId: view.id });
  } catch (e) {
    view.note(`Loop not stopped: ${/** @type {Error} */ (e).message}`, 'error');
  }
}
