// Drives `tandem acp` as an editor would, with the official ACP TypeScript SDK
// (`@agentclientprotocol/sdk`, pinned in .ci/run and installed in .vendor-clis), through
// its client-side connection (`client(...).connectWith(ndJsonStream(...))`, the 2.x
// SDK's successor of `ClientSideConnection`), whose zod schemas parse every
// `session/update` and `session/request_permission` before its handlers see them. It
// covers what tests/python/acp_client.py covers with the Python SDK.
//
// Usage: node acp_client.mjs SDK_DIR COMMAND URL TOKEN CWD OTHER_CWD
//
// COMMAND is a JSON list: the program and the words that make it `tandem acp`. The
// script spawns `COMMAND --url URL --token TOKEN` itself and taps both of its pipes, so
// it reports every line `tandem acp` wrote (and every line sent to it) as it went over
// the wire, for the test to validate against the ACP JSON schema.
//
// A first editor (with `--list-page 2`) initializes; creates a session in CWD; prompts
// it with the scripted vendor (text, a tool call shown and a tool call that fails),
// allows one permission request and rejects another, cancels a turn held at
// `/hold acp-ts-cancel` (the hold is watched through the server's `GET /debug/holds`),
// sends a prompt whose turn fails, and one with an image; creates sessions in CWD and
// OTHER_CWD and lists CWD's a page at a time; tries a prompt to a session that does
// not exist, a session outside the workspace roots, a method the agent does not have
// (a raw request) and a load of a session that does not exist. A second `tandem acp`
// (another editor) loads the first session, which replays its history, and prompts it
// again. A third, in OTHER_CWD: sets the model and the permission mode (as a mode and
// as a config option), creates a scripted Worker through the `worker` option and tries
// bad settings; reads a turn's usage; has the session (now a Driver) delegate to its
// Worker, whose permission request it allows; closes the session while a message comes
// from the page (REST), resumes it, then sees the page's next message live.
//
// It prints one JSON object with what the SDK returned, the updates it received and
// what went over the wire, for tests/e2e/acp_agent.rs to assert on. On any failure it
// says which step failed on stderr and exits non-zero; it gives up after 90 s.

import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const TIMEOUT_MS = 90_000;
// How long one wait for a state (an update, a hold, a turn's end) may take.
const WAIT_MS = 30_000;

// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const [sdkDir, commandJson, url, token, cwd, otherCwd] = process.argv.slice(2);
if (!otherCwd) {
  console.error("usage: node acp_client.mjs SDK_DIR COMMAND URL TOKEN CWD OTHER_CWD");
  process.exit(2);
}
// A file URL: the test runs from the repository, not from where the SDK is installed.
const acp = await import(pathToFileURL(join(sdkDir, "dist/v1/stable/acp.js")).href);
const command = JSON.parse(commandJson);

// What the script is doing, for the failure message.
let step = "start";
const children = new Set();

function fail(message) {
  console.error(`acp_client.mjs: ${step}: ${message}`);
  for (const child of children) {
    child.kill();
  }
  process.exit(1);
}

const timer = setTimeout(() => fail(`timed out after ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check()` holds (polled: updates and the server's state change on
 * their own), at most WAIT_MS. */
async function until(check, what) {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    if (await check()) {
      return;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await sleep(10);
  }
}

/** One direction of a pipe, split into lines as they pass. */
class Lines {
  constructor(onLine) {
    this.decoder = new TextDecoder();
    this.rest = "";
    this.onLine = onLine;
  }

  push(chunk) {
    this.rest += this.decoder.decode(chunk, { stream: true });
    let at;
    while ((at = this.rest.indexOf("\n")) >= 0) {
      const line = this.rest.slice(0, at);
      this.rest = this.rest.slice(at + 1);
      if (line.trim() !== "") {
        this.onLine(line);
      }
    }
  }
}

/** What went over the wire between the SDK and `tandem acp`, tapped below the SDK. */
class Wire {
  constructor() {
    // Every line `tandem acp` wrote, as it wrote it; every line the SDK sent it.
    this.received = [];
    this.sent = [];
    this.messages = 0;
    this.updates = 0;
    this.notJsonRpc = [];
    this.fromAgent = new Lines((line) => this.receive(line));
    this.toAgent = new Lines((line) => this.sent.push(line));
  }

  receive(line) {
    this.received.push(line);
    this.messages += 1;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      this.notJsonRpc.push(line);
      return;
    }
    if (message === null || typeof message !== "object" || message.jsonrpc !== "2.0") {
      this.notJsonRpc.push(line);
      return;
    }
    if (message.method === "session/update") {
      this.updates += 1;
    }
  }

  /** The answer `tandem acp` wrote to the last request of `method` whose params
   * `matches`: what the SDK hides where it turns an error into a result. */
  answerTo(method, matches) {
    const sent = this.sent
      .map((line) => JSON.parse(line))
      .filter((m) => m.method === method && "id" in m && matches(m.params ?? {}));
    const id = sent.at(-1)?.id;
    return this.received.map((line) => JSON.parse(line)).find((m) => !("method" in m) && m.id === id);
  }
}

/** The client side: keeps every update per session and answers permission requests
 * with the option of the kind `decision` names. */
class Editor {
  constructor() {
    this.updates = new Map();
    this.parsed = 0;
    this.asked = [];
    this.decision = "allow_once";
    this.wire = new Wire();
  }

  take(sessionId) {
    const mine = this.updates.get(sessionId) ?? [];
    this.updates.delete(sessionId);
    return mine;
  }

  peek(sessionId) {
    return this.updates.get(sessionId) ?? [];
  }

  /** Waits until every `session/update` that came over the wire so far reached the
   * SDK's handler (parsed by its schemas): after a request's answer, every update
   * `tandem acp` wrote before it. */
  async settle() {
    const want = this.wire.updates;
    await until(() => this.parsed >= want, `the SDK to hand over ${want} updates (it has ${this.parsed})`);
  }

  /** The wire's counts, and its lines for the schema check. */
  report(exit) {
    const { received, sent, messages, updates, notJsonRpc } = this.wire;
    return { messages, updates, parsedUpdates: this.parsed, notJsonRpc, received, sent, exit };
  }
}

/** Runs `body(ctx, editor)` with a `tandem acp` of its own (`extra` added to its
 * arguments) through the SDK's client-side connection; returns what `body` returned
 * and the wire's report. */
async function withEditor(extra, body) {
  const editor = new Editor();
  const child = spawn(command[0], [...command.slice(1), "--url", url, "--token", token, ...extra], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.add(child);
  const exited = new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
  const tap = (lines) =>
    new TransformStream({
      transform(chunk, controller) {
        lines.push(chunk);
        controller.enqueue(chunk);
      },
    });
  const toAgent = tap(editor.wire.toAgent);
  toAgent.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  const fromAgent = Readable.toWeb(child.stdout).pipeThrough(tap(editor.wire.fromAgent));

  const app = acp
    .client({ name: "acp-ts-sdk-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      editor.parsed += 1;
      const list = editor.updates.get(params.sessionId) ?? [];
      list.push(params.update);
      editor.updates.set(params.sessionId, list);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      editor.asked.push(params);
      const option = params.options.find((o) => o.kind === editor.decision);
      return option
        ? { outcome: { outcome: "selected", optionId: option.optionId } }
        : { outcome: { outcome: "cancelled" } };
    });
  const out = await app.connectWith(acp.ndJsonStream(toAgent.writable, fromAgent), (ctx) => body(ctx, editor));
  // The editor goes (every request of `body` was answered, so all it sent was
  // written): stdin closes and `tandem acp` exits.
  child.stdin.end();
  const exit = await exited;
  children.delete(child);
  return { out, wire: editor.report(exit) };
}

/** The parts of a run of updates the test reads. */
function summary(list) {
  const byKind = {};
  for (const u of list) {
    byKind[u.sessionUpdate] = (byKind[u.sessionUpdate] ?? 0) + 1;
  }
  return {
    text: list
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content.text ?? "")
      .join(""),
    users: list.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text ?? ""),
    toolCalls: list
      .filter((u) => u.sessionUpdate === "tool_call")
      .map((u) => ({
        toolCallId: u.toolCallId ?? null,
        kind: u.kind ?? null,
        title: u.title ?? null,
        status: u.status ?? null,
      })),
    toolResults: list
      .filter((u) => u.sessionUpdate === "tool_call_update")
      .map((u) => ({
        toolCallId: u.toolCallId ?? null,
        status: u.status ?? null,
        text: (u.content ?? []).map((c) => c.content?.text ?? "").join(""),
      })),
    kinds: Object.keys(byKind).sort(),
    count: list.length,
    byKind,
  };
}

function refusal(e) {
  if (!(e instanceof acp.RequestError)) {
    throw e;
  }
  return { code: e.code, message: e.message, data: e.data ?? null };
}

/** Each call of `calls` (name → thunk): null when it succeeded, else its error. */
async function refusals(calls) {
  const out = {};
  for (const [what, call] of Object.entries(calls)) {
    step = `bad request ${what}`;
    try {
      await call();
      out[what] = null;
    } catch (e) {
      out[what] = refusal(e);
    }
  }
  return out;
}

function text(t) {
  return { type: "text", text: t };
}

async function initialize(ctx) {
  step = "initialize";
  return ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "acp-ts-sdk-test", version: "0" },
  });
}

async function newSession(ctx, dir) {
  step = `session/new in ${dir}`;
  return ctx.request(acp.methods.agent.session.new, { cwd: dir, mcpServers: [] });
}

/** Prompts `sessionId` with `blocks`: the answer (or its error) and the updates of
 * its turn. */
async function prompt(ctx, editor, sessionId, ...blocks) {
  step = `session/prompt ${JSON.stringify(blocks).slice(0, 80)}`;
  editor.take(sessionId);
  let out;
  try {
    const answer = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: blocks });
    out = { stopReason: answer.stopReason };
  } catch (e) {
    out = { error: refusal(e) };
  }
  await editor.settle();
  return { ...out, ...summary(editor.take(sessionId)) };
}

/** The server's REST API, as the page uses it. */
async function rest(method, path, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) {
    throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  }
  return answer;
}

/** Waits until a turn of the server waits at `/hold NAME`. */
async function held(name) {
  await until(async () => {
    const { holds } = await rest("GET", "/debug/holds");
    return holds.some((h) => h.name === name);
  }, `a turn at /hold ${name}`);
}

/** Waits until the server recorded the end of turn `turnId` of `sessionId`. */
async function turnEnded(sessionId, turnId) {
  await until(async () => {
    const { events } = await rest("GET", `/api/v1/sessions/${sessionId}/events?after=0&limit=5000`);
    return events.some((e) => e.kind === "turn_completed" && e.turnId === turnId);
  }, `the end of turn ${turnId}`);
}

async function firstEditor() {
  return withEditor(["--list-page", "2"], async (ctx, editor) => {
    const out = {};
    out.initialize = await initialize(ctx);
    const sid = (await newSession(ctx, cwd)).sessionId;
    out.sessionId = sid;

    out.reply = await prompt(
      ctx,
      editor,
      sid,
      text('hello from TypeScript\n/show Read {"file_path": "/tmp/ts.txt"}\n/tool close_partner {}'),
    );

    editor.decision = "allow_once";
    out.allowed = await prompt(ctx, editor, sid, text('/ask Bash {"command": "ls"}'));
    editor.decision = "reject_once";
    out.denied = await prompt(ctx, editor, sid, text('/ask Bash {"command": "rm -rf x"}'));
    out.asked = [...editor.asked];

    // A turn held at /hold: cancelled once the server says it waits there.
    step = "session/cancel";
    editor.take(sid);
    const running = ctx.request(acp.methods.agent.session.prompt, {
      sessionId: sid,
      prompt: [text("before\n/hold acp-ts-cancel\nafter")],
    });
    await held("acp-ts-cancel");
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: sid });
    const stopped = await running;
    await editor.settle();
    out.cancelled = { stopReason: stopped.stopReason, ...summary(editor.take(sid)) };

    out.failed = await prompt(ctx, editor, sid, text("/fail boom"));
    out.image = await prompt(ctx, editor, sid, text("look"), { type: "image", data: PNG, mimeType: "image/png" });

    // More sessions: two more in CWD, one elsewhere; CWD's listed two a page.
    const created = [(await newSession(ctx, cwd)).sessionId, (await newSession(ctx, cwd)).sessionId];
    const elsewhere = (await newSession(ctx, otherCwd)).sessionId;
    step = "session/list";
    const pages = [];
    let cursor;
    for (;;) {
      const page = await ctx.request(acp.methods.agent.session.list, cursor ? { cwd, cursor } : { cwd });
      pages.push(page.sessions);
      cursor = page.nextCursor ?? undefined;
      if (!cursor || pages.length > 10) {
        break;
      }
    }
    const everything = await ctx.request(acp.methods.agent.session.list, {});
    out.list = {
      created: [sid, ...created],
      elsewhere,
      pages,
      firstPageAll: everything.sessions.map((s) => s.sessionId),
      firstPageAllNext: everything.nextCursor ?? null,
    };

    out.bad = await refusals({
      unknownSession: () =>
        ctx.request(acp.methods.agent.session.prompt, { sessionId: "ses_nope", prompt: [text("hi")] }),
      outsideRoots: () => ctx.request(acp.methods.agent.session.new, { cwd: "/", mcpServers: [] }),
      // A raw request: the SDK sends any method name.
      unknownMethod: () => ctx.request("tandem/nope", {}),
      loadUnknown: () =>
        ctx.request(acp.methods.agent.session.load, { cwd, sessionId: "ses_nope", mcpServers: [] }),
    });
    // The connection is still good after every refusal.
    out.afterBad = await prompt(ctx, editor, sid, text("still here"));
    step = "first editor: closing";
    return out;
  });
}

async function secondEditor(sessionId) {
  return withEditor([], async (ctx, editor) => {
    const out = {};
    await initialize(ctx);
    step = "session/load";
    const loaded = await ctx.request(acp.methods.agent.session.load, { cwd, sessionId, mcpServers: [] });
    await editor.settle();
    out.loadAnswer = loaded ?? null;
    out.replay = summary(editor.take(sessionId));
    out.next = await prompt(ctx, editor, sessionId, text("after the load"));
    step = "second editor: closing";
    return out;
  });
}

const kindsOf = (list) => list.map((u) => u.sessionUpdate);

/** Settings (modes and config options), usage, a Driver's delegation, resume and
 * close, and a message sent from the page. */
async function thirdEditor() {
  return withEditor([], async (ctx, editor) => {
    const out = {};
    out.initialize = await initialize(ctx);
    const created = await newSession(ctx, otherCwd);
    const sid = created.sessionId;
    out.sessionId = sid;
    out.new = created;
    const setOption = (configId, value) =>
      ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: sid, configId, value });

    // Settings: a model, a mode, then the mode back through its config option; each
    // change is told as updates too.
    step = "settings";
    editor.take(sid);
    out.setModel = await setOption("model", "scripted-1");
    out.setMode = (await ctx.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "acceptEdits" })) ?? null;
    await until(() => kindsOf(editor.peek(sid)).filter((k) => k === "current_mode_update").length >= 2, "mode updates");
    out.settingsUpdates = editor.take(sid);
    out.setModeBack = await setOption("mode", "default");
    await until(() => kindsOf(editor.peek(sid)).includes("current_mode_update"), "the mode back");
    editor.take(sid);

    // The Worker: where it will work, then one created (the pair is told too).
    step = "the Worker";
    out.setWorkspace = await setOption("workerWorkspace", "shared");
    out.setWorker = await setOption("worker", "scripted");
    const workerTold = () =>
      editor
        .peek(sid)
        .filter(
          (u) =>
            u.sessionUpdate === "config_option_update" &&
            u.configOptions.some((o) => o.id === "worker" && o.currentValue === "scripted"),
        );
    await until(() => workerTold().length > 0, "the Worker told");
    out.workerTold = workerTold().at(-1);
    editor.take(sid);

    out.badSettings = await refusals({
      unknownOption: () => setOption("colour", "red"),
      unknownValue: () => setOption("model", "gpt-0"),
      booleanValue: () => setOption("mode", true),
      unknownMode: () => ctx.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "yolo" }),
      workspaceFixed: () => setOption("workerWorkspace", "worktree"),
      unknownSession: () => ctx.request(acp.methods.agent.session.setMode, { sessionId: "ses_nope", modeId: "plan" }),
      closeUnknown: () => ctx.request(acp.methods.agent.session.close, { sessionId: "ses_nope" }),
      resumeUnknown: () => ctx.request(acp.methods.agent.session.resume, { sessionId: "ses_nope", cwd: otherCwd }),
    });
    // The SDK takes -32002 to session/close as "already closed" and resolves it (its
    // documented idempotence): what `tandem acp` answered is read off the wire.
    out.closeUnknownSdk = out.badSettings.closeUnknown;
    const closeAnswer = editor.wire.answerTo("session/close", (p) => p.sessionId === "ses_nope");
    out.badSettings.closeUnknown = closeAnswer?.error
      ? { code: closeAnswer.error.code, message: closeAnswer.error.message, data: closeAnswer.error.data ?? null }
      : null;

    // Usage: the turn's tokens answer the prompt; its context window is an update.
    step = "usage";
    const usage = {
      inputTokens: 30,
      cachedInputTokens: 4,
      outputTokens: 9,
      context: { used: 34, size: 1000 },
      sessionCost: { amount: 0.5, currency: "USD" },
    };
    editor.take(sid);
    const counted = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: sid,
      prompt: [text(`counted\n/usage ${JSON.stringify(usage)}`)],
    });
    await editor.settle();
    out.usage = {
      answer: counted,
      updates: editor.take(sid).filter((u) => u.sessionUpdate === "usage_update"),
    };

    // A Driver delegates to a Worker: the Worker's progress shows in the Driver's
    // send_to_partner call, and its permission request is asked here.
    step = "delegation";
    const workerScript = 'worker says hi\n/ask Bash {"command": "ls"}\n/show Read {"file_path": "/tmp/w.txt"}';
    const delegate = JSON.stringify({ message: workerScript, workerVendor: "scripted" });
    editor.decision = "allow_once";
    editor.asked.length = 0;
    editor.take(sid);
    const delegated = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: sid,
      prompt: [text(`/tool send_to_partner ${delegate}`)],
    });
    await editor.settle();
    const updates = editor.take(sid);
    out.delegation = {
      stopReason: delegated.stopReason,
      updates: updates.filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update"),
      asked: [...editor.asked],
    };
    const listed = await ctx.request(acp.methods.agent.session.list, { cwd: otherCwd });
    out.delegation.listed = listed.sessions.map((s) => s.sessionId);

    // Close: the session is no longer followed, so a message from the page is not
    // seen. Resume: followed again without a replay; the page's next message is seen
    // live, and a prompt works. No window is waited out: the page's first message's
    // turn has ended on the server before the session is resumed and the second is
    // sent, so were the first told here at all (while closed, or replayed by the
    // resume), it would come before the second's updates, which are waited for.
    step = "session/close";
    out.close = await ctx.request(acp.methods.agent.session.close, { sessionId: sid });
    await editor.settle();
    editor.take(sid);
    step = "a message from the page while closed";
    const whileClosed = await rest("POST", `/api/v1/sessions/${sid}/messages`, { content: "while closed" });
    await turnEnded(sid, whileClosed.turnId);
    out.whileClosed = editor.take(sid);
    step = "session/resume";
    out.resume = await ctx.request(acp.methods.agent.session.resume, { sessionId: sid, cwd: otherCwd });
    await editor.settle();
    out.afterResume = editor.take(sid);
    step = "a message from the page, live";
    const fromPage = await rest("POST", `/api/v1/sessions/${sid}/messages`, { content: "from the page" });
    await until(() => summary(editor.peek(sid)).text.includes("from the page"), "the page's message");
    out.fromPage = summary(editor.take(sid));
    await turnEnded(sid, fromPage.turnId);
    out.afterResumePrompt = await prompt(ctx, editor, sid, text("resumed"));
    step = "third editor: closing";
    return out;
  });
}

try {
  const first = await firstEditor();
  const second = await secondEditor(first.out.sessionId);
  const third = await thirdEditor();
  clearTimeout(timer);
  const result = {
    ...first.out,
    wire: first.wire,
    load: { ...second.out, wire: second.wire },
    more: { ...third.out, wire: third.wire },
  };
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
} catch (e) {
  fail(e?.stack ?? String(e));
}
