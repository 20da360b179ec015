// The connection to the server: REST with the bearer token, and one WebSocket that
// reconnects by itself. Requests carry a requestId and resolve with their reply, or
// fail after REQUEST_TIMEOUT_MS without one.

const BACKOFF_MS = [200, 400, 800, 1500, 3000];
/** How long a request waits for its reply before it fails with `TIMEOUT`. */
export const REQUEST_TIMEOUT_MS = 15000;

/**
 * A refused request: its code, HTTP status (REST), and the paths the refusal names
 * (a merge's conflicting files, a dirty base's files), when it names any.
 * @typedef {Error & {code?: string, status?: number, paths?: string[]}} RequestError
 */

export class Conn extends EventTarget {
  constructor(token) {
    super();
    this.token = token;
    this.ws = null;
    this.state = 'connecting';
    this.pending = new Map();
    this.nextId = 1;
    this.attempt = 0;
    /** Milliseconds a request waits for its reply. */
    this.timeoutMs = REQUEST_TIMEOUT_MS;
  }

  headers(extra = {}) {
    return this.token ? { Authorization: `Bearer ${this.token}`, ...extra } : extra;
  }

  /**
   * REST call; resolves with the JSON body, rejects with {status, code, message}.
   * @param {string} method
   * @param {string} path
   * @param {any} [body]
   * @param {Record<string, string>} [extra] more headers (`If-Match` for a save)
   * @returns {Promise<any>}
   */
  async rest(method, path, body, extra = {}) {
    // The server refuses a POST, PUT or PATCH that is not JSON, also without a body.
    const json = method !== 'GET' && method !== 'HEAD';
    /** @type {RequestInit} */
    const init = { method, headers: this.headers(json ? { 'Content-Type': 'application/json', ...extra } : extra) };
    if (body) init.body = JSON.stringify(body);
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), this.timeoutMs);
    init.signal = ctl.signal;
    let resp;
    try {
      resp = await fetch(`/api/v1${path}`, init);
    } catch (e) {
      throw timedOut(ctl.signal.aborted, e);
    } finally {
      clearTimeout(timer);
    }
    let data = null;
    try { data = await resp.json(); } catch { data = null; }
    if (!resp.ok) {
      /** @type {RequestError} */
      const err = new Error(data?.error?.message || `HTTP ${resp.status}`);
      err.status = resp.status;
      err.code = data?.error?.code;
      if (Array.isArray(data?.error?.paths)) err.paths = data.error.paths;
      throw err;
    }
    return data;
  }

  connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = this.token ? `?token=${encodeURIComponent(this.token)}` : '';
    const ws = new WebSocket(`${proto}//${location.host}/ws${q}`);
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.setState('open');
    };
    ws.onmessage = (e) => {
      let frame;
      try { frame = JSON.parse(e.data); } catch { return; }
      this.onFrame(frame);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const p of this.pending.values()) p.reject(Object.assign(new Error('connection lost'), { code: 'DISCONNECTED' }));
      this.pending.clear();
      this.setState('reconnecting');
      if (this.stopped) return;
      const wait = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
      this.attempt++;
      setTimeout(() => { if (!this.stopped) this.connect(); }, wait);
    };
  }

  /** Stops reconnecting (the page is leaving for the login form). */
  stop() {
    this.stopped = true;
    if (this.ws) this.ws.close();
  }

  setState(state) {
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', { detail: state }));
  }

  onFrame(frame) {
    if (frame.requestId && (frame.kind === 'reply' || frame.kind === 'protocol_error')) {
      const p = this.pending.get(frame.requestId);
      if (p) {
        this.pending.delete(frame.requestId);
        if (frame.kind === 'reply') p.resolve(frame);
        else p.reject(Object.assign(new Error(frame.error || frame.code), { code: frame.code, paths: frame.paths }));
        return;
      }
    }
    this.dispatchEvent(new CustomEvent('frame', { detail: frame }));
  }

  /**
   * Sends without waiting for an answer. False when not connected.
   * @param {import('./wire.js').ClientFrame} frame
   */
  send(frame) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /**
   * Sends a request; resolves with its reply, rejects with its protocol_error, or
   * with `TIMEOUT` when no answer comes within `timeoutMs` (a late answer is then
   * ignored).
   * @template {keyof import('./wire.js').Requests} T
   * @param {T} type
   * @param {import('./wire.js').Requests[T]['params'] & {requestId?: string}} fields
   * @returns {Promise<import('./wire.js').Requests[T]['result'] & {requestId?: string}>}
   */
  request(type, fields) {
    // `chat.permission-response` names the permission with the frame's own requestId,
    // and its reply (or error) echoes that id: it is the key the answer comes back on.
    const requestId = fields.requestId || `w${this.nextId++}`;
    return new Promise((resolve, reject) => {
      if (!this.send(/** @type {any} */ ({ type, ...fields, requestId }))) {
        reject(Object.assign(new Error('not connected'), { code: 'DISCONNECTED' }));
        return;
      }
      const timer = setTimeout(() => {
        if (this.pending.get(requestId)?.timer !== timer) return;
        this.pending.delete(requestId);
        reject(timedOut(true));
      }, this.timeoutMs);
      this.pending.set(requestId, {
        resolve: (/** @type {any} */ v) => { clearTimeout(timer); resolve(v); },
        reject: (/** @type {any} */ e) => { clearTimeout(timer); reject(e); },
        timer,
      });
    });
  }
}

/**
 * The error of a request that got no answer in time (or a failed fetch).
 * @param {boolean} timeout
 * @param {unknown} [cause]
 * @returns {RequestError}
 */
function timedOut(timeout, cause) {
  if (!timeout) return Object.assign(new Error(`the server could not be reached (${cause})`), { code: 'DISCONNECTED' });
  return Object.assign(new Error('no answer from the server in time; it may be overloaded or unreachable'), { code: 'TIMEOUT' });
}
