"""A small MCP server over streamable HTTP for the tests of lib/mcp (knowledge-mcp).

Built on the official Python SDK (`mcp`, whose FastMCP is `MCPServer` since 2.0). It binds
127.0.0.1 on a free port itself and prints the URL of its MCP endpoint as the first line of
stdout, then serves until killed.

    python scripts/mcp_server.py [--token T]

With --token, every HTTP request must carry `Authorization: Bearer T` (401 otherwise).

Tools:
  search(query)    a small deterministic result (structured content) for the query
  fail(reason)     raises, so the result has isError true and the reason as its text
  slow()           waits until the call is cancelled
  cancellations()  {"started": n, "cancelled": m}: slow() calls started so far, and those of
                   them ended by a client's `notifications/cancelled` for them
  create_note(text) writes a note (annotated as a write: not read-only, not destructive)
  notes()          {"created": n, "notes": [...]}: the create_note calls received so far, so
                   that "a write runs exactly once" is counted at the server

search, cancellations and notes are annotated read-only; fail and slow carry no annotations.
"""

import argparse
import socket
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READS = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False)

slow_calls: set[str] = set()  # request ids of slow() calls
interrupted: set[str] = set()  # ... of those whose task was cancelled
cancel_notices: set[str] = set()  # request ids named by a client's notifications/cancelled


async def record_cancel_notices(ctx, call_next):
    """Middleware: notes the request each `notifications/cancelled` names, then lets the SDK
    apply it (it cancels that request's task)."""
    if ctx.method == "notifications/cancelled":
        cancel_notices.add(str((ctx.params or {}).get("requestId")))
    return await call_next(ctx)


server = MCPServer("knowledge-test", log_level="WARNING", middleware=[record_cancel_notices])


@server.tool(annotations=READS)
def search(query: str) -> dict[str, Any]:
    """Searches the test corpus for the query."""
    return {"query": query, "hits": [{"title": "Cancelling", "score": len(query)}]}


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(reason)


@server.tool()
async def slow(ctx: Context) -> str:
    """Never finishes on its own: waits until the call is cancelled."""
    slow_calls.add(ctx.request_id)
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        interrupted.add(ctx.request_id)
        raise
    return "unreachable"


@server.tool(annotations=READS)
def cancellations() -> dict[str, int]:
    """How many slow() calls started, and how many of them a client's notifications/cancelled
    ended."""
    return {"started": len(slow_calls), "cancelled": len(slow_calls & interrupted & cancel_notices)}


notes_made: list[str] = []


@server.tool(annotations=WRITES)
def create_note(text: str) -> dict[str, Any]:
    """Writes a note with the text given."""
    notes_made.append(text)
    return {"id": f"note-{len(notes_made)}", "text": text}


@server.tool(annotations=READS)
def notes() -> dict[str, Any]:
    """The notes written so far, and how many create_note calls made them."""
    return {"created": len(notes_made), "notes": list(notes_made)}


def require_token(app, token):
    """Wraps the ASGI app so that HTTP requests without the bearer token get 401."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", help="require this bearer token on every request")
    args = parser.parse_args()

    app = server.streamable_http_app()
    if args.token:
        app = require_token(app, args.token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections made before uvicorn is up wait in the backlog
    host, port = sock.getsockname()
    print(f"http://{host}:{port}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
