// "MCP servers": the servers agents get beside tandem's own tools (`mcp-servers.list`):
// the config's, and the user's own, which only they see. Each can be probed
// (`mcp-servers.probe`: reachable or not, and its tools); the user's own can be removed
// (`mcp-servers.remove`), and a form adds one (`mcp-servers.add`). Values of env and
// headers are sent once and never shown again: the list says only which are set.
// The new-session dialog asks which of them the session gets (`mcpServers`).

import { h, clear } from './dom.js';

/** @typedef {import('./conn.js').Conn} Conn */
/** @typedef {import('./wire.js').McpServerInfo} McpServerInfo */
/** @typedef {import('./wire.js').McpServerProbeResult} McpServerProbeResult */

/**
 * `KEY=VALUE` (env) or `Name: value` (headers) lines as an object; blank lines are
 * skipped, a line without the separator is an error naming it.
 * @param {string} text @param {'=' | ':'} sep @returns {Record<string, string>}
 */
export function parsePairs(text, sep) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.indexOf(sep);
    if (at <= 0) throw new Error(`“${line}”: write ${sep === '=' ? 'NAME=value' : 'Name: value'}`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/**
 * The `mcp-servers.add` entry the form describes: stdio (`command`, one argument per
 * line, `NAME=value` lines) or http (`url`, `Name: value` lines); empty parts are left
 * out.
 * @param {{name: string, kind: string, command: string, args: string, env: string, url: string, headers: string}} form
 * @returns {import('./wire.js').McpServerEntry}
 */
export function entryFrom(form) {
  /** @type {Record<string, any>} */
  const entry = { name: form.name.trim() };
  if (form.kind === 'http') {
    entry.url = form.url.trim();
    const headers = parsePairs(form.headers, ':');
    if (Object.keys(headers).length) entry.headers = headers;
  } else {
    entry.command = form.command.trim();
    const args = form.args.split('\n').map((a) => a.trim()).filter(Boolean);
    if (args.length) entry.args = args;
    const env = parsePairs(form.env, '=');
    if (Object.keys(env).length) entry.env = env;
  }
  return /** @type {import('./wire.js').McpServerEntry} */ (entry);
}

/** One line for a probe's answer. @param {McpServerProbeResult} r */
export function probeText(r) {
  if (!r.reachable) return `Not reachable: ${r.error || 'no answer'}`;
  const who = [r.serverName, r.serverVersion].filter(Boolean).join(' ');
  const tools = r.tools.length ? `${r.tools.length} tool${r.tools.length === 1 ? '' : 's'}: ${r.tools.join(', ')}` : 'no tools';
  return `Reachable${who ? ` (${who})` : ''} · ${tools}`;
}

/** What the list shows of a server. @param {McpServerInfo} s */
export function serverText(s) {
  const how = s.transport === 'http' ? s.url : [s.command, ...(s.args || [])].join(' ');
  const secrets = [...(s.env || []), ...(s.headers || [])].map((x) => `${x.name}${x.set ? '' : ' (empty)'}`);
  return `${how}${secrets.length ? ` · ${s.transport === 'http' ? 'headers' : 'env'}: ${secrets.join(', ')}` : ''}`;
}

/**
 * Shows the MCP servers dialog.
 * @param {Conn} conn
 */
export async function openMcpServers(conn) {
  const list = h('ul.mcp-list', { 'aria-label': 'MCP servers' });
  const error = h('div.error-text', { role: 'alert' });
  const close = h('button.btn', { type: 'button', onclick: () => dialog.close() }, 'Close');
  const input = (/** @type {string} */ name, /** @type {string} */ placeholder) =>
    /** @type {HTMLInputElement} */ (h('input.field', { name, type: 'text', placeholder, autocomplete: 'off' }));
  const area = (/** @type {string} */ name, /** @type {string} */ placeholder) =>
    /** @type {HTMLTextAreaElement} */ (h('textarea.field', { name, rows: 2, placeholder, autocomplete: 'off' }));
  const name = input('name', 'files');
  const kind = /** @type {HTMLSelectElement} */ (h('select.field', { name: 'kind', onchange: () => shown() },
    h('option', { value: 'stdio' }, 'A program (stdio)'), h('option', { value: 'http' }, 'A URL (HTTP)')));
  const command = input('command', 'npx');
  const args = area('args', 'One argument per line');
  const env = area('env', 'NAME=value, one per line (kept secret)');
  const url = input('url', 'https://example.com/mcp');
  const headers = area('headers', 'Name: value, one per line (kept secret)');
  const row = (/** @type {string} */ label, /** @type {HTMLElement} */ control) => h('label.field-row', h('span', label), control);
  const stdioRows = [row('Command', command), row('Arguments', args), row('Environment', env)];
  const httpRows = [row('URL', url), row('Headers', headers)];
  const shown = () => {
    for (const r of stdioRows) r.hidden = kind.value !== 'stdio';
    for (const r of httpRows) r.hidden = kind.value !== 'http';
  };
  const addError = h('div.error-text', { role: 'alert' });
  const form = h('form.mcp-add', {
    onsubmit: async (/** @type {Event} */ e) => {
      e.preventDefault();
      addError.textContent = '';
      try {
        const entry = entryFrom({ name: name.value, kind: kind.value, command: command.value, args: args.value, env: env.value, url: url.value, headers: headers.value });
        await conn.request('mcp-servers.add', entry);
        for (const el of [name, command, args, env, url, headers]) el.value = '';
        await refresh();
        name.focus();
      } catch (err) {
        addError.textContent = /** @type {Error} */ (err).message;
      }
    },
  }, h('h3', 'Add one of your own'), row('Name', name), row('Kind', kind), ...stdioRows, ...httpRows, addError,
  h('div.row.end', h('button.btn.primary', { type: 'submit' }, 'Add')));
  shown();
  const dialog = /** @type {HTMLDialogElement} */ (h('dialog.create.mcp', { 'aria-labelledby': 'mcp-title' },
    h('h2#mcp-title', 'MCP servers'),
    h('p.muted', 'Your agents get these beside tandem’s own tools; choose per session when you create one. Yours are yours alone.'),
    list, error, form,
    h('div.row.end', close)));
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  close.focus();

  async function refresh() {
    /** @type {McpServerInfo[]} */
    let servers;
    try {
      servers = (await conn.request('mcp-servers.list', {})).servers;
    } catch (e) {
      error.textContent = `Cannot list them: ${/** @type {Error} */ (e).message}`;
      return;
    }
    error.textContent = '';
    clear(list);
    if (!servers.length) list.append(h('li.muted', 'None yet.'));
    for (const s of servers) list.append(item(s));
  }

  /** @param {McpServerInfo} s */
  function item(s) {
    const result = h('div.mcp-probe', { role: 'status' });
    const probe = /** @type {HTMLButtonElement} */ (h('button.btn.tiny', {
      type: 'button',
      'aria-label': `Probe ${s.name}`,
      onclick: async () => {
        probe.disabled = true;
        result.textContent = 'Connecting…';
        try {
          result.textContent = probeText(await conn.request('mcp-servers.probe', { name: s.name }));
        } catch (e) {
          result.textContent = /** @type {Error} */ (e).message;
        }
        probe.disabled = false;
      },
    }, 'Probe'));
    const remove = s.scope === 'user'
      ? h('button.btn.tiny.danger', {
        type: 'button',
        'aria-label': `Remove ${s.name}`,
        onclick: async () => {
          try {
            await conn.request('mcp-servers.remove', { name: s.name });
            await refresh();
            close.focus();
          } catch (e) {
            error.textContent = /** @type {Error} */ (e).message;
          }
        },
      }, 'Remove')
      : null;
    return h('li.mcp-item', { dataset: { server: s.name } },
      h('div.mcp-text',
        h('strong', s.name), ' ', h('span.badge', s.scope === 'user' ? 'yours' : 'config'),
        h('div.muted.mcp-how', serverText(s)), result),
      h('div.row', probe, remove));
  }

  list.append(h('li.muted', 'Looking…'));
  await refresh();
}

/**
 * The new-session dialog's "MCP servers" choice: a checkbox per server the user may
 * use, all ticked. `value()` is what `session.create` gets: nothing while every one is
 * ticked (the session gets every server, those added later too), else the ticked names.
 */
export class McpChoice {
  constructor() {
    /** @type {HTMLInputElement[]} */
    this.boxes = [];
    this.el = h('fieldset.mcp-choice', { hidden: true }, h('legend', 'MCP servers'));
  }

  /** Lists the servers anew. @param {Conn} conn */
  async fill(conn) {
    /** @type {McpServerInfo[]} */
    let servers = [];
    try {
      servers = (await conn.request('mcp-servers.list', {})).servers;
    } catch {
      // The session is made without a choice: every server, as before.
    }
    this.boxes = servers.map((s) => /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', name: 'mcp', value: s.name, checked: true })));
    clear(this.el).append(h('legend', 'MCP servers'),
      ...this.boxes.map((b, i) => h('label.check', b, ` ${servers[i].name}`)));
    this.el.hidden = !servers.length;
  }

  /** @returns {string[] | undefined} */
  value() {
    if (this.boxes.every((b) => b.checked)) return undefined;
    return this.boxes.filter((b) => b.checked).map((b) => b.value);
  }
}
