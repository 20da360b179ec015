// The page's one state store: sessions, pairs, vendors, who the user is, which
// sessions the page subscribes to, their queues and usage, and the layout. No
// DOM here: views subscribe to topics and re-render only what a change names. Pure,
// so node's test runner checks it (web-tests/store.test.js).

/**
 * @typedef {import('./wire.js').SessionInfo} SessionInfo
 * @typedef {import('./wire.js').PairInfo} PairInfo
 * @typedef {import('./wire.js').QueuedEntry} QueuedEntry
 */

/**
 * What the main area shows: a tagged object, never a string. A Driver with one
 * Worker is a `pair`; with several, a `group` (its Workers oldest first, as
 * `SessionInfo.workers` lists them).
 * @typedef {{kind: 'none'}
 *   | {kind: 'loading', id: string}
 *   | {kind: 'missing', id: string}
 *   | {kind: 'one', id: string}
 *   | {kind: 'pair', driverId: string, workerId: string}
 *   | {kind: 'group', driverId: string, workerIds: string[]}
 *   | {kind: 'side', left: string, right: string}} Layout
 */

/** @typedef {'sessions' | 'session' | 'pairs' | 'layout' | 'queue' | 'vendors'} Topic */

export class Store {
  constructor() {
    /** @type {Map<string, SessionInfo>} */
    this.sessions = new Map();
    /** @type {Map<string, PairInfo>} */
    this.pairs = new Map();
    /** @type {any[]} */
    this.vendors = [];
    /** Sessions this page is subscribed to (one per open view). @type {Set<string>} */
    this.subscribed = new Set();
    /** Each open session's queue, as the server last said. @type {Map<string, QueuedEntry[]>} */
    this.queues = new Map();
    /** The signed-in user's id (`user.get`), once known: the sessions they own are
     * the ones this page reports seen. @type {string | null} */
    this.userId = null;
    /** @type {Layout} */
    this.layout = { kind: 'none' };
    /** True once every page of the session list has been read. */
    this.listComplete = false;
    /** @type {Map<Topic, Set<(key?: string) => void>>} */
    this.listeners = new Map();
  }

  /**
   * Calls `fn(key)` after each change of `topic`; returns the unsubscribe function.
   * @param {Topic} topic
   * @param {(key?: string) => void} fn
   */
  on(topic, fn) {
    if (!this.listeners.has(topic)) this.listeners.set(topic, new Set());
    this.listeners.get(topic)?.add(fn);
    return () => this.listeners.get(topic)?.delete(fn);
  }

  /** @param {Topic} topic @param {string} [key] */
  emit(topic, key) {
    for (const fn of this.listeners.get(topic) || []) fn(key);
  }

  /**
   * Takes a session as the server sent it. Returns false (and tells no one) when
   * nothing changed, so a repeated upsert costs no re-render.
   * @param {SessionInfo} s
   */
  upsertSession(s) {
    const old = this.sessions.get(s.id);
    if (old && sameJson(old, s)) return false;
    this.sessions.set(s.id, s);
    this.emit('session', s.id);
    this.emit('sessions');
    if (pairingChanged(old, s)) this.emit('pairs');
    return true;
  }

  /** @param {string} id */
  removeSession(id) {
    if (!this.sessions.delete(id)) return false;
    this.emit('sessions');
    this.emit('session', id);
    return true;
  }

  /** @param {PairInfo[]} list */
  setPairs(list) {
    const next = new Map(list.map((p) => [p.pairId, p]));
    if (sameJson([...this.pairs.entries()], [...next.entries()])) return;
    this.pairs = next;
    this.emit('pairs');
    this.emit('sessions');
  }

  /**
   * The Driver of the group session `id` is in: itself when it has Workers, its
   * Driver when it is a Worker, else null. Read from the pairs, not `pairId`: a
   * Driver's `pairId` names only its first pair.
   * @param {string} id
   */
  driverOf(id) {
    for (const p of this.pairs.values()) if (p.driverId === id || p.workerId === id) return p.driverId;
    return null;
  }

  /**
   * Driver `driverId`'s pairs whose Worker the page knows, oldest first.
   * @param {string} driverId
   * @returns {PairInfo[]}
   */
  workerPairs(driverId) {
    return [...this.pairs.values()]
      .filter((p) => p.driverId === driverId && this.sessions.has(p.workerId))
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** The pair whose Worker is session `id`, if any. @param {string} id */
  pairOfWorker(id) {
    for (const p of this.pairs.values()) if (p.workerId === id) return p;
    return null;
  }

  /** @param {string} id @param {QueuedEntry[]} queued */
  setQueue(id, queued) {
    if (sameJson(this.queues.get(id) || [], queued)) return;
    this.queues.set(id, queued);
    this.emit('queue', id);
  }

  /** Whether the signed-in user owns session `id` (an admin may drive others' too,
   * but only the owner's clients clear what it asks of its owner). @param {string} id */
  owns(id) {
    const s = this.sessions.get(id);
    return !!s && !!this.userId && s.ownerId === this.userId;
  }

  /** Sessions whose attention the tab title counts: the user's own (what another
   * user's session asks is asked of that user, and only their clients clear it). */
  attentionCount() {
    return attentionCount([...this.sessions.values()].filter((s) => this.owns(s.id)));
  }

  /** @param {Layout} layout */
  setLayout(layout) {
    if (sameLayout(this.layout, layout)) return false;
    this.layout = layout;
    this.emit('layout');
    return true;
  }

  /** Sessions the layout shows. */
  shown() {
    return layoutSessions(this.layout);
  }

  /** Sessions with a turn or background work (the Running button's count). */
  runningCount() {
    let n = 0;
    for (const s of this.sessions.values()) {
      if (s.status === 'running' || s.status === 'waiting' || s.backgroundTasks?.length) n++;
    }
    return n;
  }
}

/**
 * What session `s` asks of its owner, as the server keeps it (`SessionInfo.attention`).
 * @param {SessionInfo | null | undefined} s
 * @returns {import('./wire.js').Attention}
 */
export function attentionOf(s) {
  return s?.attention || 'none';
}

/**
 * How many sessions wait for the person: an approval or a proposal waits
 * (`needs_input`) or the last turn failed unseen (`failed`). A turn that ended
 * unseen, or one running, is not counted.
 * @param {Iterable<SessionInfo>} sessions
 */
export function attentionCount(sessions) {
  let n = 0;
  for (const s of sessions) {
    const a = attentionOf(s);
    if (a === 'needs_input' || a === 'failed') n++;
  }
  return n;
}

/**
 * The list's mark for an attention, in words (never colour alone): `text` is shown,
 * `label` is what a screen reader hears (part of the row link's name); null for none.
 * @param {import('./wire.js').Attention | undefined} attention
 * @returns {{kind: 'needs' | 'failed' | 'new', text: string, label: string, title: string} | null}
 */
export function attentionBadge(attention) {
  switch (attention) {
    case 'needs_input': return { kind: 'needs', text: 'Needs you', label: 'Needs you', title: 'An approval or a proposal waits for you' };
    case 'failed': return { kind: 'failed', text: 'Failed', label: 'Failed', title: 'The last turn failed; not seen yet' };
    case 'done_unseen': return { kind: 'new', text: '', label: 'New', title: 'A turn ended since you last looked' };
    default: return null;
  }
}

/**
 * The tab title with `n` sessions counted: "(2) tandem"; the title as it is without
 * a count when `n` is 0 (a count already there is replaced).
 * @param {string} title
 * @param {number} n
 */
export function countedTitle(title, n) {
  const base = title.replace(/^\(\d+\) /, '');
  return n > 0 ? `(${n}) ${base}` : base;
}

/**
 * Reports to the server what the page shows (`client.seen`), per session: only a seq
 * larger than the last one sent, at most once per `interval` ms, the newest one when
 * the wait ends. The first report of a burst waits `settle` ms so that a replay
 * arriving as many events is reported once. Time and timers are given, so node's
 * tests drive it.
 */
export class SeenReports {
  /**
   * @param {(id: string, seq: number) => void} send
   * @param {{interval?: number, settle?: number, now?: () => number,
   *   setTimer?: (fn: () => void, ms: number) => any, clearTimer?: (t: any) => void}} [opts]
   */
  constructor(send, opts = {}) {
    this.send = send;
    this.interval = opts.interval ?? 1000;
    this.settle = opts.settle ?? 50;
    this.now = opts.now || (() => Date.now());
    this.setTimer = opts.setTimer || ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = opts.clearTimer || ((t) => clearTimeout(t));
    /** Per session: the last seq sent and when, the newest seq waiting, its timer.
     * @type {Map<string, {sent: number, at: number, want: number, timer: any}>} */
    this.state = new Map();
  }

  /** @param {string} id */
  entry(id) {
    let e = this.state.get(id);
    if (!e) {
      e = { sent: 0, at: -Infinity, want: 0, timer: null };
      this.state.set(id, e);
    }
    return e;
  }

  /**
   * The page shows session `id` up to `seq`. With `again`, sent even when that seq
   * was sent before (the server still counts something unseen).
   * @param {string} id
   * @param {number} seq
   * @param {boolean} [again]
   */
  note(id, seq, again = false) {
    if (!(seq > 0)) return;
    const e = this.entry(id);
    if (again && seq <= e.sent) e.sent = seq - 1;
    if (seq <= e.sent) return;
    e.want = Math.max(e.want, seq);
    if (e.timer !== null) return;
    const wait = Math.max(this.settle, e.at + this.interval - this.now());
    e.timer = this.setTimer(() => this.flush(id), wait);
  }

  /** @param {string} id */
  flush(id) {
    const e = this.state.get(id);
    if (!e) return;
    e.timer = null;
    if (e.want <= e.sent) return;
    e.sent = e.want;
    e.at = this.now();
    this.send(id, e.want);
  }

  /** Session `id` is no longer shown: nothing waiting for it is sent. @param {string} id */
  forget(id) {
    const e = this.state.get(id);
    if (e?.timer != null) this.clearTimer(e.timer);
    this.state.delete(id);
  }
}

/**
 * Whether an upsert of session `s` (was `old`) changes the pairs it is in: its
 * pair, or a Driver's Workers (a Worker added beside others leaves the Driver's
 * `pairId` as it was). The page then lays out again and re-reads the pairs.
 * @param {SessionInfo | undefined} old
 * @param {SessionInfo} s
 */
export function pairingChanged(old, s) {
  return (old?.pairId ?? null) !== (s.pairId ?? null) || !sameJson(old?.workers ?? [], s.workers ?? []);
}

/**
 * A Worker's name as the page shows it (`workerName`; pairs from before Workers
 * had names are "Worker").
 * @param {PairInfo} pair
 */
export function workerNameOf(pair) {
  return pair.workerName || 'Worker';
}

/**
 * The layout for a route: `#/s/ID` (one session, or its Driver's whole group side
 * by side) or `#/s/A/with/B` (any two sessions side by side, unpaired).
 * @param {{id: string | null, with?: string | null}} route
 * @param {Store} store
 * @returns {Layout}
 */
export function layoutFor(route, store) {
  const id = route.id;
  if (!id) return { kind: 'none' };
  if (!store.sessions.has(id)) return store.listComplete ? { kind: 'missing', id } : { kind: 'loading', id };
  if (route.with && route.with !== id && store.sessions.has(route.with)) return { kind: 'side', left: id, right: route.with };
  const driverId = store.driverOf(id);
  const workerIds = driverId && store.sessions.has(driverId) ? store.workerPairs(driverId).map((p) => p.workerId) : [];
  if (driverId && workerIds.length === 1) return { kind: 'pair', driverId, workerId: workerIds[0] };
  if (driverId && workerIds.length > 1) return { kind: 'group', driverId, workerIds };
  return { kind: 'one', id };
}

/** Parses `location.hash`. @param {string} hash */
export function parseRoute(hash) {
  const m = /^#\/s\/([^/]+)(?:\/with\/([^/]+))?$/.exec(hash);
  return { id: m ? decodeURIComponent(m[1]) : null, with: m?.[2] ? decodeURIComponent(m[2]) : null };
}

/** The sessions a layout shows, in pane order. @param {Layout} l @returns {string[]} */
export function layoutSessions(l) {
  switch (l.kind) {
    case 'one': return [l.id];
    case 'pair': return [l.driverId, l.workerId];
    case 'group': return [l.driverId, ...l.workerIds];
    case 'side': return [l.left, l.right];
    default: return [];
  }
}

/**
 * A Driver and its Workers, when the layout shows them (a `pair` or a `group`).
 * @param {Layout} l
 * @returns {{driverId: string, workerIds: string[]} | null}
 */
export function groupOf(l) {
  if (l.kind === 'pair') return { driverId: l.driverId, workerIds: [l.workerId] };
  if (l.kind === 'group') return { driverId: l.driverId, workerIds: l.workerIds };
  return null;
}

/** @param {Layout} a @param {Layout} b */
export function sameLayout(a, b) {
  return sameJson(a, b);
}

/**
 * Roots by latest activity; each Driver's Workers and spawned children below it.
 * @param {Store} store
 * @returns {{roots: SessionInfo[], children: Map<string, SessionInfo[]>}}
 */
export function tree(store) {
  const all = [...store.sessions.values()].sort((a, b) => b.lastActivity - a.lastActivity);
  /** @type {Map<string, SessionInfo[]>} */
  const children = new Map();
  const placed = new Set();
  /** @param {string} parent @param {SessionInfo} child */
  const under = (parent, child) => {
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent)?.push(child);
    placed.add(child.id);
  };
  // A Driver's Workers oldest first, as its panes are.
  for (const p of [...store.pairs.values()].sort((a, b) => a.createdAt - b.createdAt)) {
    const w = store.sessions.get(p.workerId);
    if (w && store.sessions.has(p.driverId)) under(p.driverId, w);
  }
  for (const s of all) if (s.parentId && store.sessions.has(s.parentId) && !placed.has(s.id)) under(s.parentId, s);
  return { roots: all.filter((s) => !placed.has(s.id)), children };
}

/**
 * "1.2k in · 340 out · $0.05": a turn's `usage` or a sum of them.
 * @param {{inputTokens: number, outputTokens: number, costUsd?: number | null} | null | undefined} u
 */
export function formatUsage(u) {
  if (!u) return '';
  const k = (/** @type {number} */ x) => (x >= 10000 ? `${Math.round(x / 1000)}k` : x >= 1000 ? `${(x / 1000).toFixed(1)}k` : String(x));
  const parts = [`${k(u.inputTokens)} in`, `${k(u.outputTokens)} out`];
  if (typeof u.costUsd === 'number') parts.push(`$${u.costUsd < 0.01 && u.costUsd > 0 ? u.costUsd.toFixed(4) : u.costUsd.toFixed(2)}`);
  return parts.join(' · ');
}

/** @param {any} a @param {any} b */
function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A session's status in words: a turn waiting for a turn slot says its place in line.
 * @param {SessionInfo} s
 */
export function statusText(s) {
  if (s.nodeUnavailable) return 'unavailable';
  return s.status === 'waiting' && s.waitingPlace ? `waiting (${s.waitingPlace} in line)` : s.status;
}

/** The status a session is shown with: `unavailable` while its cluster node is away
 * (its own `status` is then the last one that node published), else its status.
 * @param {SessionInfo} s */
export function shownStatus(s) {
  return s.nodeUnavailable ? 'unavailable' : s.status;
}
