// tandem's page: log in with the token, list sessions live, open one (or a Driver and
// its Worker side by side), and keep up across reconnects. Plain modules, no build.

import { h, clear, ago, clock, keepFocus } from './dom.js';
import { Conn } from './conn.js';
import { ChatView } from './chat.js';

const TOKEN_KEY = 'tandem.token';
/** Sessions per list page (the server's default; at most 1,000). */
const LIST_PAGE = 100;
const $ = (sel) => document.querySelector(sel);

class App {
  constructor(token) {
    this.conn = new Conn(token);
    this.sessions = new Map();
    this.vendors = [];
    this.pairs = new Map();
    this.views = new Map();
    this.layoutKey = '';
    this.route = { id: null };
    this.runningOpen = false;
    this.everOpen = false;
    /** Bumped by each full list load, so an older load that is still paging stops. */
    this.listGen = 0;
    /** Ids upserted while a load pages through the list: those pages are older news. */
    this.touched = null;
    /** True once every page of the list has been read at least once. */
    this.listComplete = false;
  }

  // ---- start ----------------------------------------------------------------------

  async start() {
    const [list, vendors, pairs] = await Promise.all([
      this.conn.rest('GET', `/sessions?limit=${LIST_PAGE}`),
      this.conn.rest('GET', '/vendors'),
      this.conn.rest('GET', '/pairs'),
    ]);
    for (const s of list.sessions) this.sessions.set(s.id, s);
    this.vendors = vendors.vendors;
    this.setPairs(pairs.pairs);
    this.buildShell();
    this.conn.addEventListener('frame', (e) => this.onFrame(e.detail));
    this.conn.addEventListener('state', (e) => this.onState(e.detail));
    this.conn.connect();
    window.addEventListener('hashchange', () => this.navigate());
    document.addEventListener('keydown', (e) => this.onGlobalKey(e));
    setInterval(() => { this.renderList(); this.renderPairBar(); }, 10000);
    this.navigate();
  }

  installedVendors() {
    return this.vendors.filter((v) => v.installed);
  }

  buildShell() {
    this.connEl = h('span.conn', { role: 'status' }, 'Connecting…');
    this.runningBtn = h('button.btn', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'running', onclick: () => this.toggleRunning() }, 'Running');
    this.listEl = h('ul.session-list', { 'aria-label': 'Sessions' });
    this.filterEl = h('input.field.filter', { type: 'search', placeholder: 'Filter sessions (press /)', 'aria-label': 'Filter sessions', oninput: () => this.renderList() });
    this.mainEl = h('main.main#main', { tabindex: '-1' });
    this.runningEl = h('aside.running#running', { hidden: true, 'aria-label': 'Running work' });
    this.banner = h('div.banner', { hidden: true, role: 'alert' });
    const shell = h('div.shell',
      h('header.top',
        h('a.brand', { href: '#/' }, h('img', { src: '/assets/favicon.svg', alt: '', width: 18, height: 18 }), 'tandem'),
        this.connEl,
        h('span.spacer'),
        this.runningBtn,
        h('button.btn.primary', { type: 'button', onclick: () => this.openCreate() }, 'New session')),
      this.banner,
      h('nav.sidebar', { 'aria-label': 'Sessions' }, h('h1.side-title', 'Sessions'), this.filterEl, this.listEl),
      this.mainEl,
      this.runningEl);
    clear(document.body).append(h('a.skip', { href: '#main', onclick: (e) => { e.preventDefault(); this.mainEl.focus(); } }, 'Skip to conversation'), shell, this.buildCreateDialog(), this.buildArchiveDialog());
    this.renderList();
  }

  // ---- connection -----------------------------------------------------------------

  onState(state) {
    if (state === 'open') {
      this.connEl.textContent = 'Live';
      this.connEl.className = 'conn live';
      this.banner.hidden = true;
      // Watch first, then resubscribe from the last seq each view has: the server
      // replays exactly what was missed, and views drop anything they already hold.
      this.loadSessions();
      for (const v of this.views.values()) v.subscribe();
      if (this.everOpen) {
        this.pairsChanged();
        this.refreshRunning();
      }
      this.everOpen = true;
    } else {
      // A socket refused over and over may mean the token is no longer valid (a reset
      // data directory): ask REST, and go back to the login page if so.
      if (this.conn.attempt === 3) {
        this.conn.rest('GET', '/vendors').catch((err) => {
          if (err.status === 401) {
            this.conn.stop();
            localStorage.removeItem(TOKEN_KEY);
            showLogin('The server no longer accepts this token.');
          }
        });
      }
      this.connEl.textContent = 'Reconnecting…';
      this.connEl.className = 'conn down';
      this.banner.hidden = false;
      this.banner.textContent = 'Connection lost. Reconnecting; nothing you see will be lost or repeated.';
    }
  }

  onFrame(f) {
    switch (f.kind) {
      case 'session_upserted': {
        this.touched?.add(f.session.id);
        if (f.session.archivedAt) {
          this.forget(f.session.id);
          return;
        }
        const old = this.sessions.get(f.session.id);
        this.sessions.set(f.session.id, f.session);
        this.scheduleList();
        const v = this.views.get(f.session.id);
        if (v) v.updateHeader();
        if (old?.pairId !== f.session.pairId) this.pairsChanged();
        if (this.layoutKey === `missing:${f.session.id}` || this.layoutKey === `loading:${f.session.id}`) this.layout();
        if (this.runningOpen) this.scheduleRunning();
        return;
      }
      case 'chat_subscribed':
        this.views.get(f.sessionId)?.onSubscribed(f);
        return;
      case 'lagged': {
        // The server dropped this subscription; pick up right after what we hold.
        const v = this.views.get(f.sessionId);
        if (v) {
          v.stats.lagged = (v.stats.lagged || 0) + 1;
          v.subscribe();
        }
        return;
      }
      case 'protocol_error':
        console.warn('protocol error', f);
        return;
      default:
        if (f.sessionId && typeof f.seq === 'number') this.views.get(f.sessionId)?.onEvent(f);
    }
  }

  // ---- session list ---------------------------------------------------------------

  /**
   * Reads every visible session: `sessions.watch` answers with the first page and
   * starts the `session_upserted` stream, `sessions.list` follows `nextCursor` for
   * the rest. Pages are merged as they come; an upsert seen meanwhile wins over a
   * page's copy, and sessions no page named (archived while we were away) go.
   */
  async loadSessions() {
    const gen = ++this.listGen;
    const touched = new Set();
    const seen = new Set();
    this.touched = touched;
    try {
      let page = await this.conn.request('sessions.watch', { limit: LIST_PAGE });
      for (;;) {
        if (gen !== this.listGen) return;
        for (const s of page.sessions || []) {
          seen.add(s.id);
          if (!touched.has(s.id)) this.sessions.set(s.id, s);
        }
        this.scheduleList();
        if (!page.nextCursor) break;
        page = await this.conn.request('sessions.list', { limit: LIST_PAGE, cursor: page.nextCursor });
      }
    } catch {
      // The socket went away; the next `open` loads again.
      return;
    }
    if (gen !== this.listGen) return;
    this.touched = null;
    for (const id of [...this.sessions.keys()]) {
      if (!seen.has(id) && !touched.has(id)) this.sessions.delete(id);
    }
    this.listComplete = true;
    this.renderList();
    for (const v of this.views.values()) v.updateHeader();
    if (this.layoutKey.startsWith('missing:') || this.layoutKey.startsWith('loading:')) this.layout();
  }

  /** A session archived (here or elsewhere): out of the list, and closed if open. */
  forget(id) {
    this.sessions.delete(id);
    this.scheduleList();
    if (this.route.id === id || this.layoutKey.includes(id)) {
      location.hash = '#/';
      this.navigate();
    }
  }

  scheduleList() {
    if (this.listPending) return;
    this.listPending = true;
    requestAnimationFrame(() => {
      this.listPending = false;
      this.renderList();
    });
  }

  /** Roots by latest activity; each Driver's Worker and spawned children below it. */
  tree() {
    const all = [...this.sessions.values()].sort((a, b) => b.lastActivity - a.lastActivity);
    const children = new Map();
    const placed = new Set();
    const under = (parent, child) => {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(child);
      placed.add(child.id);
    };
    for (const p of this.pairs.values()) {
      const w = this.sessions.get(p.workerId);
      if (w && this.sessions.has(p.driverId)) under(p.driverId, w);
    }
    for (const s of all) if (s.parentId && this.sessions.has(s.parentId) && !placed.has(s.id)) under(s.parentId, s);
    return { roots: all.filter((s) => !placed.has(s.id)), children };
  }

  renderList() {
    if (!this.listEl) return;
    const tree = this.tree();
    const { children } = tree;
    // A filter shows matching sessions (and the Driver or parent of a match).
    const q = this.filterEl.value.trim().toLowerCase();
    const hit = (s) => !q || `${s.title} ${s.vendor} ${s.model} ${s.status}`.toLowerCase().includes(q)
      || (children.get(s.id) || []).some(hit);
    const roots = tree.roots.filter(hit);
    const row = (s, depth) => {
      const bg = s.backgroundTasks?.length || 0;
      const a = h('a.session', {
        href: `#/s/${s.id}`,
        'aria-current': this.route.id === s.id || this.layoutKey.includes(s.id) ? 'page' : false,
        dataset: { id: s.id, status: s.status },
      },
      h('span.dot', { class: `dot st-${s.status}`, title: s.status }),
      h('span.name', s.title || s.id),
      h('span.badges',
        s.role ? h(`span.badge.role-${s.role}`, { title: s.role }, s.role === 'driver' ? 'D' : 'W') : null,
        s.parentId ? h('span.badge.child', { title: 'spawned' }, 'sub') : null,
        bg ? h('span.badge.bg', { title: `${bg} background task(s)` }, `⚙${bg}`) : null),
      h('span.sub', s.status === 'idle' ? h('span.sr', 'idle, ') : h(`span.st-label.st-${s.status}`, s.status),
        [s.vendor, s.model].filter(Boolean).join(' · '), h('span.when', { title: new Date(s.lastActivity).toLocaleString() }, ago(s.lastActivity))));
      const li = h('li', { class: depth ? 'child' : null }, a);
      // CSSOM, not a style attribute: the CSP allows no inline styles.
      if (depth) li.style.setProperty('--depth', String(depth));
      const out = [li];
      for (const c of children.get(s.id) || []) out.push(...row(c, depth + 1));
      return out;
    };
    const rows = roots.flatMap((s) => row(s, 0));
    keepFocus(this.listEl, () => {
      clear(this.listEl).append(...rows);
        if (!rows.length) this.listEl.append(h('li.empty', q ? 'No session matches the filter.' : 'No sessions yet. Create one with “New session”.'));
    });
    const running = [...this.sessions.values()].filter((s) => s.status === 'running' || s.status === 'starting' || s.backgroundTasks?.length).length;
    this.runningBtn.textContent = running ? `Running (${running})` : 'Running';
    document.title = running ? `(${running}) tandem` : 'tandem';
  }

  // ---- routing and layout ---------------------------------------------------------

  navigate() {
    const m = /^#\/s\/(.+)$/.exec(location.hash);
    this.route = { id: m ? decodeURIComponent(m[1]) : null };
    this.layout();
    this.renderList();
  }

  pairOf(id) {
    const s = this.sessions.get(id);
    if (!s?.pairId) return null;
    return this.pairs.get(s.pairId) || null;
  }

  layout() {
    const id = this.route.id;
    document.body.classList.toggle('has-session', !!id);
    const pair = id ? this.pairOf(id) : null;
    const key = !id ? '' : pair ? `pair:${pair.driverId}:${pair.workerId}` : `one:${id}`;
    if (key === this.layoutKey) {
      if (pair) this.renderPairBar();
      return;
    }
    this.layoutKey = key;
    const wanted = !id ? [] : pair ? [pair.driverId, pair.workerId] : [id];
    for (const [sid, v] of this.views) {
      if (!wanted.includes(sid)) {
        this.conn.send({ type: 'chat.unsubscribe', sessionIds: [sid] });
        v.destroy();
        this.views.delete(sid);
      }
    }
    clear(this.mainEl);
    if (!id) {
      this.mainEl.append(h('div.empty-main', h('h2', 'No session open'),
        h('p', 'Pick a session on the left, or start a new one.'),
        h('button.btn.primary', { type: 'button', onclick: () => this.openCreate() }, 'New session')));
      return;
    }
    if (!this.sessions.has(id)) {
      // Maybe on a page of the list not read yet, or just created elsewhere: the end
      // of the list load or its `session_upserted` lays the page out again.
      if (!this.listComplete) {
        this.layoutKey = `loading:${id}`;
        this.mainEl.append(h('div.empty-main', { role: 'status' }, h('h2', 'Loading…'), h('p', id)));
        return;
      }
      this.layoutKey = `missing:${id}`;
      this.mainEl.append(h('div.empty-main', h('h2', 'Session not found'), h('p', id), h('a.btn', { href: '#/' }, 'Back')));
      return;
    }
    const view = (sid) => {
      let v = this.views.get(sid);
      if (!v) {
        v = new ChatView(this, sid, { back: true });
        this.views.set(sid, v);
        if (this.conn.state === 'open') v.subscribe();
      }
      return v;
    };
    if (pair) {
      this.pairBar = h('div.pairbar', { role: 'region', 'aria-label': 'Delegation' });
      const d = view(pair.driverId);
      const w = view(pair.workerId);
      d.el.classList.add('pane', 'driver');
      w.el.classList.add('pane', 'worker');
      this.mainEl.append(this.pairBar, h('div.split', d.el, w.el));
      this.renderPairBar();
    } else {
      this.pairBar = null;
      const v = view(id);
      v.el.classList.remove('pane', 'driver', 'worker');
      this.mainEl.append(v.el);
    }
  }

  renderPairBar() {
    const pair = this.pairOf(this.route.id);
    if (!pair || !this.pairBar) return;
    const d = pair.delegation;
    const since = d ? `since ${clock(d.startedAt)} (${ago(d.startedAt)})` : '';
    keepFocus(this.pairBar, () => clear(this.pairBar).append(
      h('span.pair-title', h('span.badge.role-driver', 'Driver'), ' ⇄ ', h('span.badge.role-worker', 'Worker')),
      d ? h('span.delegation.active', { title: d.message }, h('strong', 'Delegation in flight'), h('span.since', ` ${since}: `), h('span.asked', d.message.length > 160 ? `${d.message.slice(0, 160)}…` : d.message))
        : h('span.delegation', 'No delegation in flight'),
      h('span.spacer'),
      h('button.btn', { type: 'button', onclick: () => this.partnerTool(pair, 'interrupt_partner') }, 'Interrupt Worker'),
      h('button.btn.danger', { type: 'button', onclick: () => this.partnerTool(pair, 'close_partner') }, 'Close pair')));
  }

  async partnerTool(pair, name) {
    try {
      const r = await this.conn.request('tool.call', { sessionId: pair.driverId, name, arguments: {} });
      if (r.isError) this.toast(String(r.result), 'error');
      else this.toast(`${name.replace('_', ' ')}: ${r.result?.status || 'done'}`);
      this.pairsChanged();
    } catch (err) {
      this.toast(err.message, 'error');
    }
  }

  setPairs(list) {
    this.pairs.clear();
    for (const p of list) this.pairs.set(p.pairId, p);
  }

  /** Re-reads GET /pairs (debounced) after anything that may change a pair. */
  pairsChanged() {
    clearTimeout(this.pairTimer);
    this.pairTimer = setTimeout(async () => {
      try {
        const r = await this.conn.rest('GET', '/pairs');
        this.setPairs(r.pairs);
        this.layout();
        this.renderList();
      } catch { /* retried on the next change */ }
    }, 60);
  }

  // ---- running panel --------------------------------------------------------------

  toggleRunning() {
    this.runningOpen = !this.runningOpen;
    this.runningEl.hidden = !this.runningOpen;
    this.runningBtn.setAttribute('aria-expanded', String(this.runningOpen));
    document.body.classList.toggle('running-open', this.runningOpen);
    clearInterval(this.runningTimer);
    if (this.runningOpen) {
      this.refreshRunning();
      this.runningTimer = setInterval(() => this.refreshRunning(), 5000);
    }
  }

  scheduleRunning() {
    clearTimeout(this.runTimer);
    this.runTimer = setTimeout(() => this.refreshRunning(), 150);
  }

  async refreshRunning() {
    if (!this.runningOpen) return;
    let list;
    try {
      list = (await this.conn.rest('GET', '/sessions/running')).sessions;
    } catch {
      return;
    }
    const items = list.map((r) => {
      const s = this.sessions.get(r.sessionId);
      return h('li.run', { dataset: { id: r.sessionId } },
        h('div.line', h('a', { href: `#/s/${r.sessionId}` }, s?.title || r.sessionId),
          h('span.badge', r.background ? 'background' : 'turn')),
        h('div.sub', `${r.vendor} · since ${clock(r.startedAt)} (${ago(r.startedAt)})${r.statusText ? ` · ${r.statusText}` : ''}`),
        !r.background && r.canInterrupt !== false
          ? h('button.btn.tiny.danger', { type: 'button', onclick: () => this.conn.request('chat.abort', { sessionId: r.sessionId }).catch((e) => this.toast(e.message, 'error')) }, 'Interrupt turn')
          : null,
        h('ul.tasks', (r.tasks || []).map((t) => h('li.task', h('span', `⚙ ${t.description || t.taskId}`),
          h('span.sub', t.startedAt ? ` ${ago(t.startedAt)}` : ''),
          h('button.btn.tiny', { type: 'button', dataset: { task: t.taskId }, 'aria-label': `Stop ${t.description || t.taskId}`, onclick: () => this.stopTask(r.sessionId, t.taskId) }, 'Stop')))));
    });
    keepFocus(this.runningEl, () => clear(this.runningEl).append(h('div.panel-head', h('h2', 'Running'), h('button.btn.tiny', { type: 'button', onclick: () => this.toggleRunning(), 'aria-label': 'Close running panel' }, '✕')),
      items.length ? h('ul.runs', items) : h('p.muted', 'Nothing is running.')));
  }

  async stopTask(sessionId, taskId) {
    try {
      await this.conn.request('chat.stop-task', { sessionId, taskId });
      this.toast('Background task stopped');
      this.scheduleRunning();
    } catch (err) {
      this.toast(`Could not stop: ${err.message}`, 'error');
    }
  }

  // ---- create ---------------------------------------------------------------------

  buildCreateDialog() {
    const field = (label, input) => h('label.field-row', h('span', label), input);
    this.cVendor = h('select.field', { name: 'vendor', onchange: () => this.fillCreate() });
    this.cModel = h('select.field', { name: 'model' });
    this.cEffort = h('select.field', { name: 'effort' });
    this.cTitle = h('input.field', { name: 'title', type: 'text', placeholder: 'What is this session for?' });
    this.cCwd = h('input.field', { name: 'cwd', type: 'text', placeholder: 'Default: the first workspace root' });
    this.cMode = h('select.field', { name: 'permissionMode' },
      ['default', 'acceptEdits', 'plan', 'bypassPermissions'].map((m) => h('option', { value: m }, m)));
    this.cError = h('p.error-text', { role: 'alert' });
    this.dialog = h('dialog.create', { 'aria-labelledby': 'create-title' },
      h('form', { method: 'dialog', onsubmit: (e) => { e.preventDefault(); this.create(); } },
        h('h2#create-title', 'New session'),
        field('Vendor', this.cVendor), field('Model', this.cModel), field('Effort', this.cEffort),
        field('Title', this.cTitle), field('Working directory', this.cCwd), field('Permission mode', this.cMode),
        this.cError,
        h('div.row.end', h('button.btn', { type: 'button', onclick: () => this.dialog.close() }, 'Cancel'),
          h('button.btn.primary', { type: 'submit' }, 'Create'))));
    return this.dialog;
  }

  fillCreate() {
    const v = this.vendors.find((x) => x.id === this.cVendor.value) || { models: [], effortLevels: [] };
    clear(this.cModel).append(h('option', { value: '' }, 'default'), ...v.models.map((m) => h('option', { value: m }, m)));
    clear(this.cEffort).append(h('option', { value: '' }, 'default'), ...v.effortLevels.map((e) => h('option', { value: e }, e)));
  }

  openCreate() {
    clear(this.cVendor).append(...this.installedVendors().map((v) => h('option', { value: v.id }, v.displayName)));
    this.fillCreate();
    this.cError.textContent = '';
    this.dialog.showModal();
    this.cTitle.focus();
  }

  async create() {
    const body = { vendor: this.cVendor.value, permissionMode: this.cMode.value };
    for (const [k, el] of [['model', this.cModel], ['effort', this.cEffort], ['title', this.cTitle], ['cwd', this.cCwd]]) {
      if (el.value.trim()) body[k] = el.value.trim();
    }
    try {
      const r = await this.conn.request('session.create', body);
      this.sessions.set(r.session.id, r.session);
      this.dialog.close();
      this.cTitle.value = '';
      // Closing the dialog gave focus back to its opener; lay out now and move focus
      // to the new conversation (the hashchange that follows changes nothing).
      location.hash = `#/s/${r.session.id}`;
      this.navigate();
      this.views.get(r.session.id)?.input.focus();
    } catch (err) {
      this.cError.textContent = err.message;
    }
  }

  // ---- rename and archive ---------------------------------------------------------

  /** PATCH the title; resolves with the new SessionInfo, rejects with the error. */
  async rename(id, title) {
    const info = await this.conn.rest('PATCH', `/sessions/${encodeURIComponent(id)}`, { title });
    if (info?.id && this.sessions.has(id)) {
      this.sessions.set(id, info);
      this.scheduleList();
      this.views.get(id)?.updateHeader();
    }
    return info;
  }

  buildArchiveDialog() {
    this.aText = h('p#archive-desc');
    this.aError = h('p.error-text', { role: 'alert' });
    this.aCancel = h('button.btn', { type: 'button', onclick: () => this.archiveDialog.close() }, 'Cancel');
    this.archiveDialog = h('dialog.confirm', { 'aria-labelledby': 'archive-title', 'aria-describedby': 'archive-desc' },
      h('form', { method: 'dialog', onsubmit: (e) => { e.preventDefault(); this.archive(); } },
        h('h2#archive-title', 'Archive this session?'),
        this.aText,
        this.aError,
        h('div.row.end', this.aCancel, h('button.btn.danger', { type: 'submit' }, 'Archive'))));
    return this.archiveDialog;
  }

  /** Asks before archiving; Cancel has the focus, so Enter alone archives nothing. */
  confirmArchive(id) {
    const s = this.sessions.get(id);
    this.archiveId = id;
    this.aText.textContent = `“${s?.title || id}” will leave every list and can no longer be opened or sent to. Its history stays in the database.`;
    this.aError.textContent = '';
    this.archiveDialog.showModal();
    this.aCancel.focus();
  }

  async archive() {
    const id = this.archiveId;
    try {
      await this.conn.rest('DELETE', `/sessions/${encodeURIComponent(id)}`);
    } catch (err) {
      this.aError.textContent = `Not archived: ${err.message}`;
      return;
    }
    this.archiveDialog.close();
    this.forget(id);
    this.toast('Session archived');
    this.filterEl.focus();
  }

  // ---- misc -----------------------------------------------------------------------

  toast(text, kind = '') {
    const t = h(`div.toast.${kind || 'ok'}`, { role: kind === 'error' ? 'alert' : 'status' }, text);
    document.body.append(t);
    setTimeout(() => t.remove(), 4000);
  }

  onGlobalKey(e) {
    if (e.defaultPrevented) return;
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName);
    const modal = this.dialog.open || this.archiveDialog.open;
    if (e.key === '/' && !typing && !modal) {
      e.preventDefault();
      this.filterEl.focus();
      return;
    }
    if (e.key === 'Escape' && !modal) {
      const inPane = e.target.closest?.('.chat');
      const v = inPane ? this.views.get(inPane.dataset.session) : this.views.get(this.route.id);
      if (v && v.busy) {
        e.preventDefault();
        v.interrupt();
      }
    } else if (e.altKey && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      const links = [...this.listEl.querySelectorAll('a.session')];
      const i = links.findIndex((a) => a.dataset.id === this.route.id);
      const next = links[Math.max(0, Math.min(links.length - 1, i + (e.key === 'ArrowDown' ? 1 : -1)))];
      if (next) {
        e.preventDefault();
        location.hash = next.getAttribute('href');
        next.focus();
      }
    }
  }
}

// ---- login ----------------------------------------------------------------------------

function showLogin(reason) {
  const input = h('input.field', { type: 'password', id: 'token', autocomplete: 'current-password', 'aria-describedby': 'login-why' });
  document.title = 'tandem · sign in';
  clear(document.body).append(h('main.login', h('form.login-card', {
    onsubmit: (e) => {
      e.preventDefault();
      localStorage.setItem(TOKEN_KEY, input.value.trim());
      boot();
    },
  },
  h('h1', h('img', { src: '/assets/favicon.svg', alt: '', width: 24, height: 24 }), 'tandem'),
  h('p.error-text#login-why', { role: 'alert' }, reason),
  h('p', 'Open the link that ', h('code', 'tandem serve'), ' printed (it ends in ', h('code', '?token=…'), '), or paste the token here.'),
  h('label.field-row', h('span', 'Access token'), input),
  h('div.row.end', h('button.btn.primary', { type: 'submit' }, 'Sign in')))));
  input.focus();
}

/** CSP violations seen by this page (the browser tests assert there are none). */
const cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));

async function boot() {
  const params = new URLSearchParams(location.search);
  if (params.has('token')) {
    localStorage.setItem(TOKEN_KEY, params.get('token'));
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  }
  const token = localStorage.getItem(TOKEN_KEY) || '';
  const app = new App(token);
  try {
    await app.start();
  } catch (err) {
    if (err.status === 401) {
      localStorage.removeItem(TOKEN_KEY);
      showLogin(token ? 'That token was not accepted. It may be from another server or a reset data directory.' : 'No access token given.');
    } else {
      showLogin(`The server could not be reached: ${err.message}`);
    }
    return;
  }
  document.title = 'tandem';
  window.__tandem = {
    app,
    view: (id) => app.views.get(id),
    stats: (id) => app.views.get(id)?.stats,
    sent: app.conn.sent,
    cspViolations,
    inject: (id, ev) => {
      const v = app.views.get(id);
      v.onEvent({ sessionId: id, seq: v.tip + 1, ts: Date.now(), ...ev });
    },
  };
}

boot();
