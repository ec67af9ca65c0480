"""A newcomer's walk through the app (issue 39), in Chromium against the real binary: what a first
look found wrong, a test for each. Each test here failed on the build before the change it covers
(run once with KNOWLEDGE_APP_DIR serving that build)."""

import re

import pytest
from playwright.sync_api import expect

from conftest import Service
from fake_openai import FakeOpenAi
from test_admin import add_member, sign_in_admin
from test_app import ask, wait_answered


@pytest.fixture
def answering():
    """A service whose agent (the fake OpenAI server) answers at once and saves notes when asked."""
    fake = FakeOpenAi(hold=False)
    service = Service(env=fake.env())
    yield service
    fake.stop()
    service.stop()


def scroll_to_the_end(page, frame) -> dict | None:
    """Scrolls every pane of the page to its end, and the window too if it can; None when the
    window stayed put and `frame` (what must stay in view) is in view, else what happened."""
    end = page.evaluate("""() => {
        for (const e of document.querySelectorAll('*')) e.scrollTop = e.scrollHeight;
        window.scrollTo(0, document.scrollingElement.scrollHeight);
        return {scrollHeight: document.scrollingElement.scrollHeight, innerHeight, scrollY};
    }""")
    end["frame in view"] = frame.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
    still = end["scrollHeight"] <= end["innerHeight"] and end["scrollY"] == 0 and end["frame in view"]
    return None if still else end


def open_days_table(page):
    page.get_by_text("The numbers as a table").click()
    expect(page.locator("details table")).to_be_visible()


@pytest.mark.parametrize("width", [1280, 375])
def test_scrolled_to_its_end_no_page_scrolls_the_window(answering, page, width):
    service = answering
    page.set_viewport_size({"width": width, "height": 740})
    add_member(service, "usr_ann", "ann@example.org")
    page.goto(service.first_link())
    # A note remembered, and a question counted in the usage pages' chart, members and models.
    ask(page, "Remember I prefer metric units")
    expect(page.locator("article.agent").get_by_text(re.compile("^The tool said:"))).to_be_visible(timeout=20_000)
    conversation = page.url
    # What stays in view at the end of each page: the chat's sidebar (a top bar on the phone),
    # or the admin sections.
    chat_frame = page.get_by_role("button", name="New chat" if width > 600 else "Conversations")
    admin_frame = page.get_by_role("link", name="Back to the chat")
    found = {}

    def scrolled(name: str, frame):
        moved = scroll_to_the_end(page, frame)
        if moved:
            found[name] = moved

    for name, path, ready in (
        ("new chat", "/", page.get_by_label("Message")),
        ("conversation", conversation.removeprefix(service.base), page.locator("article.agent")),
        ("connections", "/connections", page.get_by_text("Your organisation has no integration to connect.")),
        ("memory", "/memory", page.get_by_role("table", name="What the assistant remembers")),
        ("usage", "/usage", page.locator("svg.chart rect.bar")),
        ("admin/members", "/admin/members", page.get_by_role("row", name=re.compile("ann@example.org"))),
        ("admin/sso", "/admin/sso", page.get_by_label("Issuer URL")),
        ("admin/scim", "/admin/scim", page.get_by_label("SCIM base URL", exact=True)),
        ("admin/integrations", "/admin/integrations", page.get_by_role("heading", name="Integrations", exact=True)),
        ("admin/usage", "/admin/usage", page.locator("svg.chart rect.bar")),
        ("admin/audit", "/admin/audit", page.get_by_role("row", name=re.compile("Added a member")).filter(has_text="usr_ann")),
    ):
        frame = admin_frame if path.startswith("/admin") else chat_frame
        page.goto(f"{service.base}{path}")
        expect(ready).to_be_visible()
        scrolled(name, frame)
        if name.endswith("usage"):
            open_days_table(page)
            scrolled(f"{name} with the table open", frame)
    assert found == {}, found


def wider_than_the_window(page) -> list:
    """The elements that end past the window's right edge, and the panes that scroll sideways."""
    return page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > innerWidth + 0.5
            || ['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth)
        .map(e => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + e.className : ''}: ${e.getBoundingClientRect().right} px, ${e.scrollWidth} wide inside`)""")


def test_at_phone_width_nothing_on_the_audit_page_or_beside_it_is_wider_than_the_screen(service, page):
    page.set_viewport_size({"width": 375, "height": 740})
    add_member(service, "usr_ann", "ann@example.org")
    page.goto(service.first_link())
    expect(page.get_by_label("Message")).to_be_visible()
    found = {}
    admin = [f"/admin/{section}" for section in ("audit", "members", "sso", "scim", "integrations", "usage")]
    for path in (*admin, "/usage", "/memory", "/connections"):
        page.goto(f"{service.base}{path}")
        expect(page.locator("main h1").first).to_be_visible()
        page.wait_for_load_state("networkidle")
        wider = wider_than_the_window(page)
        if wider:
            found[path] = wider
    assert found == {}, found


def test_a_conversation_opened_from_the_list_takes_what_is_typed_in_its_message_box(service, page):
    page.goto(service.first_link())
    ask(page, "First question")
    wait_answered(page)
    page.get_by_role("button", name="New chat").click()
    ask(page, "Second question")
    expect(page.locator("article.user")).to_have_text(["Second question"])
    wait_answered(page)
    conversations = page.get_by_role("navigation", name="Conversations")
    box = page.get_by_label("Message")
    conversations.get_by_role("link", name="First question").click()
    expect(page.locator("article.user")).to_have_text(["First question"])
    page.keyboard.type("A follow-up")
    expect(box).to_have_value("A follow-up")
    # New chat, even on the new chat already open.
    box.fill("")
    page.get_by_role("button", name="New chat").click()
    page.get_by_role("button", name="New chat").click()
    page.keyboard.type("Something new")
    expect(box).to_have_value("Something new")
    # Also from a page beside the chat, where the message box is not there yet.
    box.fill("")
    page.get_by_role("link", name="Usage").click()
    expect(page.get_by_role("heading", name="Your usage")).to_be_visible()
    conversations.get_by_role("link", name="Second question").click()
    expect(page.locator("article.user")).to_have_text(["Second question"])
    page.keyboard.type("Another")
    expect(box).to_have_value("Another")
    # And from the drawer on a phone, which the choice closes.
    box.fill("")
    page.set_viewport_size({"width": 375, "height": 740})
    page.get_by_role("button", name="Conversations").click()
    conversations.get_by_role("link", name="First question").click()
    expect(page.locator("article.user")).to_have_text(["First question"])
    expect(conversations).to_be_hidden()
    page.keyboard.type("On the phone")
    expect(box).to_have_value("On the phone")


def side_by_side(first, second) -> bool:
    """Whether `first` stands before `second` on one line: to its left, their middles level."""
    a, b = first.bounding_box(), second.bounding_box()
    middles = abs((a["y"] + a["height"] / 2) - (b["y"] + b["height"] / 2))
    return a["x"] + a["width"] <= b["x"] and middles < min(a["height"], b["height"]) / 2


def test_the_memory_switches_sit_beside_their_labels(service, page):
    page.goto(service.first_link())
    expect(page.get_by_label("Message")).to_be_visible()
    for path, label in (
        ("/admin/usage", "Let the assistant remember things about members"),
        ("/memory", "Let the assistant remember things about me"),
    ):
        page.goto(f"{service.base}{path}")
        switch = page.get_by_label(label)
        expect(switch).to_be_visible()
        assert side_by_side(switch, page.locator("label", has_text=label)), path


def test_sign_out_stays_on_one_line_beside_a_long_name_cut_with_an_ellipsis(service, page):
    # 60 characters: words, as a display name, and one long address.
    for name in ("Maria Fernanda de los Santos Albuquerque (Finance and Legal)", "someone.with.a.rather.long.name.for.a.sidebar@example.org.uk"):
        assert len(name) == 60
        add_member(service, "usr_default", name, "admin")
        page.goto(service.link())
        sign_out = page.get_by_role("button", name="Sign out")
        expect(sign_out).to_be_in_viewport()
        lines = sign_out.evaluate("e => { const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length; }")
        assert lines == 1, f"beside {name}, Sign out is on {lines} lines"
        shown = page.locator(".sidebar .me").get_by_text(name)
        assert shown.evaluate("e => getComputedStyle(e).textOverflow") == "ellipsis", name
        assert shown.evaluate("e => e.scrollWidth > e.clientWidth"), f"{name} is not cut"
        assert side_by_side(shown, sign_out), name


def test_each_admin_section_names_its_tab(service, page):
    sign_in_admin(service, page, "members")
    expect(page).to_have_title("Members – Admin – Knowledge")
    sections = page.get_by_role("navigation", name="Admin")
    for label in ("Single sign-on", "SCIM", "Integrations", "Usage", "Audit log", "Members"):
        sections.get_by_role("link", name=label, exact=True).click()
        expect(page).to_have_title(f"{label} – Admin – Knowledge")
    page.goto(f"{service.base}/admin/usage")
    expect(page).to_have_title("Usage – Admin – Knowledge")
    page.get_by_role("link", name="Back to the chat").click()
    expect(page).to_have_title("Knowledge")


def test_the_audit_log_names_the_organisation_and_writes_numbers_as_the_usage_page(service, page):
    service.admin("org", "set", "--org", "org_default", "--query-quota", "1000", "--cost-cap-usd", "1234.5")
    sign_in_admin(service, page, "usage")
    expect(page.locator("dl.usage")).to_contain_text("0 of 1,000")
    expect(page.locator("dl.usage")).to_contain_text("$0.00 of $1,234.50")
    org = page.request.get(f"{service.base}/api/auth/me").json()["org"]["name"]
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Audit log").click()
    cells = page.get_by_role("row", name=re.compile("Changed the organisation's plan")).get_by_role("cell")
    expect(cells.nth(2)).to_have_text(f"{org}org_default")
    expect(cells.nth(1)).to_have_text("Changed the organisation's plan, status or limitsquota 1,000 questions, cost cap $1,234.50")
    expect(cells.nth(3)).to_have_text("Command line")
