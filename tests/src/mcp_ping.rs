//! A minimal MCP server, for tests whose server must lie where a confined process may
//! read it (a user's workspace root): server-everything's files are elsewhere.

/// A minimal MCP server over stdio (`initialize`, `tools/list` with one tool `ping`),
/// for a probe that must run inside a user's workspace root.
pub const PING_SERVER: &str = r#"import readline from 'node:readline';
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  const answer = (result) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\n');
  if (m.method === 'initialize') answer({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'ping', version: '1' } });
  else if (m.method === 'tools/list') answer({ tools: [{ name: 'ping', inputSchema: { type: 'object' } }] });
});
"#;
