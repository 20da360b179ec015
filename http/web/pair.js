// Pairing a phone from the page: "Open on a phone" shows a one-time link
// (`device.pair-code`) as a QR code with the user's paired devices (`devices.list`,
// `device.revoke`); a phone that opens the link (`#/pair/CODE`) exchanges the code
// for a token of its own (`POST /api/v1/devices/pair`, no token needed) before the
// page signs in. The user's own token never travels in a link.

import { h, clear } from './dom.js';
import { deviceLabel } from './push.js';

/** @typedef {import('./conn.js').Conn} Conn */
/** @typedef {import('./wire.js').DevicePairCodeResult} PairCode */

/** The route of a pairing link: `#/pair/` and 32 hex digits. */
const LINK = /^#\/pair\/([0-9a-f]{32})$/;

/**
 * If the page was opened from a pairing link, exchanges its code for this device's
 * token and forgets the link. Answers the token, or throws the server's reason
 * (a used or expired code); `null` when the page was not opened from a link.
 * @returns {Promise<string | null>}
 */
export async function redeemPairingLink() {
  const m = LINK.exec(location.hash);
  if (!m) return null;
  // The code is spent whatever happens: never leave it in the address bar or history.
  history.replaceState(null, '', `${location.pathname}${location.search}#/`);
  const res = await fetch('/api/v1/devices/pair', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: m[1], label: deviceLabel() }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body?.error?.message || `pairing failed (${res.status})`);
  // `POST /devices/pair` is not a request of the socket: its answer is typed here.
  return /** @type {{token: string}} */ (body).token;
}

/**
 * The QR code as an SVG: one path of the dark modules, a 4-module quiet zone.
 * @param {{size: number, modules: string}} qr
 */
export function qrSvg(qr) {
  const ns = 'http://www.w3.org/2000/svg';
  const side = qr.size + 8;
  let d = '';
  for (let y = 0; y < qr.size; y++) {
    for (let x = 0; x < qr.size; x++) {
      if (qr.modules[y * qr.size + x] === '1') d += `M${x + 4} ${y + 4}h1v1h-1z`;
    }
  }
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${side} ${side}`);
  svg.setAttribute('class', 'qr');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'QR code of the pairing link');
  svg.setAttribute('shape-rendering', 'crispEdges');
  const bg = document.createElementNS(ns, 'rect');
  bg.setAttribute('width', String(side));
  bg.setAttribute('height', String(side));
  bg.setAttribute('fill', '#fff');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000');
  svg.append(bg, path);
  return svg;
}

/**
 * Opens the "Open on a phone" dialog: a fresh link and its QR code, how long it
 * works, and the user's devices, each removable.
 * @param {Conn} conn
 */
export async function openOnPhone(conn) {
  const body = h('div.pair-body');
  const devices = h('ul.devices', { 'aria-label': 'Paired devices' });
  const error = h('div.error-text', { role: 'alert' });
  const close = h('button.btn', { type: 'button', onclick: () => dialog.close() }, 'Close');
  const dialog = /** @type {HTMLDialogElement} */ (h('dialog.create.pair', { 'aria-labelledby': 'pair-title' },
    h('h2#pair-title', 'Open on a phone'),
    body,
    h('h3', 'Paired devices'),
    devices,
    error,
    h('div.row.end', close)));
  let timer = 0;
  dialog.addEventListener('close', () => { clearInterval(timer); dialog.remove(); });
  document.body.append(dialog);
  dialog.showModal();
  close.focus();

  const listDevices = async () => {
    const { devices: list } = await conn.request('devices.list', {});
    clear(devices);
    if (!list.length) devices.append(h('li.muted', 'None yet.'));
    for (const d of list) {
      devices.append(h('li.device', { dataset: { id: d.id } },
        h('span', d.label || d.id),
        h('span.muted', ` paired ${new Date(d.createdAt).toLocaleString()}`),
        h('button.btn.tiny.danger', {
          type: 'button',
          'aria-label': `Remove ${d.label || d.id}`,
          onclick: async () => {
            error.textContent = '';
            try {
              await conn.request('device.revoke', { deviceId: d.id });
              await listDevices();
            } catch (e) {
              error.textContent = e instanceof Error ? e.message : String(e);
            }
          },
        }, 'Remove')));
    }
  };

  try {
    const code = /** @type {PairCode} */ (await conn.request('device.pair-code', {}));
    const left = h('p.muted.expires', { 'aria-live': 'polite' });
    const tick = () => {
      const s = Math.max(0, Math.round((code.expiresAt - Date.now()) / 1000));
      left.textContent = s > 0
        ? `Scan with the phone's camera. The link works once, for ${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')} more.`
        : 'This link expired: close and open again for a new one.';
    };
    tick();
    timer = window.setInterval(tick, 1000);
    body.append(
      qrSvg(code.qr),
      left,
      h('p', h('input.field.pair-url', { type: 'text', readOnly: true, value: code.url, 'aria-label': 'Pairing link', onfocus: (/** @type {FocusEvent} */ e) => /** @type {HTMLInputElement} */ (e.target).select() })),
      code.reachable ? null : h('p.warn', 'The server listens on this machine only: a phone cannot reach this link. Start it with --bind 0.0.0.0 --tls self-signed.'));
    await listDevices();
  } catch (e) {
    error.textContent = e instanceof Error ? e.message : String(e);
  }
}
