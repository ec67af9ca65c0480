"""The admin area in Chromium, against the real binary: who reaches it, each page doing what the
admin CLI does for one organisation (members and roles, single sign-on against the real test
provider, the SCIM token shown once, an MCP server connected and tested, limits, the audit log),
destructive actions only after confirmation, and the keyboard (the accessibility scan of every
page is test_accessibility)."""

import json
import re
import subprocess
import sys

from playwright.sync_api import expect

from conftest import ROOT, Provider


def sign_in_admin(service, page, section: str = "members"):
    page.goto(service.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.goto(f"{service.base}/admin/{section}")


def add_member(service, user: str, name: str, role: str = "viewer"):
    service.admin("member", "add", "--org", "org_default", "--user", user, "--role", role, "--user-name", name)


def audit_actions(service) -> list:
    lines = service.admin("--json", "audit", "--org", "org_default", "--limit", "100").splitlines()
    return [json.loads(line)["action"] for line in lines]


def test_the_admin_link_leads_admins_to_the_admin_area_and_viewers_are_told_it_is_not_theirs(service, page):
    page.goto(service.first_link())
    page.get_by_role("link", name="Admin").click()
    expect(page).to_have_url(f"{service.base}/admin/members")
    expect(page.get_by_role("heading", name="Members")).to_be_visible()
    expect(page.get_by_role("navigation", name="Admin").get_by_role("link", name="Members")).to_have_attribute(
        "aria-current", "page"
    )
    page.get_by_role("link", name="Back to the chat").click()
    expect(page.get_by_label("Message")).to_be_visible()
    # A viewer has no link, and the address alone shows no admin page.
    add_member(service, "usr_viewer", "vera@example.org")
    page.context.clear_cookies()
    page.goto(service.link(user="usr_viewer"))
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.get_by_role("link", name="Admin")).to_have_count(0)
    page.goto(f"{service.base}/admin/members")
    expect(page.get_by_role("alert")).to_have_text(re.compile("Only an admin"))
    expect(page.get_by_role("heading", name="Members")).to_have_count(0)


def test_members_are_found_promoted_and_removed_only_after_confirmation(service, page):
    add_member(service, "usr_ann", "ann@example.org")
    add_member(service, "usr_bob", "bob@example.org")
    sign_in_admin(service, page)
    rows = page.get_by_role("row")
    expect(rows.filter(has_text="ann@example.org")).to_have_count(1)
    page.get_by_label("Search members").fill("BOB")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr")).to_contain_text("bob@example.org")
    page.get_by_role("button", name="Make admin: bob@example.org").click()
    expect(page.get_by_role("status")).to_have_text("bob@example.org is now an admin.")
    expect(page.get_by_role("button", name="Make viewer: bob@example.org")).to_be_visible()
    # Removal asks first; dismissing keeps the member.
    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Remove: bob@example.org").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Remove: bob@example.org").click()
    expect(page.get_by_role("status")).to_have_text("bob@example.org was removed.")
    expect(page.locator("tbody tr")).to_have_count(0)
    assert "member.removed" in audit_actions(service)
    # A member is added by the name single sign-on will match; a name taken is said in words.
    page.get_by_label("userName (their e-mail at the identity provider)").fill("cleo@example.org")
    page.get_by_label("Role", exact=True).select_option("admin")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_role("status")).to_have_text(re.compile("cleo@example.org was added as an admin"))
    expect(page.get_by_role("row", name=re.compile("cleo@example.org"))).to_contain_text("admin")
    page.get_by_label("userName (their e-mail at the identity provider)").fill("ANN@example.org")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_role("alert")).to_have_text("Another member already has this userName.")


def test_demoting_the_last_admin_is_refused_in_words(service, page):
    sign_in_admin(service, page)
    page.get_by_role("button", name="Make viewer: usr_default").click()
    expect(page.get_by_role("alert")).to_have_text(re.compile("The organisation needs an admin"))
    expect(page.get_by_role("row", name=re.compile("usr_default"))).to_contain_text("admin")


def test_the_scim_token_is_shown_once_and_regenerated_only_after_confirmation(service, page):
    sign_in_admin(service, page, "scim")
    expect(page.get_by_label("SCIM base URL", exact=True)).to_have_value(f"{service.base}/api/scim")
    expect(page.get_by_text("No token yet.")).to_be_visible()
    page.get_by_role("button", name="Generate token").click()
    field = page.get_by_label("SCIM token (shown once)", exact=True)
    expect(field).to_have_value(re.compile(r"^kscim\.org_default\.[0-9a-f]{64}$"))
    expect(field).to_have_attribute("readonly", "")
    first = field.input_value()
    expect(page.get_by_role("button", name="Copy: SCIM token (shown once)")).to_be_visible()
    # Shown once: after a reload the page knows only that a token exists.
    page.reload()
    expect(page.get_by_text(re.compile("A token was generated"))).to_be_visible()
    expect(page.get_by_label("SCIM token (shown once)", exact=True)).to_have_count(0)
    assert first not in page.content()
    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Regenerate token").click()
    expect(page.get_by_label("SCIM token (shown once)", exact=True)).to_have_count(0)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Regenerate token").click()
    second = page.get_by_label("SCIM token (shown once)", exact=True)
    expect(second).to_have_value(re.compile(r"^kscim\."))
    assert second.input_value() != first
    assert audit_actions(service).count("scim_token.generated") == 2


def test_single_sign_on_is_configured_tested_and_switched_against_the_real_provider(service, page):
    provider = Provider(service, {"ann": {"sub": "ann-sub", "email": "ann@example.com"}})
    try:
        sign_in_admin(service, page, "sso")
        expect(page.get_by_text("Not configured yet.")).to_be_visible()
        expect(page.get_by_label("Redirect URI to register at the provider", exact=True)).to_have_value(
            f"{service.base}/api/auth/callback/org_default"
        )
        page.get_by_label("Issuer URL").fill(provider.issuer)
        page.get_by_label("Client ID").fill("knowledge-e2e")
        page.get_by_label("Client secret").fill("e2e-secret")
        page.get_by_label("E-mail domains (comma-separated)").fill("example.com")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_role("status")).to_have_text(
            "Single sign-on is saved, and off: members sign in with it once you turn it on."
        )
        expect(page.get_by_label("Client secret")).to_have_value("")
        expect(page.get_by_text("A secret is stored; it is never shown.")).to_be_visible()
        page.get_by_role("button", name="Test issuer").click()
        expect(page.get_by_role("status")).to_have_text(re.compile("answered with its discovery document"))
        page.get_by_role("button", name="Turn on").click()
        expect(page.get_by_role("status")).to_have_text("Single sign-on is on.")
        shown = json.loads(service.admin("sso", "show", "--org", "org_default"))
        assert (shown["enabled"], shown["emailDomains"]) == (True, ["example.com"])
        page.once("dialog", lambda d: d.dismiss())
        page.get_by_role("button", name="Turn off").click()
        expect(page.get_by_role("button", name="Turn off")).to_be_visible()
        page.once("dialog", lambda d: d.accept())
        page.get_by_role("button", name="Turn off").click()
        expect(page.get_by_role("status")).to_have_text("Single sign-on is off.")
        # An issuer that does not answer is said in words (the service answers 502).
        page.expected_statuses.add(502)
        page.get_by_label("Issuer URL").fill("http://127.0.0.1:9/nothing")
        page.get_by_role("button", name="Test issuer").click()
        expect(page.get_by_role("alert")).to_have_text(re.compile("could not be fetched"))
    finally:
        provider.stop()


def mcp_server(*args: str):
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "mcp_server.py"), *args], stdout=subprocess.PIPE, text=True
    )
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    return proc, url


def test_an_integration_is_connected_tested_and_disconnected_after_confirmation(service, page):
    proc, url = mcp_server()
    try:
        sign_in_admin(service, page, "integrations")
        expect(page.get_by_text("No integration is connected.")).to_be_visible()
        page.get_by_label("Name").fill("wiki")
        page.get_by_label("MCP endpoint URL").fill(url)
        page.get_by_role("button", name="Connect").click()
        expect(page.get_by_role("status")).to_have_text("wiki is connected.")
        page.get_by_role("button", name="Test: wiki").click()
        expect(page.get_by_role("status")).to_have_text(re.compile(r"wiki answered with \d+ tool"))
        # Each tool with what its server says of it, and whether it runs, asks or is blocked.
        expect(page.get_by_role("row").filter(has_text="wiki_search")).to_contain_text("only reads")
        note = page.get_by_role("row").filter(has_text="wiki_create_note")
        expect(note).to_contain_text("may change things")
        policy = page.get_by_label("Policy: wiki_create_note")
        expect(policy).to_have_value("default")
        expect(policy.locator("option:checked")).to_have_text("Default: asks the member")
        policy.select_option("block")
        expect(page.get_by_role("status").filter(has_text="wiki_create_note")).to_have_text("wiki_create_note: blocked.")
        # The rule is stored: the next test of the server shows it.
        page.get_by_role("button", name="Test: wiki").click()
        expect(page.get_by_label("Policy: wiki_create_note")).to_have_value("block")
        page.get_by_label("Policy: wiki_create_note").select_option("default")
        expect(page.get_by_role("status").filter(has_text="wiki_create_note")).to_have_text("wiki_create_note: asks the member.")
        page.once("dialog", lambda d: d.accept())
        page.get_by_role("button", name="Disconnect: wiki").click()
        expect(page.get_by_role("status")).to_have_text("wiki is disconnected.")
        listed = service.admin("integration", "list", "--org", "org_default")
        assert listed == ""
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_per_user_integration_is_tested_with_the_token_the_admin_stores(service, page):
    proc, url = mcp_server("--token", "e2e-token")
    try:
        sign_in_admin(service, page, "integrations")
        page.get_by_label("Name").fill("crm")
        page.get_by_label("MCP endpoint URL").fill(url)
        page.get_by_label("Credentials").select_option("per_user")
        page.get_by_role("button", name="Connect").click()
        expect(page.get_by_role("status")).to_have_text("crm is connected.")
        # Without a token of the admin's own, the test says so in words (409).
        page.get_by_role("button", name="Test: crm").click()
        expect(page.get_by_role("alert")).to_have_text(re.compile("no credential"))
        page.get_by_label("Integration", exact=True).select_option("crm")
        expect(page.get_by_label("Member's user id (yours by default)")).to_have_value("usr_default")
        page.get_by_label("Token", exact=True).fill("e2e-token")
        page.get_by_role("button", name="Store token").click()
        expect(page.get_by_role("status")).to_have_text(re.compile("The token for crm is stored"))
        expect(page.get_by_label("Token", exact=True)).to_have_value("")
        page.get_by_role("button", name="Test: crm").click()
        expect(page.get_by_role("status")).to_have_text(re.compile(r"crm answered with \d+ tool"))
        page.get_by_role("button", name="Holders: crm").click()
        expect(page.get_by_role("heading", name="Members holding a credential for crm")).to_be_visible()
        assert "e2e-token" not in page.content()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_limits_are_saved_and_the_audit_log_lists_changes_by_action(service, page):
    sign_in_admin(service, page, "usage")
    expect(page.get_by_text("(no quota)")).to_be_visible()
    page.get_by_label("Monthly question quota").fill("250")
    page.get_by_label("Monthly cost cap (US dollars)").fill("12.5")
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_role("status")).to_have_text(re.compile("The limits are saved"))
    expect(page.get_by_text("0 of 250")).to_be_visible()
    expect(page.get_by_text("$0.00 of $12.50")).to_be_visible()
    shown = json.loads(service.admin("--json", "org", "show", "--org", "org_default"))
    assert (shown["monthlyQueryQuota"], shown["costCapUsd"]) == (250, 12.5)
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Audit log").click()
    expect(page).to_have_url(f"{service.base}/admin/audit")
    newest = page.locator("tbody tr").first
    expect(newest).to_contain_text("Set the usage limits")
    expect(newest).to_contain_text("quota 250 questions, cap $12.50 a month")
    expect(newest).to_contain_text("usr_default")
    page.get_by_label("Action").select_option("member.added")
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr")).to_contain_text("Added a member")


def test_the_audit_log_names_people_says_what_changed_and_calls_the_cli_the_command_line(service, page):
    add_member(service, "usr_bob", "bob@example.org")
    add_member(service, "usr_default", "ann@example.org", "admin")
    sign_in_admin(service, page)
    page.get_by_role("button", name="Make admin: bob@example.org").click()
    expect(page.get_by_role("status")).to_have_text("bob@example.org is now an admin.")
    page.goto(f"{service.base}/admin/audit")
    role_change = page.get_by_role("row", name=re.compile("Changed a role"))
    expect(role_change).to_contain_text("viewer → admin")
    expect(role_change.get_by_role("cell").nth(2)).to_have_text("bob@example.orgusr_bob")
    expect(role_change.get_by_role("cell").nth(3)).to_have_text("ann@example.orgusr_default")
    added = page.get_by_role("row", name=re.compile("Added a member")).filter(has_text="usr_bob")
    expect(added.get_by_role("cell").nth(3)).to_have_text("Command line")
    expect(page.get_by_role("cell", name=re.compile("^admin$"))).to_have_count(0)


def test_the_admin_area_works_from_the_keyboard(service, page):
    add_member(service, "usr_kim", "kim@example.org")
    page.goto(service.first_link())
    admin_link = page.get_by_role("link", name="Admin")
    admin_link.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Members")).to_be_visible()
    button = page.get_by_role("button", name="Make admin: kim@example.org")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_have_text("kim@example.org is now an admin.")
    sections = page.get_by_role("navigation", name="Admin")
    sections.get_by_role("link", name="Usage").focus()
    page.keyboard.press("Enter")
    # Once the month's usage has loaded (the form waits for it).
    expect(page.get_by_text("(no quota)")).to_be_visible()
    page.get_by_label("Monthly question quota").focus()
    page.keyboard.type("9")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_have_text(re.compile("The limits are saved"))
