"""Drives `tandem acp` as an editor would, with the official ACP Python SDK
(`agent-client-protocol` in tests/python-requirements.txt).

Usage: acp_client.py COMMAND URL TOKEN CWD OTHER_CWD

COMMAND is a JSON list: the program and the words that make it `tandem acp`. It spawns
`COMMAND --url URL --token TOKEN` through the SDK's
`spawn_agent_process` and, with the SDK's client-side connection only: initializes;
creates a session in CWD; prompts it with the scripted vendor (text, a tool call shown
and a tool call that fails), allows one permission request and rejects another,
cancels a turn held at `/hold acp-cancel` (the hold is watched through the server's
`GET /debug/holds`), sends a prompt whose turn fails, one with an image and one with
an embedded text file and PDF; creates sessions in CWD and OTHER_CWD and lists CWD's a
page at a time; tries a prompt to a session that does not exist, a session outside
the workspace roots and a method the agent does not have. Then a second `tandem acp`
(another editor) loads the first session, which replays its history, and prompts it
again (a turn that writes a file, shown as a diff) while a third has it open too and
sees that turn. Another, in OTHER_CWD: sets the model and the permission mode (as a
mode and as a config option), creates a scripted Worker through the `worker` option
and tries bad settings; reads a turn's usage; has the session (now a Driver) delegate
to its Worker, whose permission request it allows; closes the session, while a
message comes from the page (REST), and resumes it, then sees the page's next message
live.

It prints one JSON object with what the SDK returned, the updates it received and
what it read off the wire (every update must have parsed into the SDK's models), for
tests/e2e/acp_agent.rs to assert on.
"""

import asyncio
import json
import os
import sys
import urllib.request

from acp import (
    RequestError,
    embedded_blob_resource,
    embedded_text_resource,
    image_block,
    resource_block,
    spawn_agent_process,
    text_block,
)
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CloseSessionResponse,
    DeniedOutcome,
    Implementation,
    RequestPermissionResponse,
)

TIMEOUT_SECONDS = 90

# The start of a PDF (any bytes that are not text do).
PDF = "JVBERi0xLjQKJcOkw7zDtsOfCg=="

# A 1x1 PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Editor:
    """The client side: keeps every update per session and answers permission
    requests with the option of the kind `decision` names."""

    def __init__(self):
        self.updates = {}
        self.parsed = 0
        self.raw = {"messages": 0, "updates": 0, "notJsonRpc": []}
        self.seen = []
        self.methods = {}
        self.asked = []
        self.decision = "allow_once"

    def observe(self, event):
        """Every message `tandem acp` wrote, as the SDK read it off the wire."""
        if event.direction.value != "incoming":
            if "method" in event.message and "id" in event.message:
                self.methods[event.message["id"]] = event.message["method"]
            return
        self.raw["messages"] += 1
        self.seen.append(event.message)
        if event.message.get("jsonrpc") != "2.0":
            self.raw["notJsonRpc"].append(event.message)
        if event.message.get("method") == "session/update":
            self.raw["updates"] += 1

    async def session_update(self, session_id, update, **kwargs):
        self.parsed += 1
        self.updates.setdefault(session_id, []).append(dump(update))

    def wire(self):
        """What went over the wire: every update must have parsed into the SDK's models,
        and every message must validate against the ACP JSON schema (when ACP_SCHEMA
        names the pinned schema.json)."""
        return {**self.raw, "parsedUpdates": self.parsed, **schema_check(self.seen, self.methods)}

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append({"sessionId": session_id, "toolCall": dump(tool_call), "options": [dump(o) for o in options]})
        for option in options:
            if option.kind == self.decision:
                return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def take(self, session_id):
        return self.updates.pop(session_id, [])


# The schema's type of each answer, by the method it answers; of each message the
# agent sends, by its method.
RESULT_TYPES = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
}
PARAM_TYPES = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
}


def schema_check(messages, methods):
    """Validates every message the agent wrote against the ACP JSON schema named by
    ACP_SCHEMA, each by its own type (a result by the method it answers, an error as
    `Error`, a notification's or request's params by its method): how many were
    checked, and the first errors."""
    path = os.environ.get("ACP_SCHEMA")
    if not path:
        return {"schemaChecked": None, "schemaErrors": []}
    import jsonschema

    with open(path) as f:
        root = json.load(f)
    cls = jsonschema.validators.validator_for(root)

    def check(type_name, value):
        schema = {"$ref": f"#/$defs/{type_name}", "$defs": root["$defs"]}
        return jsonschema.exceptions.best_match(cls(schema).iter_errors(value))

    checked = 0
    errors = []
    for message in messages:
        if "method" in message:
            kind = PARAM_TYPES.get(message["method"])
            value = message.get("params")
        elif "error" in message:
            kind, value = "Error", message["error"]
        else:
            kind = RESULT_TYPES.get(methods.get(message.get("id")))
            value = message.get("result")
        if kind is None:
            errors.append({"message": json.dumps(message)[:500], "error": "no schema type for it"})
            continue
        checked += 1
        error = check(kind, value)
        if error is not None and len(errors) < 5:
            errors.append({"message": json.dumps(message)[:500], "error": f"{kind}: {error.message[:500]}"})
    return {"schemaChecked": checked, "schemaErrors": errors}


def summary(updates):
    """The parts of a run of updates the test reads."""
    text = "".join(
        u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    users = [u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "user_message_chunk"]
    calls = [
        {k: u.get(k) for k in ("toolCallId", "kind", "title", "status")}
        for u in updates
        if u["sessionUpdate"] == "tool_call"
    ]
    results = [
        {
            "toolCallId": u.get("toolCallId"),
            "status": u.get("status"),
            "text": "".join(c.get("content", {}).get("text", "") for c in u.get("content") or []),
        }
        for u in updates
        if u["sessionUpdate"] == "tool_call_update"
    ]
    kinds = sorted({u["sessionUpdate"] for u in updates})
    diffs = [
        c
        for u in updates
        if u["sessionUpdate"] == "tool_call"
        for c in u.get("content") or []
        if c.get("type") == "diff"
    ]
    return {"text": text, "users": users, "toolCalls": calls, "toolResults": results, "kinds": kinds, "diffs": diffs}


def refusal(e):
    return {"code": e.code, "message": str(e), "data": e.data}


async def held(url, token, name):
    """Waits until a turn of the server waits at `/hold NAME`."""
    req = urllib.request.Request(f"{url}/debug/holds", headers={"Authorization": f"Bearer {token}"})
    for _ in range(600):
        holds = json.loads(await asyncio.to_thread(lambda: urllib.request.urlopen(req).read()))
        if any(h["name"] == name for h in holds["holds"]):
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no turn reached /hold {name}")


async def initialize(conn):
    init = await conn.initialize(
        protocol_version=1,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="acp-sdk-test", version="0"),
    )
    return dump(init)


async def prompt(conn, editor, session_id, *blocks):
    editor.take(session_id)
    try:
        answer = await conn.prompt(session_id=session_id, prompt=list(blocks))
        out = {"stopReason": answer.stop_reason}
    except RequestError as e:
        out = {"error": refusal(e)}
    out.update(summary(editor.take(session_id)))
    return out


async def first_editor(command, url, token, cwd, other_cwd):
    out = {}
    editor = Editor()
    args = [*command[1:], "--url", url, "--token", token, "--list-page", "2"]
    async with spawn_agent_process(
        editor, command[0], *args, transport_kwargs={"stderr": None}, observers=[editor.observe]
    ) as (conn, _proc):
        out["initialize"] = await initialize(conn)
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        out["sessionId"] = sid

        out["reply"] = await prompt(
            conn,
            editor,
            sid,
            text_block(
                'hello from the SDK\n/show Read {"file_path": "/tmp/a.txt"}\n/tool close_partner {}\n'
                "/think pondering\n"
                '/plan [{"content": "step one", "status": "in_progress", "priority": "high"}]'
            ),
        )

        editor.decision = "allow_once"
        out["allowed"] = await prompt(conn, editor, sid, text_block('/ask Bash {"command": "ls"}'))
        editor.decision = "reject_once"
        out["denied"] = await prompt(conn, editor, sid, text_block('/ask Bash {"command": "rm -rf x"}'))
        out["asked"] = editor.asked

        editor.take(sid)
        running = asyncio.create_task(
            conn.prompt(session_id=sid, prompt=[text_block("before\n/hold acp-cancel\nafter")])
        )
        await held(url, token, "acp-cancel")
        await conn.cancel(session_id=sid)
        out["cancelled"] = {"stopReason": (await running).stop_reason, **summary(editor.take(sid))}

        out["failed"] = await prompt(conn, editor, sid, text_block("/fail boom"))
        out["image"] = await prompt(conn, editor, sid, text_block("look"), image_block(PNG, "image/png"))
        # Embedded resources: a text file and a PDF, as attachments.
        out["embedded"] = await prompt(
            conn,
            editor,
            sid,
            text_block("read these"),
            resource_block(embedded_text_resource("file:///w/notes.md", "a note from the editor")),
            resource_block(embedded_blob_resource("file:///w/spec.pdf", PDF, mime_type="application/pdf")),
        )

        # More sessions: two more in CWD, one elsewhere; CWD's listed two a page.
        created = [(await conn.new_session(cwd=cwd, mcp_servers=[])).session_id for _ in range(2)]
        elsewhere = (await conn.new_session(cwd=other_cwd, mcp_servers=[])).session_id
        pages = []
        cursor = None
        while True:
            page = await conn.list_sessions(cwd=cwd, cursor=cursor)
            pages.append([dump(s) for s in page.sessions])
            cursor = page.next_cursor
            if cursor is None:
                break
        everything = await conn.list_sessions()
        out["list"] = {
            "created": [sid, *created],
            "elsewhere": elsewhere,
            "pages": pages,
            "firstPageAll": [s.session_id for s in everything.sessions],
        }

        out["bad"] = {}
        for what, call in [
            ("unknownSession", lambda: conn.prompt(session_id="ses_nope", prompt=[text_block("hi")])),
            ("outsideRoots", lambda: conn.new_session(cwd="/", mcp_servers=[])),
            ("unknownMethod", lambda: conn.ext_method("tandem/nope", {})),
            ("loadUnknown", lambda: conn.load_session(cwd=cwd, session_id="ses_nope", mcp_servers=[])),
        ]:
            try:
                await call()
                out["bad"][what] = None
            except RequestError as e:
                out["bad"][what] = refusal(e)
        # The connection is still good after every refusal.
        out["afterBad"] = await prompt(conn, editor, sid, text_block("still here"))
    out["wire"] = editor.wire()
    return out


async def second_editor(command, url, token, cwd, session_id):
    """Loads the first editor's session, with a third editor open on it at the same
    time: both see the next turn (its text and an edit as a diff)."""
    out = {}
    editor = Editor()
    watcher = Editor()
    args = [*command[1:], "--url", url, "--token", token]
    async with spawn_agent_process(
        editor, command[0], *args, transport_kwargs={"stderr": None}, observers=[editor.observe]
    ) as (conn, _proc), spawn_agent_process(
        watcher, command[0], *args, transport_kwargs={"stderr": None}, observers=[watcher.observe]
    ) as (other, _other_proc):
        await initialize(conn)
        await initialize(other)
        loaded = await conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[])
        out["loadAnswer"] = dump(loaded) if loaded is not None else None
        out["replay"] = summary(editor.take(session_id))
        await other.load_session(cwd=cwd, session_id=session_id, mcp_servers=[])
        watcher.take(session_id)
        out["next"] = await prompt(
            conn, editor, session_id, text_block("after the load\n/write acp-notes.txt from the editor")
        )

        def watched():
            return summary(watcher.updates.get(session_id, []))

        await until(
            lambda: watched()["text"] == out["next"]["text"] and watched()["diffs"] and watched()["toolResults"],
            "the other editor to see the turn",
        )
        out["watcher"] = watched()
    out["wire"] = editor.wire()
    out["watcherWire"] = watcher.wire()
    return out


async def until(check, what):
    """Waits until `check()` holds (updates arrive on their own)."""
    for _ in range(400):
        if check():
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def kinds_of(updates):
    return [u["sessionUpdate"] for u in updates]


def post_message(url, token, session_id, text):
    """Sends a message as the page would, over REST."""
    body = json.dumps({"content": text}).encode()
    req = urllib.request.Request(
        f"{url}/api/v1/sessions/{session_id}/messages",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    return json.loads(urllib.request.urlopen(req).read())


async def third_editor(command, url, token, cwd):
    """Settings (modes and config options), usage, a Driver's delegation, resume and
    close, and a message sent from the page."""
    out = {}
    editor = Editor()
    args = [*command[1:], "--url", url, "--token", token]
    async with spawn_agent_process(
        editor, command[0], *args, transport_kwargs={"stderr": None}, observers=[editor.observe]
    ) as (conn, _proc):
        out["initialize"] = await initialize(conn)
        new = await conn.new_session(cwd=cwd, mcp_servers=[])
        sid = new.session_id
        out["sessionId"] = sid
        out["new"] = dump(new)

        # Settings: a model, a mode, then the mode back through its config option;
        # each change is told as updates too.
        editor.take(sid)
        out["setModel"] = dump(await conn.set_config_option(config_id="model", session_id=sid, value="scripted-1"))
        answer = await conn.set_session_mode(session_id=sid, mode_id="acceptEdits")
        out["setMode"] = dump(answer) if answer is not None else None
        await until(lambda: kinds_of(editor.updates.get(sid, [])).count("current_mode_update") >= 2, "mode updates")
        out["settingsUpdates"] = editor.take(sid)
        out["setModeBack"] = dump(await conn.set_config_option(config_id="mode", session_id=sid, value="default"))
        await until(lambda: "current_mode_update" in kinds_of(editor.updates.get(sid, [])), "the mode back")
        editor.take(sid)
        # The Worker: where it will work, then one created (the pair is told too).
        out["setWorkspace"] = dump(
            await conn.set_config_option(config_id="workerWorkspace", session_id=sid, value="shared")
        )
        out["setWorker"] = dump(await conn.set_config_option(config_id="worker", session_id=sid, value="scripted"))
        def worker_told():
            return [
                u
                for u in editor.updates.get(sid, [])
                if u["sessionUpdate"] == "config_option_update"
                and any(o["id"] == "worker" and o["currentValue"] == "scripted" for o in u["configOptions"])
            ]

        await until(worker_told, "the Worker told")
        out["workerTold"] = worker_told()[-1]
        editor.take(sid)
        out["badSettings"] = {}
        for what, call in [
            ("unknownOption", lambda: conn.set_config_option(config_id="colour", session_id=sid, value="red")),
            ("unknownValue", lambda: conn.set_config_option(config_id="model", session_id=sid, value="gpt-0")),
            ("booleanValue", lambda: conn.set_config_option(config_id="mode", session_id=sid, value=True)),
            ("unknownMode", lambda: conn.set_session_mode(session_id=sid, mode_id="yolo")),
            (
                "workspaceFixed",
                lambda: conn.set_config_option(config_id="workerWorkspace", session_id=sid, value="worktree"),
            ),
            ("unknownSession", lambda: conn.set_session_mode(session_id="ses_nope", mode_id="plan")),
            ("closeUnknown", lambda: conn.close_session(session_id="ses_nope")),
            ("resumeUnknown", lambda: conn.resume_session(session_id="ses_nope", cwd=cwd)),
        ]:
            try:
                await call()
                out["badSettings"][what] = None
            except RequestError as e:
                out["badSettings"][what] = refusal(e)

        # Usage: the turn's tokens answer the prompt; its context window is an update.
        usage = {
            "inputTokens": 30,
            "cachedInputTokens": 4,
            "outputTokens": 9,
            "context": {"used": 34, "size": 1000},
            "sessionCost": {"amount": 0.5, "currency": "USD"},
        }
        editor.take(sid)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("counted\n/usage " + json.dumps(usage))])
        out["usage"] = {
            "answer": dump(answer),
            "updates": [u for u in editor.take(sid) if u["sessionUpdate"] == "usage_update"],
        }

        # A Driver delegates to a Worker: the Worker's progress shows in the Driver's
        # send_to_partner call, and its permission request is asked here.
        worker_script = 'worker says hi\n/ask Bash {"command": "ls"}\n/show Read {"file_path": "/tmp/w.txt"}'
        delegate = json.dumps({"message": worker_script, "workerVendor": "scripted"})
        editor.decision = "allow_once"
        editor.asked.clear()
        answer = await conn.prompt(session_id=sid, prompt=[text_block("/tool send_to_partner " + delegate)])
        updates = editor.take(sid)
        out["delegation"] = {
            "stopReason": answer.stop_reason,
            "updates": [u for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")],
            "asked": list(editor.asked),
        }
        listed = await conn.list_sessions(cwd=cwd)
        out["delegation"]["listed"] = [s.session_id for s in listed.sessions]

        # Close: the session is no longer followed; a message from the page is not
        # seen. Resume: followed again without a replay; the next message from the
        # page is seen live, and a prompt works.
        out["close"] = dump(await conn.close_session(session_id=sid) or CloseSessionResponse())
        editor.take(sid)
        post_message(url, token, sid, "while closed")
        await asyncio.sleep(1)
        out["whileClosed"] = editor.take(sid)
        resumed = await conn.resume_session(session_id=sid, cwd=cwd)
        out["resume"] = dump(resumed)
        await asyncio.sleep(0.5)
        out["afterResume"] = editor.take(sid)
        post_message(url, token, sid, "from the page")
        await until(
            lambda: "from the page" in summary(editor.updates.get(sid, []))["text"], "the page's message"
        )
        out["fromPage"] = summary(editor.take(sid))
        out["afterResumePrompt"] = await prompt(conn, editor, sid, text_block("resumed"))
    out["wire"] = editor.wire()
    return out


async def main():
    command, url, token, cwd, other_cwd = sys.argv[1:6]
    command = json.loads(command)
    first = await first_editor(command, url, token, cwd, other_cwd)
    second = await second_editor(command, url, token, cwd, first["sessionId"])
    third = await third_editor(command, url, token, other_cwd)
    print(json.dumps({**first, "load": second, "more": third}))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(), TIMEOUT_SECONDS))
