"""Drives tandem's /mcp with the official MCP Python SDK (tests/python-requirements.txt).

Usage: TANDEM_MCP_TOKEN=... mcp_client.py URL MODE, MODE one of
  legacy    ClientSession.initialize(): the handshake, at the SDK's newest handshake revision
  discover  ClientSession.discover(): `server/discover`, then the stateless revision
  auto      Client(mode="auto"), the SDK's default: it probes `server/discover` and falls
            back to `initialize` only if that fails
  pinned    Client(mode="2026-07-28"): stateless from the first request, no probe at all

In each mode it lists the tools, calls `close_partner` (refused: the session has no
Worker), calls `send_to_partner` (the scripted Worker echoes the message), and lists
the tools again (the session is a Driver now). It prints one JSON object with what the
SDK returned and what went over the wire (each POST's JSON-RPC method and its
`MCP-Protocol-Version` header), for tests/e2e/mcp_sdk.rs to assert on. It uses the
SDK's public client API only; httpx2 (the SDK's HTTP client) carries the token and
records the requests.
"""

import json
import os
import sys

import anyio
import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

TIMEOUT_SECONDS = 60


def tool_result(result):
    """The parts of a CallToolResult the test reads."""
    return {"isError": bool(result.is_error), "structured": result.structured_content}


def listed(result):
    """Tool names and whether each input schema is an object schema."""
    return {
        "names": [t.name for t in result.tools],
        "objectSchemas": all(t.input_schema.get("type") == "object" for t in result.tools),
    }


async def exercise(client):
    """The same calls through a ClientSession or a Client (they share these methods)."""
    before = listed(await client.list_tools())
    refused = tool_result(await client.call_tool("close_partner", {}))
    delegated = tool_result(await client.call_tool("send_to_partner", {"message": "hello from the MCP SDK"}))
    after = listed(await client.list_tools())
    return {"toolsBefore": before, "refused": refused, "delegated": delegated, "toolsAfter": after}


def identity(server_info, protocol_version, instructions):
    return {
        "protocolVersion": protocol_version,
        "serverInfo": server_info.model_dump(mode="json", exclude_none=True) if server_info else None,
        "instructions": instructions,
    }


async def with_session(streams, mode):
    read, write = streams
    async with ClientSession(read, write) as session:
        if mode == "legacy":
            await session.initialize()
        else:
            await session.discover()
        out = identity(session.server_info, session.protocol_version, session.instructions)
        out.update(await exercise(session))
        return out


async def with_client(transport, mode):
    async with Client(transport, mode="auto" if mode == "auto" else "2026-07-28") as client:
        out = identity(client.server_info, client.protocol_version, client.instructions)
        out.update(await exercise(client))
        return out


async def main(url, token, mode):
    wire = []

    async def record(request):
        try:
            method = json.loads(request.content).get("method")
        except (ValueError, AttributeError):
            method = None
        wire.append({"method": method, "version": request.headers.get("mcp-protocol-version")})

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0),
        event_hooks={"request": [record]},
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        with anyio.fail_after(TIMEOUT_SECONDS):
            if mode in ("legacy", "discover"):
                async with transport as streams:
                    out = await with_session(streams, mode)
            else:
                out = await with_client(transport, mode)
    out["mode"] = mode
    out["wire"] = wire
    print(json.dumps(out))


if __name__ == "__main__":
    token = os.environ.get("TANDEM_MCP_TOKEN")
    if len(sys.argv) != 3 or sys.argv[2] not in ("legacy", "discover", "auto", "pinned") or not token:
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1], token, sys.argv[2])
