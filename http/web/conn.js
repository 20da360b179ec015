// The connection to the server: REST with the bearer token, and one WebSocket that
// reconnects by itself. Requests carry a requestId and resolve with their reply.

const BACKOFF_MS = [200, 400, 800, 1500, 3000];

export class Conn extends EventTarget {
  constructor(token) {
    super();
    this.token = token;
    this.ws = null;
    this.state = 'connecting';
    this.pending = new Map();
    this.nextId = 1;
    this.attempt = 0;
    /** The last frames sent, for the page's own tests (window.__tandem.sent). */
    this.sent = [];
  }

  headers(extra = {}) {
    return this.token ? { Authorization: `Bearer ${this.token}`, ...extra } : extra;
  }

  /** REST call; resolves with the JSON body, rejects with {status, code, message}. */
  async rest(method, path, body) {
    // The server refuses a POST, PUT or PATCH that is not JSON, also without a body.
    const json = method !== 'GET' && method !== 'HEAD';
    const init = { method, headers: this.headers(json ? { 'Content-Type': 'application/json' } : {}) };
    if (body) init.body = JSON.stringify(body);
    const resp = await fetch(`/api/v1${path}`, init);
    let data = null;
    try { data = await resp.json(); } catch { data = null; }
    if (!resp.ok) {
      const err = new Error(data?.error?.message || `HTTP ${resp.status}`);
      err.status = resp.status;
      err.code = data?.error?.code;
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
        else p.reject(Object.assign(new Error(frame.error || frame.code), { code: frame.code }));
        return;
      }
    }
    this.dispatchEvent(new CustomEvent('frame', { detail: frame }));
  }

  /** Sends without waiting for an answer. False when not connected. */
  send(frame) {
    this.sent.push(frame);
    if (this.sent.length > 100) this.sent.shift();
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Sends a request; resolves with its reply, rejects with its protocol_error. */
  request(type, fields = {}) {
    // `chat.permission-response` names the permission with the frame's own requestId,
    // and its reply (or error) echoes that id: it is the key the answer comes back on.
    const requestId = fields.requestId || `w${this.nextId++}`;
    return new Promise((resolve, reject) => {
      if (!this.send({ type, requestId, ...fields })) {
        reject(Object.assign(new Error('not connected'), { code: 'DISCONNECTED' }));
        return;
      }
      this.pending.set(requestId, { resolve, reject });
    });
  }
}
