// A session's "Files" panel: its working directory as a tree (each directory read
// when first opened), and a file's text in a plain text area that saves with the
// ETag it was read with (`If-Match`). A file changed on disk in between is a
// conflict (412): the panel says so and offers to reload it or to save over it.

import { h, clear } from './dom.js';

/**
 * @typedef {import('./wire.js').DirEntry} DirEntry
 * @typedef {import('./wire.js').FileContent} FileContent
 */

/** "1.2 KB" for a byte count. @param {number} n */
export function sizeText(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A child's path under `dir` (both relative, `/`-separated). @param {string} dir @param {string} name */
export function joinPath(dir, name) {
  return dir ? `${dir}/${name}` : name;
}

export class FilesPanel {
  /** @param {import('./chat.js').ChatView} view */
  constructor(view) {
    this.view = view;
    this.app = view.app;
    /** Directories shown open, by path ('' is the top). @type {Set<string>} */
    this.expanded = new Set(['']);
    /** Listings read, by directory path. @type {Map<string, DirEntry[]>} */
    this.listings = new Map();
    /** The file in the editor: what was read, with the ETag saves must match. @type {FileContent | null} */
    this.file = null;
    const headId = `files-head-${view.id}`;
    this.treeEl = h('ul.ws-tree', { 'aria-label': 'Working directory' });
    this.statusEl = h('p.ws-status', { role: 'status' });
    this.pathEl = h('h4.ws-file-path');
    this.metaEl = h('span.muted.ws-file-meta');
    this.text = /** @type {HTMLTextAreaElement} */ (h('textarea.field.ws-text', {
      spellcheck: 'false',
      'aria-label': 'File contents',
      oninput: () => this.onEdit(),
      onkeydown: (/** @type {KeyboardEvent} */ e) => {
        if ((e.ctrlKey || e.metaKey) && e.key === 's') {
          e.preventDefault();
          this.save(false);
        }
      },
    }));
    this.saveBtn = h('button.btn.tiny.primary', { type: 'button', disabled: true, onclick: () => this.save(false) }, 'Save');
    this.revertBtn = h('button.btn.tiny', { type: 'button', disabled: true, onclick: () => this.reload() }, 'Revert');
    this.fileStatus = h('div.ws-file-status', { role: 'status' });
    this.conflictEl = h('div.ws-conflict', { role: 'alert', hidden: true });
    this.editorEl = h('div.ws-editor', { hidden: true },
      h('div.ws-editor-head', this.pathEl, this.metaEl),
      this.conflictEl,
      this.text,
      h('div.row.ws-editor-actions', this.saveBtn, this.revertBtn, h('button.btn.tiny', { type: 'button', onclick: () => this.closeFile() }, 'Close file'), this.fileStatus));
    this.el = h('section.ws-panel.files', { id: `files-${view.id}`, 'aria-labelledby': headId, onkeydown: (/** @type {KeyboardEvent} */ e) => view.panelKey(e) },
      h('div.panel-head', h('h3', { id: headId }, 'Files'),
        h('button.btn.tiny', { type: 'button', 'aria-label': 'Close files', onclick: () => view.showPanel(null) }, '✕')),
      this.statusEl, this.treeEl, this.editorEl);
  }

  /** Reads the top directory (and any directory left open) again. */
  async load() {
    const dirs = [...this.expanded].sort();
    await Promise.all(dirs.map((d) => this.readDir(d)));
    this.renderTree();
  }

  /**
   * The working directory may have changed (a turn ended with new `git_state`):
   * re-read the open directories, soon and once for a burst.
   */
  refreshSoon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.load(), 150);
  }

  destroy() {
    clearTimeout(this.timer);
  }

  /** @param {string} dir */
  async readDir(dir) {
    try {
      const r = await this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.view.id)}/files?path=${encodeURIComponent(dir)}`);
      this.listings.set(dir, /** @type {import('./wire.js').DirListing} */ (r).entries);
      if (!dir) this.statusEl.textContent = '';
    } catch (e) {
      const err = /** @type {import('./conn.js').RequestError} */ (e);
      if (!dir) this.statusEl.textContent = `The working directory could not be read: ${err.message}`;
      // A directory that went away closes.
      this.listings.delete(dir);
      if (dir) this.expanded.delete(dir);
    }
  }

  renderTree() {
    const focused = /** @type {HTMLElement | null} */ (document.activeElement);
    const focusPath = focused && this.treeEl.contains(focused) ? focused.dataset.path : null;
    clear(this.treeEl).append(...this.entries(''));
    if (!this.listings.get('')?.length && !this.statusEl.textContent) this.statusEl.textContent = 'The directory is empty.';
    if (focusPath !== null && focusPath !== undefined) {
      /** @type {HTMLElement | null} */ (this.treeEl.querySelector(`button[data-path="${CSS.escape(focusPath)}"]`))?.focus();
    }
  }

  /** The rows of directory `dir` (and of its open subdirectories). @param {string} dir @returns {HTMLElement[]} */
  entries(dir) {
    const list = this.listings.get(dir) || [];
    return list.map((e) => {
      const path = joinPath(dir, e.name);
      if (e.kind === 'dir') {
        const open = this.expanded.has(path) && this.listings.has(path);
        return h('li.ws-dir',
          h('button.ws-entry', { type: 'button', 'aria-expanded': String(open), dataset: { path }, onclick: () => this.toggleDir(path) },
            h('span.ws-icon', { 'aria-hidden': 'true' }, open ? '▾' : '▸'), e.name, '/'),
          open ? h('ul', this.entries(path)) : null);
      }
      const current = this.file?.path === path;
      return h('li.ws-leaf',
        h('button.ws-entry', {
          type: 'button',
          'aria-current': current ? 'true' : false,
          dataset: { path },
          title: e.kind === 'symlink' ? 'a symbolic link' : `${sizeText(e.size)} · ${new Date(e.mtime).toLocaleString()}`,
          disabled: e.kind === 'other',
          onclick: () => this.openFile(path),
        }, h('span.ws-icon', { 'aria-hidden': 'true' }, e.kind === 'symlink' ? '↪' : '·'), e.name,
        h('span.muted.ws-size', e.kind === 'file' ? sizeText(e.size) : e.kind)));
    });
  }

  /** @param {string} path */
  async toggleDir(path) {
    if (this.expanded.has(path)) {
      this.expanded.delete(path);
    } else {
      this.expanded.add(path);
      await this.readDir(path);
    }
    this.renderTree();
  }

  // ---- the editor ---------------------------------------------------------------

  get dirty() {
    return !!this.file && this.text.value !== this.file.content;
  }

  onEdit() {
    this.saveBtn.disabled = !this.dirty;
    this.revertBtn.disabled = !this.dirty;
    this.fileStatus.textContent = this.dirty ? 'Edited, not saved' : '';
  }

  /** Opens `path` in the editor (asks first when the open file has unsaved edits). @param {string} path */
  async openFile(path) {
    if (this.dirty && this.file?.path !== path && !window.confirm(`Leave ${this.file?.path} without saving?`)) return;
    this.editorEl.hidden = false;
    this.pathEl.textContent = path;
    this.metaEl.textContent = '';
    this.fileStatus.textContent = 'Reading…';
    this.conflictEl.hidden = true;
    try {
      this.show(await this.read(path));
    } catch (e) {
      const err = /** @type {import('./conn.js').RequestError} */ (e);
      this.file = null;
      this.text.value = '';
      this.text.hidden = true;
      this.saveBtn.disabled = true;
      this.revertBtn.disabled = true;
      this.fileStatus.textContent = err.code === 'BINARY_FILE'
        ? 'A binary file: it is not shown here.'
        : `Not opened: ${err.message}`;
    }
    this.renderTree();
  }

  /** @param {string} path @returns {Promise<FileContent>} */
  read(path) {
    return this.app.conn.rest('GET', `/sessions/${encodeURIComponent(this.view.id)}/files/content?path=${encodeURIComponent(path)}`);
  }

  /** @param {FileContent} f */
  show(f) {
    this.file = f;
    this.text.hidden = false;
    this.text.value = f.content;
    this.text.setAttribute('aria-label', `Contents of ${f.path}`);
    this.pathEl.textContent = f.path;
    this.metaEl.textContent = `${sizeText(f.size)} · modified ${new Date(f.mtime).toLocaleString()}`;
    this.conflictEl.hidden = true;
    this.onEdit();
  }

  /** Reads the open file again, dropping edits (Revert, or "Load the new version"). */
  async reload() {
    if (!this.file) return;
    try {
      this.show(await this.read(this.file.path));
      this.fileStatus.textContent = 'Read again from disk';
      this.text.focus();
    } catch (e) {
      this.fileStatus.textContent = `Not read: ${/** @type {Error} */ (e).message}`;
    }
  }

  /**
   * Saves with `If-Match`: the ETag it was read with, or (`over`, after a conflict)
   * the ETag of what is on disk now, so the person's text replaces it knowingly.
   * @param {boolean} over
   */
  async save(over) {
    const f = this.file;
    if (!f) return;
    let etag = f.etag;
    this.saveBtn.disabled = true;
    this.fileStatus.textContent = 'Saving…';
    try {
      if (over) etag = (await this.read(f.path)).etag;
      /** @type {import('./wire.js').FileSaved} */
      const r = await this.app.conn.rest('PUT', `/sessions/${encodeURIComponent(this.view.id)}/files/content?path=${encodeURIComponent(f.path)}`,
        { content: this.text.value }, { 'If-Match': etag });
      this.file = { ...f, content: this.text.value, size: r.size, etag: r.etag, mtime: Date.now() };
      this.conflictEl.hidden = true;
      this.onEdit();
      this.fileStatus.textContent = 'Saved';
      this.refreshSoon();
      this.metaEl.textContent = `${sizeText(r.size)} · saved ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      const err = /** @type {import('./conn.js').RequestError} */ (e);
      if (err.status === 412) {
        this.conflict();
      } else {
        this.fileStatus.textContent = `Not saved: ${err.message}`;
      }
      this.saveBtn.disabled = !this.dirty;
    }
  }

  /** The file changed on disk since it was read: nothing was saved; say so, offer both ways. */
  conflict() {
    this.fileStatus.textContent = 'Not saved';
    const reload = h('button.btn.tiny', { type: 'button', onclick: () => this.reload() }, 'Load the new version');
    clear(this.conflictEl).append(
      h('strong', 'Conflict: '),
      `${this.file?.path} changed on disk after you opened it, so your edits were not saved. `,
      h('span.row', reload, h('button.btn.tiny.danger', { type: 'button', onclick: () => this.save(true) }, 'Save mine over it')));
    this.conflictEl.hidden = false;
    reload.focus();
  }

  closeFile() {
    if (this.dirty && !window.confirm(`Close ${this.file?.path} without saving?`)) return;
    this.file = null;
    this.editorEl.hidden = true;
    this.renderTree();
  }
}
