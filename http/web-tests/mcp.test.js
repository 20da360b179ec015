import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import { parsePairs, entryFrom, probeText, serverText } from '../web/mcp.js';

const form = (over) => ({ name: ' files ', kind: 'stdio', command: ' npx ', args: '', env: '', url: '', headers: '', ...over });

test('env and header lines become objects; a line without its separator is named', () => {
  assert.deepEqual(parsePairs('A=1\n\n B = two=2 \n', '='), { A: '1', B: 'two=2' });
  assert.deepEqual(parsePairs('Authorization: Bearer x:y', ':'), { Authorization: 'Bearer x:y' });
  assert.throws(() => parsePairs('TOKEN', '='), /“TOKEN”: write NAME=value/);
  assert.throws(() => parsePairs('=x', '='), /write NAME=value/);
});

test('the form gives a stdio or an HTTP entry, empty parts left out', () => {
  assert.deepEqual(entryFrom(form({})), { name: 'files', command: 'npx' });
  assert.deepEqual(entryFrom(form({ args: '-y\n pkg \n', env: 'K=v' })), { name: 'files', command: 'npx', args: ['-y', 'pkg'], env: { K: 'v' } });
  assert.deepEqual(entryFrom(form({ kind: 'http', url: ' https://h/mcp ', headers: 'X: 1', args: 'ignored' })), { name: 'files', url: 'https://h/mcp', headers: { X: '1' } });
});

test('a probe and a server read as one line each, secrets by name only', () => {
  assert.equal(probeText({ name: 'e', reachable: true, serverName: 'srv', serverVersion: '1.2', tools: ['echo', 'add'] }), 'Reachable (srv 1.2) · 2 tools: echo, add');
  assert.equal(probeText({ name: 'e', reachable: true, tools: ['echo'] }), 'Reachable · 1 tool: echo');
  assert.equal(probeText({ name: 'e', reachable: false, tools: [], error: 'the server exited' }), 'Not reachable: the server exited');
  assert.equal(serverText({ name: 'e', scope: 'user', transport: 'stdio', command: 'node', args: ['x.js'], env: [{ name: 'T', set: true }, { name: 'U', set: false }] }), 'node x.js · env: T, U (empty)');
  assert.equal(serverText({ name: 'h', scope: 'config', transport: 'http', url: 'https://h/mcp', headers: [{ name: 'Authorization', set: true }] }), 'https://h/mcp · headers: Authorization');
});
