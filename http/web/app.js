// tandem's page: log in with the token, list sessions live, open one (or a Driver and
// its Workers, or any two sessions, side by side), and keep up across reconnects.
// State lives in one store (store.js); views subscribe to what they show.

import { h, clear, ago, clock, keepFocus } from './dom.js';
import { Conn } from './conn.js';
import { ChatView } from './chat.js';
import { Store, SeenReports, layoutFor, parseRoute, tree, layoutSessions, formatUsage, attentionBadge, groupOf, pairingChanged, workerNameOf, statusText, shownStatus } from './store.js';
import { Attention, listenForNotices, openNotice, takeNotice } from './notify.js';
import { formDialog } from './dialogs.js';
import { registerShellWorker, unreachable, waitOffline } from './offline.js';
import { pushSupported, subscribeDevice } from './push.js';
import { openOnPhone, redeemPairingLink } from './pair.js';
import { openOnThisMachine } from './machine.js';
import { openMcpServers, McpChoice } from './mcp.js';

const TOKEN_KEY = 'tandem.token';
/** The page's phone layout (style.css has the same width). */
const PHONE = '(max-width: 760px)';
/** Sessions per list page (the server's default; at most 1,000). */
const LIST_PAGE = 100;

/** Resolves with the running app (for `hooks.js` in test builds). */
let resolveReady = (/** @type {App} */ _app) => {};
/** @type {Promise<App>} */
export const ready = new Promise((r) => { resolveReady = r; });

export class App {
  /** @param {string} token */
  constructor(token) {
    this.conn = new Conn(token);
    this.store = new Store();
    this.attention = new Attention(this.store);
    /** `client.seen` reports, per session at most one a second. */
    this.seenReports = new SeenReports((sessionId, seq) => {
      this.conn.request('client.seen', { sessionId, seq }).catch(() => { /* sent again on the next connect or change */ });
    });
    /** The sessions last reported on screen (`client.visible`), space-joined. @type {string | null} */
    this.visibleSent = null;
    /** Open conversation views by session id. @type {Map<string, ChatView>} */
    this.views = new Map();
    /** Session list rows by session id, updated in place. @type {Map<string, {li: HTMLLIElement, key: string}>} */
    this.rows = new Map();
    this.route = parseRoute(location.hash);
    this.runningOpen = false;
    this.everOpen = false;
    /** Bumped by each full list load, so an older load that is still paging stops. */
    this.listGen = 0;
    /** Ids upserted while a load pages through the list: those pages are older news. @type {Set<string> | null} */
    this.touched = null;
    /** @type {HTMLElement | null} */
    this.pairBar = null;
    /** The panes on screen (their session ids), the one shown at phone width, and their switch. */
    this.paneKey = '';
    this.paneShown = 0;
    /** @type {HTMLElement | null} */
    this.splitEl = null;
    /** @type {HTMLElement[]} */
    this.paneButtons = [];
    /** @type {string[]} */
    this.paneIds = [];
    /** Today's usage as last read, and when. @type {{at: number, total: import('./wire.js').UsageTotals} | null} */
    this.today = null;
  }

  get sessions() {
    return this.store.sessions;
  }

  get vendors() {
    return this.store.vendors;
  }

  // ---- start ----------------------------------------------------------------------

  async start() {
    const [list, vendors, pairs] = await Promise.all([
      this.conn.rest('GET', `/sessions?limit=${LIST_PAGE}`),
      this.conn.rest('GET', '/vendors'),
      this.conn.rest('GET', '/pairs'),
    ]);
    for (const s of list.sessions) this.store.sessions.set(s.id, s);
    this.store.vendors = vendors.vendors;
    this.store.setPairs(pairs.pairs);
    this.buildShell();
    this.store.on('sessions', () => this.scheduleList());
    this.store.on('session', (id) => {
      if (id) this.views.get(id)?.updateHeader();
      if (id && this.paneIds.includes(id)) this.markPanes();
    });
    this.store.on('pairs', () => { this.layout(); this.scheduleList(); });
    this.store.on('layout', () => this.renderLayout());
    this.conn.addEventListener('frame', (e) => this.onFrame(/** @type {CustomEvent} */ (e).detail));
    this.conn.addEventListener('state', (e) => this.onState(/** @type {CustomEvent} */ (e).detail));
    this.conn.connect();
    window.addEventListener('hashchange', () => this.navigate());
    document.addEventListener('keydown', (e) => this.onGlobalKey(e));
    followVisualViewport();
    // Wider than a phone (a turned tablet, a resized window): no drawer to keep open.
    matchMedia(PHONE).addEventListener('change', (e) => { if (!e.matches) this.toggleDrawer(false); });
    // A notification's click (sw.js): its session, and the answer chosen on it.
    listenForNotices((n) => openNotice(this, n));
    // Shown again (another tab, a restored window): report what is on screen.
    document.addEventListener('visibilitychange', () => this.reportShown(true));
    // Said again every minute while something is on screen: in a cluster, the node
    // that runs a session forgets another node's word after a while.
    setInterval(() => { if (this.visibleSent) this.reportVisible(true); }, 60000);
    window.addEventListener('focus', () => this.reportShown());
    // Relative times ("5m") age; only their text changes.
    setInterval(() => this.refreshTimes(), 10000);
    this.navigate();
    const notice = await takeNotice();
    if (notice) openNotice(this, notice);
  }

  installedVendors() {
    return this.store.vendors.filter((v) => v.installed);
  }

  buildShell() {
    this.connEl = h('span.conn', { role: 'status' }, 'Connecting…');
    this.runningBtn = h('button.btn', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'running', onclick: () => this.toggleRunning() }, 'Running');
    // Phone width: the session list is a drawer over the conversation (style.css).
    this.drawerBtn = h('button.btn.drawer-btn', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'sessions-nav', onclick: () => this.toggleDrawer() }, 'Sessions');
    this.notifyBtn = h('button.btn.tiny.notify-btn', { type: 'button', title: 'Desktop notifications when a turn ends or a permission waits', onclick: () => this.enableNotifications() }, 'Enable notifications');
    this.notifyBtn.hidden = typeof Notification === 'undefined' || Notification.permission !== 'default';
    this.listEl = h('ul.session-list', { 'aria-label': 'Sessions' });
    // A session picked in the drawer closes it (its own session too: no hashchange).
    this.listEl.addEventListener('click', (e) => {
      if (!document.body.classList.contains('drawer-open') || !/** @type {HTMLElement} */ (e.target).closest?.('a.session')) return;
      this.toggleDrawer(false);
      this.mainEl.focus();
    });
    this.filterEl = /** @type {HTMLInputElement} */ (h('input.field.filter', { type: 'search', placeholder: 'Filter sessions (press /)', 'aria-label': 'Filter sessions', oninput: () => this.renderList() }));
    this.mainEl = h('main.main#main', { tabindex: '-1' });
    this.runningEl = h('aside.running#running', { hidden: true, 'aria-label': 'Running work' });
    this.banner = h('div.banner', { hidden: true, role: 'alert' });
    const shell = h('div.shell',
      h('header.top',
        this.drawerBtn,
        h('a.brand', { href: '#/' }, h('img', { src: '/assets/favicon.svg', alt: '', width: 18, height: 18 }), h('span.brand-name', 'tandem')),
        this.connEl,
        h('span.spacer'),
        this.runningBtn,
        h('button.btn.primary', { type: 'button', onclick: () => this.openCreate() }, 'New session')),
      this.banner,
      h('nav.sidebar#sessions-nav', { 'aria-label': 'Sessions' },
        h('div.side-head', h('h1.side-title', 'Sessions'),
          h('button.btn.drawer-close', { type: 'button', 'aria-label': 'Close the session list', onclick: () => this.toggleDrawer(false) }, '✕')),
        this.filterEl, this.notifyBtn,
        h('button.btn.tiny.pair-btn', { type: 'button', title: 'Show a one-time QR code that signs a phone in as you', onclick: () => openOnPhone(this.conn) }, 'Open on a phone'),
        h('button.btn.tiny.machine-btn', { type: 'button', title: 'Claude Code and Codex sessions already on the server’s machine', onclick: () => openOnThisMachine(this.conn, (id) => { location.hash = `#/s/${id}`; }) }, 'On this machine'),
        h('button.btn.tiny.mcp-btn', { type: 'button', title: 'The MCP servers your agents get beside tandem’s own tools', onclick: () => openMcpServers(this.conn) }, 'MCP servers'),
        this.listEl),
      h('div.drawer-backdrop', { onclick: () => this.toggleDrawer(false) }),
      this.mainEl,
      this.runningEl);
    clear(document.body).append(h('a.skip', { href: '#main', onclick: (/** @type {Event} */ e) => { e.preventDefault(); this.mainEl.focus(); } }, 'Skip to conversation'), shell, this.buildCreateDialog(), this.buildArchiveDialog());
    this.renderList();
  }

  /**
   * Opens or closes the session list's drawer (phone width; on a wider page the
   * list is always there and this changes nothing one can see). Opening moves the
   * focus into the list and makes the conversation behind it inert; closing brings
   * the focus back to the button when it was in the drawer.
   * @param {boolean} [open]
   */
  toggleDrawer(open = !document.body.classList.contains('drawer-open')) {
    const was = document.body.classList.contains('drawer-open');
    document.body.classList.toggle('drawer-open', open);
    this.drawerBtn.setAttribute('aria-expanded', String(open));
    const phone = matchMedia(PHONE).matches;
    this.mainEl.inert = open && phone;
    this.runningEl.inert = open && phone;
    if (open && !was) {
      const current = /** @type {HTMLElement | null} */ (this.listEl.querySelector('a.session[aria-current="page"]'));
      (current || this.filterEl).focus();
    } else if (!open && was && document.querySelector('.sidebar')?.contains(document.activeElement)) {
      this.drawerBtn.focus();
    }
  }

  async enableNotifications() {
    const answer = await Attention.ask();
    this.notifyBtn.hidden = answer !== 'default';
    if (answer !== 'granted') {
      this.toast('Notifications stay off', 'error');
      return;
    }
    if (!pushSupported()) {
      this.toast('Notifications on while this page is open');
      return;
    }
    // Also when no page is open: this device gets Web Push from the server.
    try {
      await subscribeDevice(this.conn);
      this.toast('Notifications on for this device');
    } catch (e) {
      this.toast(`Notifications on while this page is open; this device could not subscribe to push: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  }

  // ---- connection -----------------------------------------------------------------

  /** @param {string} state */
  onState(state) {
    if (state === 'open') {
      this.connEl.textContent = 'Live';
      this.connEl.className = 'conn live';
      this.banner.hidden = true;
      // Watch first, then resubscribe from the last seq each view has: the server
      // replays exactly what was missed, and views drop anything they already hold.
      this.loadSessions();
      for (const v of this.views.values()) v.subscribe();
      this.loadUser();
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

  /** @param {any} f */
  onFrame(f) {
    switch (f.kind) {
      case 'session_upserted': {
        this.touched?.add(f.session.id);
        if (f.session.archivedAt) {
          this.forget(f.session.id);
          return;
        }
        const old = this.store.sessions.get(f.session.id);
        const busy = (/** @type {string} */ st) => st === 'running' || st === 'waiting';
        const wasBusy = old && busy(old.status);
        const nowBusy = busy(f.session.status);
        // A Worker added or closed (here, in another tab, by an agent): the pairs
        // as the page holds them are out of date.
        const repair = pairingChanged(old, f.session);
        this.store.upsertSession(f.session);
        if (repair) this.pairsChanged();
        // Any change of an open session's record (a queue edited in another tab
        // included) comes as an upsert: its view re-reads the queue, debounced.
        this.views.get(f.session.id)?.scheduleQueueRefresh();
        // An open view reports its own turn ends (from `turn_completed`); this covers
        // the sessions not open.
        if (wasBusy && !nowBusy && !this.views.has(f.session.id)) this.attention.turnEnded(f.session.id, f.session.status);
        // The server still counts something unseen in a session on screen (a report
        // lost with a connection, a restart): report it again.
        if (f.session.attention === 'done_unseen' || f.session.attention === 'failed') this.reportSeen(f.session.id, true);
        this.layout();
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

  // ---- what the page shows ----------------------------------------------------------

  /**
   * Who the user is (`user.get`, once): the sessions they own are the ones reported
   * seen. Then, as after each reconnect, reports what is on screen again (a report
   * may have been lost with the connection).
   */
  async loadUser() {
    if (!this.store.userId) {
      try {
        const me = await this.conn.request('user.get', {});
        this.store.userId = me.userId;
      } catch {
        return; // asked again on the next connect
      }
    }
    this.reportShown(true);
  }

  /**
   * Tells the server (`client.seen`) how far the page shows session `id`: only while
   * the tab is visible, the session is on screen and the user owns it (a session
   * only read is never reported). Debounced per session (see SeenReports).
   * @param {string} id
   * @param {boolean} [again] report even a seq already reported
   */
  reportSeen(id, again = false) {
    if (document.visibilityState !== 'visible') return;
    if (!this.store.shown().includes(id) || !this.store.owns(id)) return;
    const v = this.views.get(id);
    if (v) this.seenReports.note(id, v.shownSeq, again);
  }

  /**
   * Reports every session on screen: a view just opened reports as its events
   * arrive; `again` (the tab shown again, a reconnect) reports even what was sent.
   * @param {boolean} [again]
   */
  reportShown(again = false) {
    for (const id of this.store.shown()) this.reportSeen(id, again);
    this.reportVisible(again);
  }

  /**
   * Tells the server (`client.visible`) which of the user's own sessions are on
   * screen in a visible tab (none when hidden), so their phones are not pushed about
   * what the user is looking at. Sent when that changes; `again` after a reconnect.
   * @param {boolean} [again]
   */
  reportVisible(again = false) {
    const ids = document.visibilityState === 'visible'
      ? this.store.shown().filter((id) => this.store.owns(id))
      : [];
    const key = ids.join(' ');
    if (!again && key === this.visibleSent) return;
    this.visibleSent = key;
    this.conn.request('client.visible', { sessionIds: ids }).catch(() => { this.visibleSent = null; });
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
          if (!touched.has(s.id)) this.store.upsertSession(s);
        }
        if (!page.nextCursor) break;
        page = await this.conn.request('sessions.list', { limit: LIST_PAGE, cursor: page.nextCursor });
      }
    } catch {
      // The socket went away; the next `open` loads again.
      return;
    }
    if (gen !== this.listGen) return;
    this.touched = null;
    for (const id of [...this.store.sessions.keys()]) {
      if (!seen.has(id) && !touched.has(id)) this.store.removeSession(id);
    }
    this.store.listComplete = true;
    this.renderList();
    this.layout();
  }

  /** A session archived (here or elsewhere): out of the list, and closed if open. @param {string} id */
  forget(id) {
    this.store.removeSession(id);
    if (this.route.id === id || this.route.with === id || this.store.shown().includes(id)) {
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

  /**
   * The session list, updated in place: a row is rebuilt only when what it shows
   * changed, rows move only when the order changed, and rows of sessions gone are
   * removed.
   */
  renderList() {
    if (!this.listEl) return;
    const { roots, children } = tree(this.store);
    const q = this.filterEl.value.trim().toLowerCase();
    /** @param {import('./wire.js').SessionInfo} s @returns {boolean} */
    const hit = (s) => !q || `${s.title} ${s.vendor} ${s.model} ${s.status}`.toLowerCase().includes(q)
      || (children.get(s.id) || []).some(hit);
    /** @type {[import('./wire.js').SessionInfo, number][]} */
    const order = [];
    /** @param {import('./wire.js').SessionInfo} s @param {number} depth */
    const walk = (s, depth) => {
      order.push([s, depth]);
      for (const c of children.get(s.id) || []) walk(c, depth + 1);
    };
    for (const s of roots.filter(hit)) walk(s, 0);
    const shown = this.store.shown();
    const wanted = new Set(order.map(([s]) => s.id));
    for (const [id, row] of this.rows) {
      if (!wanted.has(id)) {
        row.li.remove();
        this.rows.delete(id);
      }
    }
    this.emptyEl?.remove();
    keepFocus(this.listEl, () => {
      order.forEach(([s, depth], i) => {
        const current = shown.includes(s.id) || this.route.id === s.id;
        const key = JSON.stringify([s, depth, current]);
        let row = this.rows.get(s.id);
        if (!row || row.key !== key) {
          const li = this.renderRow(s, depth, current);
          if (row) row.li.replaceWith(li);
          row = { li, key };
          this.rows.set(s.id, row);
        }
        const at = this.listEl.children[i];
        if (at !== row.li) this.listEl.insertBefore(row.li, at || null);
      });
    });
    if (!order.length) {
      this.emptyEl = h('li.empty', q ? 'No session matches the filter.' : 'No sessions yet. Create one with “New session”.');
      this.listEl.append(this.emptyEl);
    }
    const running = this.store.runningCount();
    this.runningBtn.textContent = running ? `Running (${running})` : 'Running';
    this.attention.title();
  }

  /**
   * @param {import('./wire.js').SessionInfo} s
   * @param {number} depth
   * @param {boolean} current
   */
  renderRow(s, depth, current) {
    const bg = s.backgroundTasks?.length || 0;
    // What the session asks of its owner, as the server keeps it: in words (the
    // commas set it apart in the link's name), a dot with hidden text for "New".
    // Marked for its owner only: another user's session asks that user, not this one.
    const mark = this.store.owns(s.id) ? attentionBadge(s.attention) : null;
    const attention = !mark ? null
      : mark.kind === 'new'
        ? h('span.attention.att-new', { title: mark.title, dataset: { attention: s.attention } }, h('span.new-dot', { 'aria-hidden': 'true' }), h('span.sr', `, ${mark.label},`))
        : h(`span.badge.attention.att-${mark.kind}`, { title: mark.title, dataset: { attention: s.attention } }, h('span.sr', ', '), mark.text, h('span.sr', ','));
    const a = h('a.session', {
      href: `#/s/${s.id}`,
      'aria-current': current ? 'page' : false,
      dataset: { id: s.id, status: shownStatus(s) },
    },
    h('span.dot', { class: `dot st-${shownStatus(s)}`, title: shownStatus(s) }),
    h('span.name', s.title || s.id),
    h('span.badges',
      attention,
      s.role ? h(`span.badge.role-${s.role}`, { title: s.role }, s.role === 'driver' ? 'D' : 'W') : null,
      s.parentId ? h('span.badge.child', { title: 'spawned' }, 'sub') : null,
      s.forkedFrom ? h('span.badge.fork', { title: `Forked from ${this.sessions.get(s.forkedFrom.sessionId)?.title || s.forkedFrom.sessionId}` }, 'fork') : null,
      bg ? h('span.badge.bg', { title: `${bg} background task(s)` }, `⚙${bg}`) : null),
    h('span.sub', shownStatus(s) === 'idle' ? h('span.sr', 'idle, ') : h(`span.st-label.st-${shownStatus(s)}`, statusText(s)),
      [s.vendor, s.model].filter(Boolean).join(' · '), h('span.when', { title: new Date(s.lastActivity).toLocaleString(), dataset: { at: String(s.lastActivity) } }, ago(s.lastActivity))));
    const li = /** @type {HTMLLIElement} */ (h('li', { class: depth ? 'child' : null, dataset: { row: s.id } }, a));
    // CSSOM, not a style attribute: the CSP allows no inline styles.
    if (depth) li.style.setProperty('--depth', String(depth));
    return li;
  }

  /** Ages the relative times in place. */
  refreshTimes() {
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('.when[data-at]'))) {
      el.textContent = ago(Number(el.dataset.at));
    }
    this.renderPairBar();
  }

  // ---- routing and layout ---------------------------------------------------------

  navigate() {
    this.route = parseRoute(location.hash);
    if (document.body.classList.contains('drawer-open')) {
      this.toggleDrawer(false);
      if (this.route.id) this.mainEl.focus();
    }
    this.layout();
    this.renderList();
  }

  /** The layout for the route and what the store knows; views change only if it did. */
  layout() {
    const changed = this.store.setLayout(layoutFor(this.route, this.store));
    if (!changed && groupOf(this.store.layout)) this.renderPairBar();
  }

  renderLayout() {
    const layout = this.store.layout;
    document.body.classList.toggle('has-session', layout.kind !== 'none');
    const wanted = layoutSessions(layout);
    for (const [sid, v] of this.views) {
      if (!wanted.includes(sid)) {
        this.conn.send({ type: 'chat.unsubscribe', sessionIds: [sid] });
        this.store.subscribed.delete(sid);
        this.seenReports.forget(sid);
        v.destroy();
        this.views.delete(sid);
      }
    }
    clear(this.mainEl);
    // At phone width the pane shown stays shown when panes come or go (a Worker
    // added or closed); a pane gone shows the first (the Driver).
    const shownId = this.paneIds[this.paneShown];
    if (wanted.join() !== this.paneKey) {
      this.paneKey = wanted.join();
      this.paneShown = Math.max(0, wanted.indexOf(shownId));
    }
    this.pairBar = null;
    this.splitEl = null;
    this.paneButtons = [];
    this.paneIds = [];
    switch (layout.kind) {
      case 'none':
        this.mainEl.append(h('div.empty-main', h('h2', 'No session open'),
          h('p', 'Pick a session on the left, or start a new one.'),
          h('button.btn.primary', { type: 'button', onclick: () => this.openCreate() }, 'New session')));
        return;
      case 'loading':
        // Maybe on a page of the list not read yet, or just created elsewhere: the end
        // of the list load or its `session_upserted` lays the page out again.
        this.mainEl.append(h('div.empty-main', { role: 'status' }, h('h2', 'Loading…'), h('p', layout.id)));
        return;
      case 'missing':
        this.mainEl.append(h('div.empty-main', h('h2', 'Session not found'), h('p', layout.id), h('a.btn', { href: '#/' }, 'Back')));
        return;
      case 'one': {
        const v = this.view(layout.id);
        v.setPane(null);
        this.mainEl.append(v.el);
        break;
      }
      case 'pair':
      case 'group':
        this.renderGroup(layout.driverId, wanted.slice(1));
        break;
      case 'side': {
        const l = this.view(layout.left);
        const r = this.view(layout.right);
        l.setPane('left');
        r.setPane('right');
        this.mainEl.append(this.paneSwitch([layout.left, layout.right], [layout.left, layout.right].map((sid) => this.sessions.get(sid)?.title || sid)), this.split([l.el, r.el]));
        break;
      }
    }
    this.reportShown();
  }

  /**
   * A Driver and its Workers side by side, under the bar that steers them. With
   * several Workers the switch and each Worker pane's header name them; one Worker
   * alone is "Worker", as before Workers had names.
   * @param {string} driverId
   * @param {string[]} workerIds oldest first
   */
  renderGroup(driverId, workerIds) {
    this.pairBar = h('div.pairbar', { role: 'region', 'aria-label': 'Delegation' });
    const d = this.view(driverId);
    d.setPane('driver');
    const several = workerIds.length > 1;
    const names = workerIds.map((id) => {
      const pair = this.store.pairOfWorker(id);
      return pair ? workerNameOf(pair) : 'Worker';
    });
    const panes = workerIds.map((id, i) => {
      const w = this.view(id);
      w.setPane('worker', several ? names[i] : undefined);
      return w.el;
    });
    const labels = ['Driver', ...(several ? names : ['Worker'])];
    this.mainEl.append(this.pairBar, this.paneSwitch([driverId, ...workerIds], labels), this.split([d.el, ...panes]));
    this.renderPairBar();
  }

  /**
   * Panes side by side, as many columns as panes (style.css reads `--panes`); at
   * phone width one at a time (`paneShown`, picked with the switch).
   * @param {HTMLElement[]} panes
   */
  split(panes) {
    this.splitEl = h('div.split', { dataset: { show: String(this.paneShown) } }, panes);
    // CSSOM, not a style attribute: the CSP allows no inline styles.
    this.splitEl.style.setProperty('--panes', String(panes.length));
    this.markShown();
    return this.splitEl;
  }

  /**
   * The switch between the panes (sessions `ids`), shown at phone width only.
   * Each button says when its session needs the person, so the pane not shown is
   * not forgotten.
   * @param {string[]} ids
   * @param {string[]} labels
   */
  paneSwitch(ids, labels) {
    const buttons = labels.map((label, i) => h('button.btn.pane-pick', {
      type: 'button',
      'aria-pressed': String(i === this.paneShown),
      onclick: () => this.showPane(i),
    }, label, h('span.pane-att')));
    this.paneButtons = buttons;
    this.paneIds = ids;
    this.markPanes();
    return h('div.pane-switch', { role: 'group', 'aria-label': 'Pane shown' }, buttons);
  }

  /** The switch's marks: "Needs you" or "Failed", as in the list, for the session's owner. */
  markPanes() {
    this.paneButtons.forEach((b, i) => {
      const id = this.paneIds[i];
      const mark = this.store.owns(id) ? attentionBadge(this.sessions.get(id)?.attention) : null;
      const el = /** @type {HTMLElement} */ (b.querySelector('.pane-att'));
      const shown = mark && mark.kind !== 'new' ? mark : null;
      el.className = shown ? `pane-att badge attention att-${shown.kind}` : 'pane-att';
      el.replaceChildren(...(shown ? [h('span.sr', ', '), shown.text] : []));
    });
  }

  /** Shows pane `i` at phone width. @param {number} i */
  showPane(i) {
    this.paneShown = i;
    if (this.splitEl) this.splitEl.dataset.show = String(i);
    this.markShown();
    this.paneButtons.forEach((b, j) => b.setAttribute('aria-pressed', String(i === j)));
  }

  /** Marks the pane shown at phone width (style.css hides the others there). */
  markShown() {
    [...(this.splitEl?.children || [])].forEach((p, j) => p.classList.toggle('pane-shown', j === this.paneShown));
  }

  /** The view of session `sid`, made and subscribed when new. @param {string} sid */
  view(sid) {
    let v = this.views.get(sid);
    if (!v) {
      v = new ChatView(this, sid, { back: true });
      this.views.set(sid, v);
      this.store.subscribed.add(sid);
      if (this.conn.state === 'open') v.subscribe();
    }
    return v;
  }

  /**
   * The bar over a Driver and its Workers: per Worker, the delegation in flight and
   * the buttons that interrupt it or close its pair. One Worker takes one line, as
   * before Workers had names; several take a line each, named.
   */
  renderPairBar() {
    const group = groupOf(this.store.layout);
    if (!group || !this.pairBar) return;
    const pairs = this.store.workerPairs(group.driverId);
    if (!pairs.length) return;
    const bar = this.pairBar;
    keepFocus(bar, () => clear(bar).append(...(pairs.length === 1 ? this.pairLine(pairs[0]) : this.workerLines(pairs))));
  }

  /** The bar's content for a Driver with one Worker. @param {import('./wire.js').PairInfo} pair */
  pairLine(pair) {
    return [
      h('span.pair-title', h('span.badge.role-driver', 'Driver'), ' ⇄ ', h('span.badge.role-worker', 'Worker')),
      ...this.workerControls(pair, 'Interrupt Worker', 'Close pair'),
    ];
  }

  /** The bar's content for a Driver with several Workers: a line each. @param {import('./wire.js').PairInfo[]} pairs */
  workerLines(pairs) {
    return [
      h('span.pair-title', h('span.badge.role-driver', 'Driver'), ` ⇄ ${pairs.length} Workers`),
      h('ul.pair-workers', pairs.map((p) => {
        const name = workerNameOf(p);
        return h('li.pair-worker', { dataset: { worker: name } },
          h('span.badge.role-worker', name),
          ...this.workerControls(p, `Interrupt ${name}`, `Close ${name}`));
      })),
    ];
  }

  /**
   * One Worker's delegation in flight (since when, its message clipped) and its
   * two buttons.
   * @param {import('./wire.js').PairInfo} pair
   * @param {string} interruptLabel
   * @param {string} closeLabel
   */
  workerControls(pair, interruptLabel, closeLabel) {
    const d = pair.delegation;
    const since = d ? `since ${clock(d.startedAt)} (${ago(d.startedAt)})` : '';
    return [
      d ? h('span.delegation.active', { title: d.message }, h('strong', 'Delegation in flight'), h('span.since', ` ${since}: `), h('span.asked', d.message.length > 160 ? `${d.message.slice(0, 160)}…` : d.message))
        : h('span.delegation', 'No delegation in flight'),
      h('span.spacer'),
      h('button.btn', { type: 'button', onclick: () => this.partnerTool(pair, 'interrupt_partner') }, interruptLabel),
      h('button.btn.danger', { type: 'button', onclick: () => this.partnerTool(pair, 'close_partner') }, closeLabel),
    ];
  }

  /**
   * Calls the Driver's partner tool `name` on this pair's Worker. The Worker is
   * always named: with several, the tools refuse to guess.
   * @param {import('./wire.js').PairInfo} pair
   * @param {string} name
   */
  async partnerTool(pair, name) {
    const worker = pair.workerName || pair.workerId;
    try {
      const r = await this.conn.request('tool.call', { sessionId: pair.driverId, name, arguments: { worker } });
      if (r.isError) this.toast(String(r.result), 'error');
      else this.toast(`${name.replace('_', ' ')} (${workerNameOf(pair)}): ${r.result?.status || 'done'}`);
      this.pairsChanged();
    } catch (err) {
      this.toast(/** @type {Error} */ (err).message, 'error');
    }
  }

  /** Re-reads GET /pairs (debounced) after anything that may change a pair. */
  pairsChanged() {
    clearTimeout(this.pairTimer);
    this.pairTimer = setTimeout(async () => {
      try {
        const r = await this.conn.rest('GET', '/pairs');
        this.store.setPairs(r.pairs);
        this.layout();
        this.renderPairBar();
      } catch { /* retried on the next change */ }
    }, 60);
  }

  /**
   * Shows session `id` with its Changes panel open: in its pane when it is on
   * screen (a Worker beside its Driver), else by opening it.
   * @param {string} id
   */
  openChanges(id) {
    if (!this.store.shown().includes(id)) {
      location.hash = `#/s/${encodeURIComponent(id)}`;
      this.navigate();
    }
    const v = this.views.get(id);
    if (v) v.showPanel('changes');
    else this.toast('That session is not available here.', 'error');
  }

  /** Asks which session to open beside `id`, then opens both side by side. @param {string} id */
  openBeside(id) {
    const select = /** @type {HTMLSelectElement} */ (h('select.field', { name: 'beside' }));
    const others = [...this.store.sessions.values()].filter((s) => s.id !== id).sort((a, b) => b.lastActivity - a.lastActivity);
    select.append(...others.map((s) => h('option', { value: s.id }, `${s.title || s.id} (${s.vendor})`)));
    const d = formDialog({
      title: 'Open a session beside this one',
      className: 'beside',
      intro: 'Both stay as they are: this only shows them side by side.',
      fields: [['Session', select]],
      submitLabel: 'Open side by side',
      submit: async () => {
        if (!select.value) throw new Error('There is no other session to open.');
        location.hash = `#/s/${encodeURIComponent(id)}/with/${encodeURIComponent(select.value)}`;
      },
    });
    d.el.addEventListener('close', () => d.el.remove());
    d.open();
  }

  // ---- running panel --------------------------------------------------------------

  toggleRunning() {
    this.runningOpen = !this.runningOpen;
    this.today = null;
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

  /**
   * Today's usage over the sessions active today: each session's
   * `GET .../usage?since=<local midnight>` (at most 100 sessions, the most recent).
   */
  async todayUsage() {
    // Each read totals whole histories on the server: at most one every 30 s.
    if (this.today && Date.now() - this.today.at < 30000) return this.today.total;
    const midnight = new Date();
    midnight.setHours(0, 0, 0, 0);
    const since = midnight.getTime();
    const active = [...this.store.sessions.values()].filter((s) => s.lastActivity >= since)
      .sort((a, b) => b.lastActivity - a.lastActivity).slice(0, 100);
    const all = await Promise.all(active.map((s) => this.conn.rest('GET', `/sessions/${encodeURIComponent(s.id)}/usage?since=${since}`).catch(() => null)));
    /** @type {import('./wire.js').UsageTotals} */
    const total = { turns: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
    for (const u of all) {
      if (!u) continue;
      total.turns += u.total.turns;
      total.inputTokens += u.total.inputTokens;
      total.cachedInputTokens += u.total.cachedInputTokens;
      total.outputTokens += u.total.outputTokens;
      if (typeof u.total.costUsd === 'number') total.costUsd = (total.costUsd || 0) + u.total.costUsd;
    }
    this.today = { at: Date.now(), total };
    return total;
  }

  async refreshRunning() {
    if (!this.runningOpen) return;
    let list;
    let today;
    try {
      [list, today] = await Promise.all([
        this.conn.rest('GET', '/sessions/running').then((/** @type {any} */ r) => r.sessions),
        this.todayUsage(),
      ]);
    } catch {
      return;
    }
    const items = list.map((/** @type {any} */ r) => {
      const s = this.sessions.get(r.sessionId);
      return h('li.run', { dataset: { id: r.sessionId } },
        h('div.line', h('a', { href: `#/s/${r.sessionId}` }, s?.title || r.sessionId),
          h('span.badge', r.background ? 'background' : 'turn')),
        h('div.sub', `${r.vendor} · since ${clock(r.startedAt)} (${ago(r.startedAt)})${r.statusText ? ` · ${r.statusText}` : ''}`),
        !r.background && r.canInterrupt !== false
          ? h('button.btn.tiny.danger', { type: 'button', onclick: () => this.conn.request('chat.abort', { sessionId: r.sessionId }).catch((e) => this.toast(e.message, 'error')) }, 'Interrupt turn')
          : null,
        h('ul.tasks', (r.tasks || []).map((/** @type {any} */ t) => h('li.task', h('span', `⚙ ${t.description || t.taskId}`),
          h('span.sub', t.startedAt ? ` ${ago(t.startedAt)}` : ''),
          h('button.btn.tiny', { type: 'button', dataset: { task: t.taskId }, 'aria-label': `Stop ${t.description || t.taskId}`, onclick: () => this.stopTask(r.sessionId, t.taskId) }, 'Stop')))));
    });
    keepFocus(this.runningEl, () => clear(this.runningEl).append(h('div.panel-head', h('h2', 'Running'), h('button.btn.tiny', { type: 'button', onclick: () => this.toggleRunning(), 'aria-label': 'Close running panel' }, '✕')),
      h('p.today', { role: 'status' }, h('strong', 'Today: '), today.turns ? `${formatUsage(today)} over ${today.turns} turn${today.turns === 1 ? '' : 's'}` : 'no usage reported yet'),
      items.length ? h('ul.runs', items) : h('p.muted', 'Nothing is running.')));
  }

  /** @param {string} sessionId @param {string} taskId */
  async stopTask(sessionId, taskId) {
    try {
      await this.conn.request('chat.stop-task', { sessionId, taskId });
      this.toast('Background task stopped');
      this.scheduleRunning();
    } catch (err) {
      this.toast(`Could not stop: ${/** @type {Error} */ (err).message}`, 'error');
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
    this.cOwn = h('input', { type: 'checkbox', name: 'workspace' });
    this.cMode = h('select.field', { name: 'permissionMode' },
      ['default', 'acceptEdits', 'plan', 'bypassPermissions'].map((m) => h('option', { value: m }, m)));
    this.cError = h('p.error-text', { role: 'alert' });
    this.cMcp = new McpChoice();
    this.dialog = h('dialog.create', { 'aria-labelledby': 'create-title' },
      h('form', { method: 'dialog', onsubmit: (e) => { e.preventDefault(); this.create(); } },
        h('h2#create-title', 'New session'),
        field('Vendor', this.cVendor), field('Model', this.cModel), field('Effort', this.cEffort),
        field('Title', this.cTitle), field('Working directory', this.cCwd), field('Own worktree', this.cOwn),
        h('p.muted.field-help', 'With its own worktree the session works on a new branch of the working directory’s git repository, and you merge or discard what it did.'),
        field('Permission mode', this.cMode),
        this.cMcp.el,
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
    this.cMcp.fill(this.conn);
  }

  async create() {
    const body = { vendor: this.cVendor.value, permissionMode: this.cMode.value };
    for (const [k, el] of [['model', this.cModel], ['effort', this.cEffort], ['title', this.cTitle], ['cwd', this.cCwd]]) {
      if (el.value.trim()) body[k] = el.value.trim();
    }
    if (this.cOwn.checked) body.workspace = 'worktree';
    const mcp = this.cMcp.value();
    if (mcp) body.mcpServers = mcp;
    try {
      const r = await this.conn.request('session.create', body);
      this.dialog.close();
      this.cTitle.value = '';
      this.cOwn.checked = false;
      this.openNew(r.session);
    } catch (err) {
      this.cError.textContent = /** @type {Error} */ (err).message;
    }
  }

  /**
   * Shows a session just made here (created or forked), with the focus in its
   * composer. Callers close their dialog first: while a modal dialog is open the rest
   * of the page is inert and cannot take the focus. Lays out now; the hashchange
   * that follows changes nothing.
   * @param {import('./wire.js').SessionInfo} session
   */
  openNew(session) {
    this.store.upsertSession(session);
    location.hash = `#/s/${session.id}`;
    this.navigate();
    this.views.get(session.id)?.input.focus();
  }

  // ---- rename and archive ---------------------------------------------------------

  /** PATCH the title; resolves with the new SessionInfo, rejects with the error. */
  /** @param {string} id @param {string} title */
  async rename(id, title) {
    const info = await this.conn.rest('PATCH', `/sessions/${encodeURIComponent(id)}`, { title });
    if (info?.id && this.store.sessions.has(id)) this.store.upsertSession(info);
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
      this.aError.textContent = `Not archived: ${/** @type {Error} */ (err).message}`;
      return;
    }
    this.archiveDialog.close();
    this.forget(id);
    this.toast('Session archived');
    this.filterEl.focus();
  }

  // ---- misc -----------------------------------------------------------------------

  /** @param {string} text @param {string} [kind] */
  toast(text, kind = '') {
    const t = h(`div.toast.${kind || 'ok'}`, { role: kind === 'error' ? 'alert' : 'status' }, text);
    document.body.append(t);
    setTimeout(() => t.remove(), 4000);
  }

  /** @param {KeyboardEvent} e */
  onGlobalKey(e) {
    if (e.defaultPrevented) return;
    const target = /** @type {HTMLElement} */ (e.target);
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
    const modal = !!document.querySelector('dialog[open]');
    if (e.key === '/' && !typing && !modal) {
      e.preventDefault();
      this.filterEl.focus();
      return;
    }
    if (e.key === 'Escape' && !modal && document.body.classList.contains('drawer-open')) {
      e.preventDefault();
      this.toggleDrawer(false);
      return;
    }
    if (e.key === 'Escape' && !modal) {
      const inPane = /** @type {HTMLElement | null} */ (target.closest?.('.chat'));
      const v = inPane ? this.views.get(inPane.dataset.session || '') : this.views.get(this.route.id || '');
      if (v && v.busy) {
        e.preventDefault();
        v.interrupt();
      }
    } else if (e.altKey && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      const links = /** @type {HTMLAnchorElement[]} */ ([...this.listEl.querySelectorAll('a.session')]);
      const i = links.findIndex((a) => a.dataset.id === this.route.id);
      const next = links[Math.max(0, Math.min(links.length - 1, i + (e.key === 'ArrowDown' ? 1 : -1)))];
      if (next) {
        e.preventDefault();
        location.hash = next.getAttribute('href') || '#/';
        next.focus();
      }
    }
  }
}

/**
 * Keeps the page as tall as what one can see of it: an on-screen keyboard shrinks the
 * visual viewport (where the browser does not resize the page itself, see
 * `interactive-widget` in index.html), and the composer must stay above it. Pinch zoom
 * shrinks the visual viewport too, by its scale: that is not counted. Used by the
 * phone layout only (`--app-height`, `--app-top` in style.css).
 */
function followVisualViewport() {
  const vv = window.visualViewport;
  if (!vv) return;
  const root = document.documentElement;
  const fit = () => {
    const zoomed = vv.scale > 1.01;
    root.style.setProperty('--app-height', `${Math.round(zoomed ? vv.height * vv.scale : vv.height)}px`);
    root.style.setProperty('--app-top', `${zoomed ? 0 : Math.round(vv.offsetTop)}px`);
  };
  vv.addEventListener('resize', fit);
  vv.addEventListener('scroll', fit);
  fit();
}

// ---- login ----------------------------------------------------------------------------

/** @param {string} reason */
function showLogin(reason) {
  const input = h('input.field', { type: 'password', id: 'token', autocomplete: 'current-password', 'aria-describedby': 'login-why' });
  document.title = 'tandem · sign in';
  clear(document.body).append(h('main.login', h('form.login-card', {
    onsubmit: (/** @type {Event} */ e) => {
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

async function boot() {
  const params = new URLSearchParams(location.search);
  if (params.has('token')) {
    localStorage.setItem(TOKEN_KEY, params.get('token') || '');
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  }
  // Opened from a pairing link (another device's "Open on a phone"): this device gets
  // a token of its own before signing in.
  try {
    const paired = await redeemPairingLink();
    if (paired) localStorage.setItem(TOKEN_KEY, paired);
  } catch (e) {
    showLogin(`This pairing link did not work: ${e instanceof Error ? e.message : String(e)}`);
    return;
  }
  const token = localStorage.getItem(TOKEN_KEY) || '';
  const app = new App(token);
  resolveReady(app);
  for (let attempt = 0; ; attempt++) {
    try {
      await app.start();
      break;
    } catch (e) {
      const err = /** @type {import('./conn.js').RequestError} */ (e);
      // No answer at all (the server is down; the page came from the service
      // worker): say so and try again, rather than ask for a token.
      if (unreachable(err)) {
        await waitOffline(attempt);
        continue;
      }
      if (err.status === 401) {
        localStorage.removeItem(TOKEN_KEY);
        showLogin(token ? 'That token was not accepted. It may be from another server or a reset data directory.' : 'No access token given.');
      } else {
        showLogin(`The server answered with an error: ${err.message}`);
      }
      return;
    }
  }
  app.attention.title();
}

registerShellWorker(() => {
  // The server was upgraded and this page is the old build's. Nothing on screen yet
  // (loading, offline): load the new one; else say so and leave the moment to the person.
  if (!document.querySelector('.shell, form.login-card')) location.reload();
  else ready.then((app) => app.toast('tandem was updated: reload the page to use the new version.'));
});
boot();
