"""An OAuth authorization server for the tests of refresh, rotation and revocation.

It runs the Python `mcp` package's own handlers (`mcp.server.auth`: metadata, authorize, token,
register, revoke) over a provider of the tests' own. The provider approves every authorization
at once (a 302 back with the code), issues access tokens that last `--access-ttl` seconds and
refresh tokens that rotate on every use, with reuse detection: presenting a refresh token that
was already used revokes the whole grant. It checks that a code's `resource` is the one
`--resource` names, and counts the refresh requests it serves at `GET /stats`.

With `--mcp` it is also the protected MCP server itself (the SDK's `MCPServer` with the
provider as its token verifier): `<issuer>/mcp` is the resource, its protected resource metadata
is served, an unauthenticated request gets the SDK's 401 challenge, and a tool `whoami` answers
which client's token called it. `POST /expire` ends every access token at once (as a server
that revokes them early does), so the next MCP request is refused with 401.

Access tokens from a code last `--access-ttl` seconds; those from a refresh `--refreshed-ttl`
(the same by default): a test can have the first token expire and the refreshed one last.
`--refresh-delay` holds each refresh that many seconds, so that other callers arrive meanwhile.

Usage: oauth_server.py --port 0 (--resource http://127.0.0.1:9/mcp | --mcp) [--access-ttl 60]
       [--refreshed-ttl 3600]
Prints `ready <issuer>` once it listens.
"""

import argparse
import asyncio
import secrets
import socket
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


class RotatingProvider:
    """Clients, codes and tokens in memory; one grant per code, its refresh token rotated."""

    def __init__(self, resource: str, access_ttl: int, refreshed_ttl: int, refresh_delay: float = 0):
        self.resource = resource
        self.refresh_delay = refresh_delay
        self.access_ttl = access_ttl
        self.refreshed_ttl = refreshed_ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        # refresh token -> (grant id, token); a used one stays, marked, to detect reuse.
        self.refresh: dict[str, tuple[str, RefreshToken]] = {}
        self.used: set[str] = set()
        self.revoked_grants: set[str] = set()
        self.refreshes = 0
        self.reuses = 0
        self.revocations = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    def issue(self, client_id: str, scopes: list[str], grant: str, ttl: int) -> OAuthToken:
        access = secrets.token_urlsafe(16)
        refresh = secrets.token_urlsafe(16)
        expires = int(time.time()) + ttl
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires,
            resource=self.resource,
        )
        self.refresh[refresh] = (grant, RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=self.resource,
        ))
        return OAuthToken(
            access_token=access, expires_in=ttl, scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode):
        # Single use: a replayed code finds nothing.
        self.codes.pop(authorization_code.code, None)
        if authorization_code.resource != self.resource:
            raise TokenError("invalid_target", "the code was not issued for this resource")
        return self.issue(
            client.client_id, authorization_code.scopes, secrets.token_hex(8), self.access_ttl
        )

    async def load_refresh_token(self, client, refresh_token: str):
        found = self.refresh.get(refresh_token)
        if found is None:
            return None
        grant, token = found
        if grant in self.revoked_grants:
            return None
        if refresh_token in self.used:
            # Reuse of a rotated token: the grant is compromised, revoke all of it.
            self.reuses += 1
            self.revoked_grants.add(grant)
            return None
        return token

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]):
        self.refreshes += 1
        # A slow token endpoint keeps a refresh in flight while other callers arrive.
        await asyncio.sleep(self.refresh_delay)
        grant, _ = self.refresh[refresh_token.token]
        self.used.add(refresh_token.token)
        return self.issue(
            client.client_id, scopes or refresh_token.scopes, grant, self.refreshed_ttl
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at or 0) < time.time():
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.revocations += 1
        if isinstance(token, RefreshToken) and token.token in self.refresh:
            self.revoked_grants.add(self.refresh[token.token][0])
        self.access.pop(getattr(token, "token", ""), None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--resource")
    parser.add_argument("--mcp", action="store_true")
    parser.add_argument("--access-ttl", type=int, default=60)
    parser.add_argument("--refreshed-ttl", type=int)
    parser.add_argument("--refresh-delay", type=float, default=0)
    args = parser.parse_args()
    if bool(args.resource) == args.mcp:
        parser.error("give exactly one of --resource and --mcp")

    sock = socket.socket()
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
    resource = f"{issuer}/mcp" if args.mcp else args.resource
    provider = RotatingProvider(
        resource, args.access_ttl, args.refreshed_ttl or args.access_ttl, args.refresh_delay
    )

    async def stats(_request):
        return JSONResponse({
            "refreshes": provider.refreshes,
            "reuses": provider.reuses,
            "revokedGrants": len(provider.revoked_grants),
            "revocations": provider.revocations,
        })

    async def expire(_request):
        provider.access.clear()
        return JSONResponse({"ok": True})

    # POST /token-fault {"status": 500} makes the token endpoint answer that status, without
    # issuing anything, until {"status": null} (a failing authorization server).
    fault = {"status": None}

    async def token_fault(request):
        fault["status"] = (await request.json()).get("status")
        return JSONResponse({"ok": True})

    extra = [
        Route("/stats", stats),
        Route("/expire", expire, methods=["POST"]),
        Route("/token-fault", token_fault, methods=["POST"]),
    ]
    if args.mcp:
        app = mcp_app(provider, issuer, extra)
    else:
        routes = create_auth_routes(
            provider,
            AnyHttpUrl(issuer),
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
        )
        app = Starlette(routes=routes + extra)
    config = uvicorn.Config(failing_token_endpoint(app, fault), log_level="warning")
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        print(f"ready {issuer}", flush=True)
        await task

    asyncio.run(serve())


def failing_token_endpoint(app, fault: dict):
    """`app`, whose token endpoint answers `fault["status"]` with an empty body while it is
    set."""

    async def wrapped(scope, receive, send):
        status = fault["status"]
        if status and scope["type"] == "http" and scope["path"] == "/token":
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return wrapped


def mcp_app(provider: RotatingProvider, issuer: str, extra: list[Route]):
    """The MCP server at `<issuer>/mcp`, protected by `provider`'s tokens, with its
    authorization server's routes beside it."""
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(
        "oauth-test",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer),
            resource_server_url=AnyHttpUrl(f"{issuer}/mcp"),
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def whoami() -> dict:
        """Which client's token called this tool."""
        token = get_access_token()
        return {"client": token.client_id if token else None}

    for route in extra:
        server.custom_route(route.path, methods=list(route.methods or ["GET"]))(route.endpoint)
    return server.streamable_http_app()


if __name__ == "__main__":
    main()
