// The page's dialogs: one modal form builder and the forms built with it (hand off,
// add a Worker, schedule a message, open a second session beside this one). Each
// submit sends one public-protocol request; a refusal is shown in the dialog, which
// stays open with what was entered.

import { h, clear, append } from './dom.js';

let nextId = 1;

/**
 * @typedef {object} FormDialog
 * @property {HTMLDialogElement} el
 * @property {() => void} open
 * @property {() => void} close
 * @property {HTMLElement} error
 */

/**
 * A modal form: `fields` are `[label, control]` rows; `submit` runs on submit and
 * closes the dialog when it resolves, or shows its error (and the paths it names,
 * such as a refused merge's conflicting files), with what `refused` adds for that
 * error (a way to retry differently). `danger` marks a submit that destroys
 * something.
 * @param {{title: string, fields: [string, HTMLElement][], submitLabel: string, submit: () => Promise<void>, className?: string, intro?: HTMLElement | string, danger?: boolean, refused?: (err: import('./conn.js').RequestError) => HTMLElement | null}} spec
 * @returns {FormDialog}
 */
export function formDialog(spec) {
  const titleId = `dialog-title-${nextId++}`;
  const error = h('div.error-text', { role: 'alert' });
  const submitBtn = /** @type {HTMLButtonElement} */ (h(spec.danger ? 'button.btn.danger' : 'button.btn.primary', { type: 'submit' }, spec.submitLabel));
  const el = /** @type {HTMLDialogElement} */ (h(`dialog.create.${spec.className || 'form'}`, { 'aria-labelledby': titleId },
    h('form', {
      method: 'dialog',
      onsubmit: async (/** @type {Event} */ e) => {
        e.preventDefault();
        error.textContent = '';
        submitBtn.disabled = true;
        try {
          await spec.submit();
          el.close();
        } catch (err) {
          const refusal = /** @type {import('./conn.js').RequestError} */ (err);
          showError(error, refusal);
          append(error, [spec.refused?.(refusal)]);
        } finally {
          submitBtn.disabled = false;
        }
      },
    },
    h(`h2#${titleId}`, spec.title),
    spec.intro ? h('p.muted', spec.intro) : null,
    spec.fields.map(([label, control]) => h('label.field-row', h('span', label), control)),
    error,
    h('div.row.end', h('button.btn', { type: 'button', onclick: () => el.close() }, 'Cancel'), submitBtn))));
  document.body.append(el);
  return {
    el,
    error,
    open: () => {
      error.textContent = '';
      el.showModal();
      const first = /** @type {HTMLElement | null} */ (el.querySelector('select, input, textarea'));
      first?.focus();
    },
    close: () => el.close(),
  };
}

/**
 * An error in a dialog: its message, and the paths it names as a list.
 * @param {HTMLElement} el
 * @param {import('./conn.js').RequestError} err
 */
export function showError(el, err) {
  clear(el).append(err.message);
  const paths = err.paths || [];
  if (paths.length) el.append(h('ul.error-paths', paths.map((p) => h('li', h('code', p)))));
}

/**
 * Vendor, model and effort selects filled from `GET /vendors` (installed vendors
 * only); `values()` gives what is chosen, empty strings left out.
 * @param {() => import('./wire.js').VendorInfo[]} vendors
 * @param {{vendor?: string, model?: string, effort?: string}} [preset]
 */
export function vendorPicker(vendors, preset = {}) {
  const vendor = /** @type {HTMLSelectElement} */ (h('select.field', { name: 'vendor', onchange: () => fill() }));
  const model = /** @type {HTMLSelectElement} */ (h('select.field', { name: 'model' }));
  const effort = /** @type {HTMLSelectElement} */ (h('select.field', { name: 'effort' }));
  const fill = () => {
    const v = vendors().find((x) => x.id === vendor.value);
    clear(model).append(h('option', { value: '' }, 'default'), ...(v?.models || []).map((m) => h('option', { value: m, selected: m === preset.model }, m)));
    clear(effort).append(h('option', { value: '' }, 'default'), ...(v?.effortLevels || []).map((e) => h('option', { value: e, selected: e === preset.effort }, e)));
  };
  const reset = () => {
    clear(vendor).append(...vendors().filter((v) => v.installed).map((v) => h('option', { value: v.id, selected: v.id === preset.vendor }, v.displayName)));
    fill();
  };
  reset();
  return {
    /** @type {[string, HTMLElement][]} */
    fields: [['Vendor', vendor], ['Model', model], ['Effort', effort]],
    reset,
    values: () => ({ vendor: vendor.value, model: model.value || undefined, effort: effort.value || undefined }),
  };
}

/**
 * A `datetime-local` value (the person's own time zone) as RFC 3339 UTC; throws a
 * readable error when it is empty or not a time.
 * @param {string} local
 */
export function localToRfc3339(local) {
  if (!local) throw new Error('Choose a date and time.');
  const d = new Date(local);
  if (Number.isNaN(d.getTime())) throw new Error(`“${local}” is not a date and time.`);
  return d.toISOString();
}

/**
 * The `datetime-local` value for `ms` in the person's time zone.
 * @param {number} ms
 */
export function toLocalInput(ms) {
  const d = new Date(ms);
  const pad = (/** @type {number} */ n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
