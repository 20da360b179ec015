// Drives `tandem acp` as an editor would, with the official ACP TypeScript SDK
// (`@agentclientprotocol/sdk`, pinned in .ci/run and installed in .vendor-clis), through
// its client-side connection (`client(...).connectWith(ndJsonStream(...))`), whose
// zod schemas check every message `tandem acp` writes.
//
// Usage: node acp_client.mjs SDK_DIR COMMAND URL TOKEN CWD
//
// COMMAND is a JSON list: the program and the words that make it `tandem acp`. It
// spawns `COMMAND --url URL --token TOKEN`, initializes, creates a session in CWD, lists
// its config options, prompts it with the scripted vendor (text streamed back, a tool
// call, a permission request it allows), sets a config option, tries a prompt to a
// session that does not exist and prompts again. It prints one JSON object with what
// the SDK returned and the updates it received, for tests/e2e/acp_agent.rs.

import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const TIMEOUT_MS = 60_000;

const [sdkDir, commandJson, url, token, cwd] = process.argv.slice(2);
// A file URL: the test runs from the repository, not from where the SDK is installed.
const acp = await import(pathToFileURL(join(sdkDir, "dist/v1/stable/acp.js")).href);
const command = JSON.parse(commandJson);

const timer = setTimeout(() => {
  console.error("acp_client.mjs: timed out");
  process.exit(2);
}, TIMEOUT_MS);

const agentProcess = spawn(command[0], [...command.slice(1), "--url", url, "--token", token], {
  stdio: ["pipe", "pipe", "inherit"],
});

const updates = [];
const asked = [];
const editor = acp
  .client({ name: "acp-ts-sdk-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

function take(sessionId) {
  const mine = updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
  updates.length = 0;
  return mine;
}

function summary(list) {
  return {
    text: list
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content.text)
      .join(""),
    kinds: [...new Set(list.map((u) => u.sessionUpdate))].sort(),
    toolCalls: list
      .filter((u) => u.sessionUpdate === "tool_call")
      .map((u) => ({ toolCallId: u.toolCallId, title: u.title, kind: u.kind })),
  };
}

// Notifications are handled in the order they came, so one round trip after a
// prompt's answer every update of its turn was handled.
async function settle() {
  await new Promise((resolve) => setTimeout(resolve, 50));
}

const stream = acp.ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));
const out = await editor.connectWith(stream, async (ctx) => {
  const result = {};
  result.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "acp-ts-sdk-test", version: "0" },
  });
  const created = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const sessionId = created.sessionId;
  result.session = created;

  const answer = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [
      {
        type: "text",
        text: 'hello from TypeScript\n/show Read {"file_path": "/tmp/ts.txt"}\n/ask Bash {"command": "ls"}',
      },
    ],
  });
  await settle();
  result.reply = { stopReason: answer.stopReason, ...summary(take(sessionId)) };
  result.asked = asked;

  result.setEffort = await ctx.request(acp.methods.agent.session.setConfigOption, {
    sessionId,
    configId: "effort",
    value: "low",
  });

  try {
    await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: "ses_nope",
      prompt: [{ type: "text", text: "hi" }],
    });
    result.unknownSession = null;
  } catch (e) {
    result.unknownSession = { code: e.code, message: e.message };
  }
  const again = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "still here" }],
  });
  await settle();
  result.again = { stopReason: again.stopReason, ...summary(take(sessionId)) };
  return result;
});

agentProcess.stdin.end();
clearTimeout(timer);
console.log(JSON.stringify(out));
process.exit(0);
