"""The admin's Groups page in Chromium, against the real binary: a group created, a member added
by userName and taken out, the group renamed and deleted (only after confirmation), every change
in the audit log; a group the identity provider pushed over SCIM shown with its members and no way
to change it; and the page, opened on a group, scanned by axe light and dark at 1280 and 375 px."""

import json
import re
import urllib.request

import pytest
from playwright.sync_api import expect

from test_admin import add_member, audit_actions, sign_in_admin
from test_app import axe_violations
from test_newcomer import wider_than_the_window


def push_over_scim(service) -> str:
    """Sets the default organisation up for SCIM, provisions ann@example.org and pushes the group
    Engineering with her in it, as an identity provider does; returns the group's id."""
    service.admin(
        "sso", "set", "--org", "org_default", "--issuer", "https://idp.example.com", "--client-id", "c",
        stdin="secret\n",
    )
    token = service.admin("scim", "token", "--org", "org_default")

    def post(path: str, body: dict) -> dict:
        req = urllib.request.Request(
            f"{service.base}/api/scim/v2{path}", data=json.dumps(body).encode(), method="POST",
            headers={"authorization": f"Bearer {token}", "content-type": "application/scim+json"},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 201
            return json.load(r)

    core = "urn:ietf:params:scim:schemas:core:2.0:User"
    ann = post("/Users", {"schemas": [core], "userName": "ann@example.org", "active": True})["id"]
    group = post("/Groups", {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "displayName": "Engineering", "externalId": "eng-42", "members": [{"value": ann}],
    })
    return group["id"]


def test_an_admin_creates_a_group_adds_a_member_renames_it_and_deletes_it(service, page):
    add_member(service, "usr_ann", "ann@example.org")
    add_member(service, "usr_bob", "bob@example.org")
    sign_in_admin(service, page, "groups")
    expect(page.get_by_role("heading", name="Groups", exact=True)).to_be_visible()
    expect(page.get_by_text("No groups yet.")).to_be_visible()
    page.get_by_label("Group name").fill("Finance")
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("status")).to_have_text("The group Finance was created.")
    expect(page.get_by_role("row", name=re.compile("^Finance"))).to_contain_text("Admin")
    # A role's name is refused, in words.
    page.get_by_label("Group name").fill("Viewer")
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("alert")).to_have_text(re.compile("^Another group already has this name"))

    # Opened, the group has nobody; Ann is picked by her userName.
    page.get_by_role("button", name="Members: Finance").click()
    expect(page.get_by_role("heading", name="Members of Finance")).to_be_focused()
    expect(page.get_by_text("Nobody is in this group yet.")).to_be_visible()
    picker = page.get_by_label("Member to add", exact=True)
    picker.select_option(label="ann@example.org")
    page.get_by_role("button", name="Add to group").click()
    expect(page.get_by_role("status")).to_have_text("ann@example.org is now in Finance.")
    members = page.get_by_role("table", name="Members of Finance")
    expect(members.locator("tbody tr")).to_have_count(1)
    expect(members).to_contain_text("ann@example.org")
    expect(picker.locator("option", has_text="ann@example.org")).to_have_count(0)
    # Bob is found by a search, added, and taken out again.
    page.get_by_label("Find a member to add").fill("BOB")
    page.get_by_role("button", name="Find", exact=True).click()
    expect(picker.locator("option", has_text="usr_default")).to_have_count(0)
    picker.select_option(label="bob@example.org")
    page.get_by_role("button", name="Add to group").click()
    expect(members.locator("tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Take out of Finance: bob@example.org").click()
    expect(page.get_by_role("status")).to_have_text("bob@example.org is no longer in Finance.")
    expect(members.locator("tbody tr")).to_have_count(1)

    # Renamed in its row; the focus goes back to its Rename button.
    page.get_by_role("button", name="Rename: Finance").click()
    field = page.get_by_label("New name")
    expect(field).to_be_focused()
    field.fill("Finance EMEA")
    page.get_by_role("button", name="Save name").click()
    expect(page.get_by_role("status")).to_have_text("Finance is now called Finance EMEA.")
    expect(page.get_by_role("button", name="Rename: Finance EMEA")).to_be_focused()
    expect(page.get_by_role("heading", name="Members of Finance EMEA")).to_be_visible()

    # Deleted only once confirmed.
    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Delete: Finance EMEA").click()
    expect(page.get_by_role("row", name=re.compile("^Finance EMEA"))).to_have_count(1)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete: Finance EMEA").click()
    expect(page.get_by_role("status")).to_have_text("The group Finance EMEA was deleted.")
    expect(page.get_by_text("No groups yet.")).to_be_visible()
    expect(page.get_by_role("heading", name=re.compile("^Members of"))).to_have_count(0)
    actions = audit_actions(service)
    for action in ("group.created", "group.member_added", "group.member_removed", "group.renamed", "group.deleted"):
        assert action in actions, (action, actions)
    assert actions.count("group.member_added") == 2


def test_a_group_pushed_over_scim_is_shown_with_its_members_and_no_way_to_change_it(service, page):
    push_over_scim(service)
    sign_in_admin(service, page, "groups")
    row = page.get_by_role("row", name=re.compile("^Engineering"))
    expect(row).to_contain_text("SCIM")
    expect(row).to_contain_text("read-only")
    expect(page.get_by_role("button", name="Rename: Engineering")).to_have_count(0)
    expect(page.get_by_role("button", name="Delete: Engineering")).to_have_count(0)
    page.get_by_role("button", name="Members: Engineering").click()
    expect(page.get_by_text(re.compile("The identity provider pushed this group \\(its id there: eng-42\\)"))).to_be_visible()
    members = page.get_by_role("table", name="Members of Engineering")
    expect(members).to_contain_text("ann@example.org")
    expect(members.get_by_role("button")).to_have_count(0)
    expect(page.get_by_label("Member to add", exact=True)).to_have_count(0)
    # Closing gives the focus back to the button that opened it.
    page.get_by_role("button", name="Close the members of Engineering").click()
    expect(page.get_by_role("button", name="Members: Engineering")).to_be_focused()


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_groups_page_has_no_serious_accessibility_finding(service, browser, width, scheme):
    push_over_scim(service)
    add_member(service, "usr_bob", "bob@example.org")
    context = browser.new_context(bypass_csp=True, color_scheme=scheme, viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto(service.first_link())
    expect(page.get_by_label("Message")).to_be_visible()
    page.goto(f"{service.base}/admin/groups")
    page.get_by_label("Group name").fill("Support")
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("status")).to_have_text("The group Support was created.")
    found = {}
    if violations := axe_violations(page):
        found["list"] = violations
    page.get_by_role("button", name="Members: Engineering").click()
    expect(page.get_by_role("table", name="Members of Engineering")).to_be_visible()
    if violations := axe_violations(page):
        found["pushed group"] = violations
    page.get_by_role("button", name="Members: Support").click()
    expect(page.get_by_label("Member to add", exact=True)).to_be_visible()
    page.get_by_role("button", name="Rename: Support").click()
    expect(page.get_by_label("New name")).to_be_focused()
    if violations := axe_violations(page):
        found["admin's group, renaming"] = violations
    # Nothing wider than the window, the phone's screen included.
    assert wider_than_the_window(page) == []
    context.close()
    assert found == {}, found
