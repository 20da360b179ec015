// The page without its server: the service worker (sw.js) keeps the page's shell, so
// it opens while the server is down; this module registers that worker and, when the
// first requests cannot reach the server, shows so and tries again until they can.

import { h, clear, clock } from './dom.js';

/** The longest wait between two tries to reach the server on start. */
export const MAX_RETRY_MS = 10000;

/**
 * How long to wait before try number `attempt` + 1 (from 0): 1 s, 2 s, 4 s, 8 s, then
 * every 10 s.
 * @param {number} attempt
 * @returns {number}
 */
export function retryDelay(attempt) {
  return Math.min(MAX_RETRY_MS, 1000 * 2 ** Math.max(0, Math.min(attempt, 20)));
}

/**
 * Whether a failed request means the server could not be reached (no answer at all,
 * or none in time), as opposed to an answer that refused it.
 * @param {any} err
 * @returns {boolean}
 */
export function unreachable(err) {
  return !!err && typeof err.status !== 'number' && (err.code === 'DISCONNECTED' || err.code === 'TIMEOUT');
}

/**
 * Registers the service worker that keeps the page's shell. Where there is none
 * (an insecure origin, an old browser), the page works as before, online only.
 * `onUpdated` runs when a new build's worker takes over from the one that served
 * this page (the server was upgraded): the page's files are then the old build's.
 * @param {() => void} onUpdated
 */
export function registerShellWorker(onUpdated) {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return;
  const sw = navigator.serviceWorker;
  if (sw.controller) sw.addEventListener('controllerchange', () => onUpdated(), { once: true });
  sw.register('/sw.js', { scope: '/' }).catch((e) => console.warn('no offline page:', e));
}

/** @type {{status: HTMLElement, when: HTMLElement, retry: HTMLButtonElement} | null} */
let shown = null;

/**
 * Shows that the server is unreachable and that the page is retrying, then resolves
 * after `retryDelay(attempt)`, or at once when the person presses "Retry now".
 * @param {number} attempt tries so far, minus one
 * @returns {Promise<void>}
 */
export function waitOffline(attempt) {
  const wait = retryDelay(attempt);
  if (!shown || !shown.status.isConnected) {
    const status = h('p.error-text', { role: 'status' });
    const when = h('p.muted');
    const retry = /** @type {HTMLButtonElement} */ (h('button.btn.primary', { type: 'button' }, 'Retry now'));
    document.title = 'tandem · offline';
    clear(document.body).append(h('main.login.offline', h('section.login-card', { 'aria-labelledby': 'offline-title' },
      h('h1#offline-title', h('img', { src: '/assets/favicon.svg', alt: '', width: 24, height: 24 }), 'tandem'),
      status,
      when,
      h('p', 'This page was kept by your browser. It connects by itself as soon as the server answers again.'),
      h('div.row.end', retry))));
    shown = { status, when, retry };
  }
  const { status, when, retry } = shown;
  status.textContent = 'The server is unreachable. Retrying…';
  when.textContent = `Tried ${attempt + 1} ${attempt ? 'times' : 'time'}, last at ${clock(Date.now())}. Next try in ${Math.round(wait / 1000)}\u00a0s.`;
  return new Promise((resolve) => {
    const timer = setTimeout(done, wait);
    function done() {
      clearTimeout(timer);
      retry.onclick = null;
      resolve();
    }
    retry.onclick = () => {
      status.textContent = 'The server is unreachable. Retrying now…';
      done();
    };
  });
}
