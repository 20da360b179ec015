// Test hooks, served only by a build with the `test-hooks` feature (the browser
// tests); a release build has neither this file nor the tag that loads it. Loaded
// before app.js so it sees every CSP violation and every frame the page sends.

const cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));

/** Desktop notifications the page showed (the constructor is wrapped). */
const notifications = [];
if (typeof Notification !== 'undefined') {
  const Real = Notification;
  class Recorded extends Real {
    constructor(title, opts) {
      super(title, opts);
      notifications.push({ title, body: opts?.body });
    }
  }
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
  Recorded.requestPermission = (...a) => Real.requestPermission(...a);
  window.Notification = Recorded;
}

/** Makes the tab look hidden (true) or visible again, as switching tabs does. */
function setHidden(hidden) {
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden });
  document.dispatchEvent(new Event('visibilitychange'));
}

import('./app.js').then((m) => m.ready).then((app) => {
  const sent = [];
  const send = app.conn.send.bind(app.conn);
  app.conn.send = (frame) => {
    sent.push(frame);
    if (sent.length > 100) sent.shift();
    return send(frame);
  };
  window.__tandem = {
    app,
    view: (id) => app.views.get(id),
    stats: (id) => app.views.get(id)?.stats,
    sent,
    cspViolations,
    notifications,
    setHidden,
    inject: (id, ev) => {
      const v = app.views.get(id);
      v.onEvent({ sessionId: id, seq: v.tip + 1, ts: Date.now(), ...ev });
    },
  };
});
