"""The app in a real headless Chromium (Debian's, driven by Playwright for Python through
`executable_path`; no browser is downloaded) against the real `knowledge` binary on loopback.

`KNOWLEDGE_BIN` names the binary (scripts/test passes the one its cargo build made) and
`CHROMIUM` the browser (default /usr/bin/chromium). `KNOWLEDGE_APP_DIR`, when set, serves the app
from that folder instead of the embedded copy (to try a test on another build of the app)."""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("KNOWLEDGE_BIN", str(ROOT / "target" / "debug" / "knowledge"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

# Starting a server and waiting until it listens, as scripts/common.sh's start_server does.
sys.path.insert(0, str(ROOT / "scripts"))
from servers import free_port, start  # noqa: E402  (free_port: for the tests' own servers)


class Service:
    """`knowledge serve` on a loopback port the system picks, over a fresh data directory."""

    def __init__(self, env: dict | None = None):
        self.dir = tempfile.TemporaryDirectory()
        self.log = Path(self.dir.name) / "serve.log"
        app_dir = ["--app-dir", os.environ["KNOWLEDGE_APP_DIR"]] if os.environ.get("KNOWLEDGE_APP_DIR") else []
        self.proc, self.base = start(
            [BIN, "--data-dir", self.dir.name, "serve", "--addr", "127.0.0.1:0", *app_dir],
            self.log,
            env={**os.environ, **(env or {})},
        )
        self.port = int(self.base.rsplit(":", 1)[1])

    def output(self) -> str:
        return self.log.read_text()

    def first_link(self) -> str:
        return re.search(r"http://\S+/api/auth/link\?token=[0-9a-f]+", self.output()).group(0)

    def admin(self, *args: str, stdin: str = "") -> str:
        """Runs an admin command on the service's data directory; returns its output."""
        done = subprocess.run(
            [BIN, "--data-dir", self.dir.name, *args],
            input=stdin, capture_output=True, text=True, check=True,
        )
        return done.stdout.strip()

    def link(self, org: str = "org_default", user: str = "usr_default") -> str:
        return self.admin("signin-link", "--org", org, "--user", user, "--origin", self.base)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.dir.cleanup()


@pytest.fixture
def service():
    s = Service()
    yield s
    s.stop()


@pytest.fixture
def held():
    """A service whose agent (a fake OpenAI server) answers only when the test releases it."""
    from fake_openai import FakeOpenAi

    fake = FakeOpenAi()
    s = Service(env=fake.env())
    yield s, fake
    fake.stop()
    s.stop()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh browser context's page, failing the test on any console error (a
    Content-Security-Policy violation among them), uncaught exception, server error, or page,
    script, stylesheet or API call not found. The browser's own "Failed to load resource" lines
    are left to the response check: a 401 from /api/auth/me is how a signed-out page learns it."""
    context = browser.new_context()
    page = context.new_page()
    problems = []
    # Statuses a test provokes on purpose (a provider that is down answers 502).
    page.expected_statuses = set()

    def console(m):
        if m.type == "error" and not m.text.startswith("Failed to load resource"):
            problems.append(m.text)

    def response(r):
        wanted = r.request.resource_type in ("document", "script", "stylesheet", "fetch", "xhr")
        if r.status in page.expected_statuses:
            return
        if r.status >= 500 or (r.status == 404 and wanted):
            problems.append(f"{r.status} {r.url}")

    page.on("console", console)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", response)
    yield page
    context.close()
    assert problems == [], problems


class Provider:
    """The test OpenID provider (scripts/oidc) for `service`'s callback."""

    def __init__(self, service: Service, accounts: dict):
        config = {
            "clients": [{
                "client_id": "knowledge-e2e",
                "client_secret": "e2e-secret",
                # The default organisation's own callback, and the shared one of old that
                # organisations set up earlier still have registered.
                "redirect_uris": [
                    f"{service.base}/api/auth/callback/org_default",
                    f"{service.base}/api/auth/callback",
                ],
            }],
            "accounts": accounts,
        }
        self.config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(config, self.config)
        self.config.close()
        self.proc = subprocess.Popen(
            ["node", str(ROOT / "scripts" / "oidc" / "provider.mjs"), "--port", "0", "--config", self.config.name],
            stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline().strip()
        assert line.startswith("ready "), line
        self.issuer = line.removeprefix("ready ")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        os.unlink(self.config.name)
