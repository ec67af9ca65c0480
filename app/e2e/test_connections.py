"""OAuth-protected integrations in Chromium, against the real binary and a server nobody here
wrote: the MCP TypeScript SDK's example server with its OAuth authorization server
(`scripts/mcp-oauth`, strict about `resource`). An admin adds it by its URL alone and sees what
discovery found; a member connects through the app (the browser goes to the server's page and
comes back); a question then calls the server's tool with the member's grant; the member
disconnects."""

import re

import pytest
from playwright.sync_api import expect

from conftest import ROOT, Service, free_port
from servers import start
from fake_openai import FakeOpenAi

EXAMPLE = ROOT / "scripts/mcp-oauth/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"


@pytest.fixture
def example_server(tmp_path):
    """The SDK's example server in strict OAuth mode on free ports; yields its MCP URL."""
    # It takes its ports from the environment and cannot be given port 0.
    port, auth_port = free_port(), free_port()
    proc, _ = start(
        ["node", str(EXAMPLE), "--oauth", "--oauth-strict"],
        tmp_path / "example-server.log",
        env={"MCP_PORT": str(port), "MCP_AUTH_PORT": str(auth_port), "PATH": "/usr/bin:/bin:/usr/local/bin"},
        ready=re.compile(r"MCP Streamable HTTP Server listening"),
    )
    yield f"http://localhost:{port}/mcp", f"http://localhost:{auth_port}/"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def greeting():
    """A service whose agent (a fake OpenAI server answering at once) calls a greet tool."""
    fake = FakeOpenAi(hold=False)
    s = Service(env=fake.env())
    yield s
    fake.stop()
    s.stop()


def sign_in_and_add(service, page, url: str):
    """Signs in with the one-time link (the default admin) and adds the MCP server at `url` as
    `wiki`, each member's own account, in the admin Integrations page."""
    page.goto(service.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.goto(f"{service.base}/admin/integrations")
    page.get_by_label("Name").fill("wiki")
    page.get_by_label("MCP endpoint URL").fill(url)
    page.get_by_label("Credentials").select_option("oauth_member")
    page.get_by_role("button", name="Connect", exact=True).click()
    # The service discovers the server's authorization server and registers with it first.
    expect(page.get_by_role("status")).to_have_text("wiki is connected.", timeout=20_000)


def test_an_admin_adds_a_server_by_url_a_member_connects_in_the_app_and_asks_through_it(greeting, example_server, page):
    service = greeting
    url, issuer = example_server
    # The admin adds the server by its URL alone, as each member's own account.
    sign_in_and_add(service, page, url)
    row = page.get_by_role("row").filter(has_text="wiki")
    expect(row).to_contain_text(issuer.rstrip("/").removeprefix("http://"))
    expect(row).to_contain_text("registered dynamically")
    expect(page.get_by_text(f"{service.base}/api/oauth/callback/org_default/wiki")).to_be_visible()

    # The chat says the member has not connected it, and links to where they can.
    page.get_by_role("link", name="Back to the chat").click()
    expect(page.get_by_text("wiki is not connected")).to_be_visible()
    page.get_by_role("link", name="Connect", exact=True).click()
    expect(page).to_have_url(f"{service.base}/connections")
    expect(page.get_by_role("row").filter(has_text="wiki")).to_contain_text("Not connected")
    page.get_by_role("button", name="Connect: wiki").click()
    # Through the server's authorization page and back: the status is on the page come back.
    expect(page.get_by_role("status")).to_have_text("wiki is connected.", timeout=20_000)
    expect(page).to_have_url(f"{service.base}/connections")
    expect(page.get_by_role("row").filter(has_text="wiki")).to_contain_text("Connected since")

    # A question calls the server's tool with the member's grant.
    with page.expect_response(lambda r: r.url.endswith("/api/integrations") and r.request.method == "GET"):
        page.get_by_role("button", name="New chat").click()
    expect(page.get_by_text("wiki is not connected")).to_have_count(0)
    page.get_by_label("Message").fill("Greet Ann please")
    page.get_by_role("button", name="Send").click()
    # The example's tool says nothing of what it does, so it asks the member first.
    page.get_by_role("group", name="The assistant asks to greet in wiki").get_by_role("button", name="Approve").click(timeout=20_000)
    expect(page.get_by_text(re.compile(r"^The tool said: .*Hello, Ann!"))).to_be_visible(timeout=20_000)

    # Disconnecting, after confirmation, ends the connection.
    page.get_by_role("link", name="Connections").click()
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Disconnect: wiki").click()
    expect(page.get_by_role("status")).to_have_text("wiki is disconnected.")
    expect(page.get_by_role("row").filter(has_text="wiki")).to_contain_text("Not connected")


def test_a_connect_that_does_not_complete_says_so_on_the_connections_page(greeting, page):
    service = greeting
    page.goto(service.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.goto(f"{service.base}/api/oauth/callback/org_default/wiki?state=forged&code=x")
    expect(page).to_have_url(f"{service.base}/connections")
    expect(page.get_by_role("alert")).to_have_text("Connecting did not complete; start it again.")


def test_an_accessibility_scan_of_the_connections_page_finds_nothing_serious(greeting, example_server, browser):
    from test_app import axe_violations

    service = greeting
    url, _ = example_server
    # The scanner is injected as an inline script, which the page's policy rightly refuses:
    # this context alone sets the policy aside.
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    sign_in_and_add(service, page, url)
    assert axe_violations(page) == []
    page.goto(f"{service.base}/connections")
    expect(page.get_by_role("row").filter(has_text="wiki")).to_contain_text("Not connected")
    assert axe_violations(page) == []
    context.close()
