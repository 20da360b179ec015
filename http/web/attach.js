// Attachments: the composer's pending files (attached by the "Attach" button, by
// pasting or by dropping files; each uploaded at once and removable until sent) and
// the thumbnails a user message shows in the history.

import { h, clear } from './dom.js';

/** Image types every vendor that takes images accepts; others are sent as files. */
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/**
 * One pending attachment.
 * @typedef {object} Pending
 * @property {string} key local id (the list's and the remove button's)
 * @property {string} name
 * @property {string} mimeType
 * @property {string | null} uploadId set once the upload answered
 * @property {string | null} preview a data: URL for an image's thumbnail
 * @property {string | null} error why the upload failed
 */

/** @typedef {import('./wire.js').ContentBlock} ContentBlock */
/** @typedef {import('./wire.js').MessageContent} MessageContent */

export class ComposerAttachments {
  /**
   * @param {import('./conn.js').Conn} conn
   * @param {(text: string, kind?: string) => void} note where errors are told
   */
  constructor(conn, note) {
    this.conn = conn;
    this.note = note;
    /** @type {Pending[]} */
    this.items = [];
    /** Uploads still in flight; a send waits for them. */
    /** @type {Set<Promise<void>>} */
    this.inflight = new Set();
    this.nextKey = 1;
    this.fileInput = h('input', {
      type: 'file', multiple: true, hidden: true, tabindex: '-1', 'aria-hidden': 'true',
      onchange: () => {
        this.add(Array.from(this.fileInput.files || []));
        this.fileInput.value = '';
      },
    });
    this.button = h('button.btn.attach', {
      type: 'button', title: 'Attach images or files (or paste, or drop them here)',
      onclick: () => this.fileInput.click(),
    }, 'Attach');
    this.list = h('ul.attachments', { 'aria-label': 'Attachments' });
  }

  /**
   * Paste into `input` and drop onto `zone` attach files.
   * @param {HTMLElement} input
   * @param {HTMLElement} zone
   */
  wire(input, zone) {
    input.addEventListener('paste', (/** @type {ClipboardEvent} */ e) => {
      const files = Array.from(e.clipboardData?.files || []);
      if (!files.length) return;
      e.preventDefault();
      this.add(files);
    });
    zone.addEventListener('dragover', (/** @type {DragEvent} */ e) => {
      if (!e.dataTransfer || !Array.from(e.dataTransfer.types).includes('Files')) return;
      e.preventDefault();
      zone.classList.add('dropping');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('dropping'));
    zone.addEventListener('drop', (/** @type {DragEvent} */ e) => {
      zone.classList.remove('dropping');
      const files = Array.from(e.dataTransfer?.files || []);
      if (!files.length) return;
      e.preventDefault();
      this.add(files);
    });
  }

  /** @returns {number} attachments waiting to be sent */
  get count() {
    return this.items.length;
  }

  /**
   * Uploads each file and lists it.
   * @param {File[]} files
   */
  add(files) {
    for (const file of files) {
      /** @type {Pending} */
      const item = {
        key: `a${this.nextKey++}`,
        name: file.name || 'pasted',
        mimeType: file.type || 'application/octet-stream',
        uploadId: null,
        preview: null,
        error: null,
      };
      this.items.push(item);
      const job = this.upload(file, item).finally(() => {
        this.inflight.delete(job);
        this.render();
      });
      this.inflight.add(job);
    }
    this.render();
  }

  /**
   * @param {File} file
   * @param {Pending} item
   */
  async upload(file, item) {
    if (IMAGE_TYPES.includes(item.mimeType)) {
      item.preview = await new Promise((resolve) => {
        const reader = new FileReader();
        reader.onload = () => resolve(typeof reader.result === 'string' ? reader.result : null);
        reader.onerror = () => resolve(null);
        reader.readAsDataURL(file);
      });
    }
    try {
      const resp = await fetch(`/api/v1/uploads?name=${encodeURIComponent(item.name)}`, {
        method: 'POST',
        headers: this.conn.headers({ 'Content-Type': item.mimeType }),
        body: file,
      });
      /** @type {any} */
      let data = null;
      try { data = await resp.json(); } catch { data = null; }
      if (!resp.ok) throw new Error(data?.error?.message || `HTTP ${resp.status}`);
      item.uploadId = data.uploadId;
    } catch (err) {
      item.error = /** @type {Error} */ (err).message;
      this.note(`${item.name} was not attached: ${item.error}`, 'error');
    }
  }

  /** @param {string} key */
  remove(key) {
    this.items = this.items.filter((i) => i.key !== key);
    this.render();
  }

  /** Waits for uploads still in flight. */
  async settled() {
    await Promise.all(Array.from(this.inflight));
  }

  /**
   * The message's content: the text alone when nothing is attached, else blocks.
   * Attachments whose upload failed are left out (the person was told).
   * @param {string} text
   * @returns {MessageContent}
   */
  content(text) {
    const ready = this.items.filter((i) => i.uploadId);
    if (!ready.length) return text;
    /** @type {ContentBlock[]} */
    const blocks = [];
    if (text.trim()) blocks.push({ type: 'text', text });
    for (const i of ready) {
      const uploadId = /** @type {string} */ (i.uploadId);
      blocks.push(IMAGE_TYPES.includes(i.mimeType) ? { type: 'image', uploadId } : { type: 'file', uploadId });
    }
    return blocks;
  }

  /** Forgets what was sent. */
  clear() {
    this.items = [];
    this.render();
  }

  render() {
    clear(this.list).append(...this.items.map((i) => h('li.chip.attachment', { dataset: { id: i.key } },
      i.preview ? h('img.thumb', { src: i.preview, alt: '' }) : null,
      h('span', i.uploadId ? i.name : i.error ? `${i.name} (failed)` : `${i.name} (uploading…)`),
      h('button.btn.tiny.link', {
        type: 'button', 'aria-label': `Remove ${i.name}`, title: `Remove ${i.name}`,
        onclick: () => this.remove(i.key),
      }, '×'))));
  }
}

/**
 * What a `user_message` with `content` shows besides its text: image thumbnails
 * (served by the session, which checks the reader's access) and file names.
 * @param {import('./conn.js').Conn} conn
 * @param {string} sessionId
 * @param {any[] | undefined} content the event's blocks
 * @returns {any} an element, or null for a text-only message
 */
export function attachmentsView(conn, sessionId, content) {
  const blocks = (content || []).filter((b) => b.type === 'image' || b.type === 'file');
  if (!blocks.length) return null;
  const q = conn.token ? `?token=${encodeURIComponent(conn.token)}` : '';
  return h('div.attached', ...blocks.map((b) => {
    const url = `/api/v1/sessions/${encodeURIComponent(sessionId)}/uploads/${encodeURIComponent(b.uploadId)}${q}`;
    if (b.type === 'image') {
      return h('a.thumb-link', { href: url, target: '_blank', rel: 'noopener' },
        h('img.thumb', { src: url, alt: b.name ? `Image ${b.name}` : 'Attached image', loading: 'lazy' }));
    }
    return h('span.chip.file', b.path ? `${b.name || 'file'} → ${b.path}` : (b.name || 'file'));
  }));
}
