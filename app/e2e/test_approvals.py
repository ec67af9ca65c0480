"""Consent to tool calls in Chromium, against the real binary, a fake OpenAI server that calls
tools as a model does, and the reference MCP server (`scripts/mcp_server.py`), whose
`create_note` says it writes (so it asks) and numbers each note it writes: `note-1`, `note-2`,
so the answers show how many times the server was really called."""

import re

import pytest
from playwright.sync_api import expect

from conftest import Service
from fake_openai import FakeOpenAi
from test_admin import mcp_server


@pytest.fixture
def noting():
    """A service whose agent writes notes through the reference server, connected as `kb`."""
    fake = FakeOpenAi(hold=False)
    service = Service(env=fake.env())
    proc, url = mcp_server()
    service.admin("integration", "add", "--org", "org_default", "--name", "kb", "--url", url)
    yield service
    proc.terminate()
    proc.wait(timeout=10)
    fake.stop()
    service.stop()


def ask(page, text: str):
    page.get_by_role("button", name="New chat").click()
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def asked(page):
    return page.get_by_role("group", name="The assistant asks to create note in kb")


def test_a_write_asks_approve_runs_it_once_decline_tells_the_agent_and_always_allow_stops_asking(noting, page):
    page.goto(noting.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()

    ask(page, "Note buy milk")
    call = asked(page)
    expect(call).to_be_visible(timeout=20_000)
    expect(call.locator("dd")).to_have_text("buy milk")
    expect(page.get_by_text("Waiting for your answer above.")).to_be_visible()
    # It is in the log: a reload shows it again, and the sidebar marks the conversation.
    page.reload()
    expect(asked(page)).to_be_visible()
    expect(page.locator(".sessions .badge.waiting")).to_have_count(1)
    asked(page).get_by_role("button", name="Approve").click()
    expect(page.get_by_text(re.compile(r"^The tool said: .*note-1"))).to_be_visible(timeout=20_000)
    expect(page.locator(".sessions .badge.waiting")).to_have_count(0)

    ask(page, "Note call the bank")
    asked(page).get_by_role("button", name="Decline").click()
    expect(page.get_by_text(re.compile(r"^The tool said: .*declined"))).to_be_visible(timeout=20_000)

    ask(page, "Note water the plants")
    asked(page).get_by_role("button", name="Always allow").click()
    expect(page.get_by_text(re.compile(r"^The tool said: .*note-2"))).to_be_visible(timeout=20_000)

    # Always allowed: the next note is written without asking, as the server's third call.
    ask(page, "Note pay rent")
    expect(page.get_by_text(re.compile(r"^The tool said: .*note-3"))).to_be_visible(timeout=20_000)
    expect(asked(page)).to_have_count(0)


def test_a_member_takes_back_always_allow_on_the_connections_page(noting, page):
    page.goto(noting.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    ask(page, "Note first")
    asked(page).get_by_role("button", name="Always allow").click()
    expect(page.get_by_text(re.compile(r"^The tool said: .*note-1"))).to_be_visible(timeout=20_000)

    page.get_by_role("link", name="Connections").click()
    allowed = page.get_by_role("region", name="Tools you always allow")
    expect(allowed.get_by_role("listitem")).to_have_text(re.compile(r"kb_create_note \(kb\)"))
    allowed.get_by_role("button", name="Ask again: kb_create_note").click()
    expect(allowed.get_by_role("status")).to_have_text("kb_create_note asks you again.")
    expect(allowed.get_by_text("None: the assistant asks you each time.")).to_be_visible()

    page.goto(noting.base)
    ask(page, "Note second")
    expect(asked(page)).to_be_visible(timeout=20_000)


def test_an_accessibility_scan_of_a_call_waiting_for_the_member_finds_nothing_serious(noting, browser):
    from test_app import axe_violations

    # The scanner is injected as an inline script, which the page's policy rightly refuses:
    # this context alone sets the policy aside.
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.goto(noting.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    ask(page, "Note buy milk")
    expect(asked(page)).to_be_visible(timeout=20_000)
    assert axe_violations(page) == []
    # Keyboard: the answers are buttons in reading order, reached by Tab.
    approve = asked(page).get_by_role("button", name="Approve")
    approve.focus()
    page.keyboard.press("Tab")
    expect(asked(page).get_by_role("button", name="Decline")).to_be_focused()
    context.close()
