"""Credentials for schemathesis (loaded through SCHEMATHESIS_HOOKS by scripts/fuzz_api.sh).

Each case of a session operation gets the next member's cookie from FUZZ_COOKIES (one cookie
per line, `ks_session=...`), as several members of an organisation would use the API, so that
the per-member rate limits leave room for the 2xx paths; the admin operations get an admin's
cookie from FUZZ_ADMIN_COOKIES. SCIM operations get the organisation's bearer token from
FUZZ_SCIM_TOKEN.
"""

import itertools
import os
import threading

import schemathesis

_cookies = itertools.cycle(
    [line.strip() for line in os.environ["FUZZ_COOKIES"].splitlines() if line.strip()]
)
_admin_cookies = itertools.cycle(
    [line.strip() for line in os.environ["FUZZ_ADMIN_COOKIES"].splitlines() if line.strip()]
)
_scim_token = os.environ["FUZZ_SCIM_TOKEN"]
_lock = threading.Lock()


@schemathesis.auth(refresh_interval=None)
class Member:
    """A member's cookie for the session routes, the SCIM token for SCIM's."""

    def get(self, case, ctx):
        if case.operation.path.startswith("/api/scim"):
            return ("bearer", _scim_token)
        with _lock:
            if case.operation.path.startswith("/api/admin"):
                return ("cookie", next(_admin_cookies))
            return ("cookie", next(_cookies))

    def set(self, case, data, ctx):
        kind, value = data
        if kind == "bearer":
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {value}"}
        else:
            name, cookie = value.split("=", 1)
            case.cookies = {**(case.cookies or {}), name: cookie}
