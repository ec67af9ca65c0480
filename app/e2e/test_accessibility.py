"""axe-core on every page of the app, light and dark, at 1280 and at 375 px: nothing serious or
critical. The account has two organisations (so the switcher is drawn) and a conversation with
an answer, its tool call unfolded; on the phone the drawer is scanned open too. The usage pages
are scanned with that question in their day chart and their table of days unfolded."""

import pytest
from playwright.sync_api import expect

from test_app import ask, axe_violations, wait_answered

ADMIN = ("members", "sso", "scim", "integrations", "usage", "audit")


def unfold_days(page):
    """Waits for the day chart with the question's bar, and unfolds its table."""
    expect(page.locator("svg.chart rect.bar")).to_have_count(1)
    page.get_by_text("The numbers as a table").click()
    expect(page.locator("details table")).to_be_visible()


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_has_a_serious_accessibility_finding(service, browser, width, scheme):
    service.admin("org", "create", "--id", "org_second", "--name", "Second Org")
    service.admin("member", "add", "--org", "org_second", "--user", "usr_default", "--role", "viewer")
    service.admin("member", "add", "--org", "org_default", "--user", "usr_ann", "--user-name", "ann@example.org")
    # Playwright injects the scanner as an inline script, which the page's policy rightly
    # refuses: this context alone sets the policy aside.
    context = browser.new_context(
        bypass_csp=True, color_scheme=scheme, viewport={"width": width, "height": 800}
    )
    page = context.new_page()
    found = {}

    def scan(name: str):
        violations = axe_violations(page)
        if violations:
            found[name] = violations

    page.goto(f"{service.base}/")
    expect(page.get_by_label("Work e-mail")).to_be_visible()
    scan("sign-in")
    page.goto(service.first_link())
    expect(page.get_by_label("Message")).to_be_visible()
    scan("new chat")
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    page.locator("details.tool summary").first.click()
    scan("conversation")
    if width < 600:
        page.get_by_role("button", name="Conversations").click()
        expect(page.get_by_role("button", name="New chat")).to_be_visible()
        scan("drawer")
    page.goto(f"{service.base}/connections")
    expect(page.get_by_role("heading", name="Connections")).to_be_visible()
    scan("connections")
    page.goto(f"{service.base}/memory")
    expect(page.get_by_label("Let the assistant remember things about me")).to_be_visible()
    scan("memory")
    page.goto(f"{service.base}/usage")
    unfold_days(page)
    scan("usage")
    for section in ADMIN:
        page.goto(f"{service.base}/admin/{section}")
        expect(page.locator("main.admin h2").first).to_be_visible()
        page.wait_for_load_state("networkidle")
        if section == "usage":
            unfold_days(page)
        scan(f"admin/{section}")
    context.close()
    assert found == {}, found
