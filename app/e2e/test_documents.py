"""The admin's Documents page in Chromium, against the real binary: a collection created (every
member, then chosen groups), files sent by the file chooser and dropped, each with its progress
and then its status as it changes until indexed; a broken PDF failed with its reason; a file over
the limit refused before it is sent and one the service does not read refused by it, both in
words; a document replaced and one deleted (only after confirming), the storage meter following;
the list read every 2 s while a document is on its way and not once they are all settled; the
collection deleted after confirming; each change in the audit log. And the page, opened on a
collection, scanned by axe light and dark at 1280 and 375 px, nothing wider than the window.

The helpers here (the admin API over HTTP, an upload as the app makes it, a wait until indexed)
serve test_reading.py too."""

import json
import re
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from conftest import Service
from test_admin import add_member, audit_actions, sign_in_admin
from test_app import axe_violations, wait_until
from test_newcomer import scroll_to_the_end, wider_than_the_window

MIB = 1 << 20


class Api:
    """The service's API over HTTP as `user` (an admin unless said), with the cookie the
    command line prints and the Origin the service requires of a change."""

    def __init__(self, service, user: str = "usr_default"):
        self.base = service.base
        self.cookie = service.admin("cookie", "--org", "org_default", "--user", user)

    def call(self, method: str, path: str, body=None, data: bytes | None = None) -> tuple[int, dict | None]:
        headers = {"cookie": self.cookie, "origin": self.base}
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        elif data is not None:
            headers["content-type"] = "application/octet-stream"
        req = urllib.request.Request(f"{self.base}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, json.loads(text) if text else None

    def ok(self, method: str, path: str, body=None) -> dict:
        status, answer = self.call(method, path, body)
        assert 200 <= status < 300, (method, path, status, answer)
        return answer

    def collection(self, name: str, groups: list[str] | None = None) -> str:
        access = {"kind": "groups", "groups": groups} if groups else {"kind": "everyone"}
        return self.ok("POST", "/api/admin/collections", {"name": name, "description": "", "access": access})["id"]

    def upload(self, collection: str, name: str, data: bytes) -> str:
        """Announces `name` and sends its bytes where the answer says, as the app does."""
        started = self.ok("POST", f"/api/admin/collections/{collection}/documents", {"name": name, "bytes": len(data)})
        assert started["upload"]["method"] == "PUT", started
        status, answer = self.call("PUT", started["upload"]["url"], data=data)
        assert status == 200, (status, answer)
        return started["document"]["id"]

    def documents(self, collection: str) -> list[dict]:
        return self.ok("GET", f"/api/admin/collections/{collection}/documents")["documents"]

    def group(self, name: str, members: list[str]) -> str:
        group = self.ok("POST", "/api/admin/groups", {"displayName": name})["id"]
        for user in members:
            self.ok("PUT", f"/api/admin/groups/{group}/members/{user}")
        return group


def wait_indexed(page, api: Api, collection: str, count: int, seconds: int = 20):
    """Lets the page's events in until `count` documents of `collection` are indexed (the two
    workers of the local service take a second or two)."""
    wait_until(
        page,
        lambda: sum(d["status"] == "indexed" for d in api.documents(collection)) >= count,
        f"{count} documents indexed",
        seconds,
    )


GUIDE = b"""# Handbook

## Holidays

Everyone takes twenty-five days of holiday a year, booked in the team calendar.

## Expenses

Receipts go to finance within a month of the purchase.
"""
NOTES = b"Plain notes about the quarterly review, in a text file.\n"
PAGE = b"""<!doctype html><html><head><title>Office</title></head><body>
<h1>Office</h1><h2>Opening hours</h2><p>The office opens at eight and closes at six.</p>
</body></html>"""
# Says it is a PDF, and is not one: accepted as sent, then failed by the parser with a reason.
BROKEN_PDF = b"%PDF-1.4\nnot really a pdf at all\n%%EOF\n"


def file(name: str, data: bytes, mime: str = "application/octet-stream") -> dict:
    return {"name": name, "mimeType": mime, "buffer": data}


def drop(page, target, files: list[tuple[str, bytes]]):
    """Drops `files` on `target` as a person dragging them from their desktop does: a drop event
    carrying a DataTransfer that holds them."""
    transfer = page.evaluate_handle(
        """files => {
            const t = new DataTransfer();
            for (const [name, bytes] of files) t.items.add(new File([new Uint8Array(bytes)], name));
            return t;
        }""",
        [[name, list(data)] for name, data in files],
    )
    target.dispatch_event("dragenter", {"dataTransfer": transfer})
    target.dispatch_event("dragover", {"dataTransfer": transfer})
    target.dispatch_event("drop", {"dataTransfer": transfer})


def status_cell(page, name: str):
    return page.get_by_role("table", name=re.compile("^Documents of")).get_by_role("row", name=re.compile(f"^{re.escape(name)}")).locator(
        'td[data-label="Status"]'
    )


@pytest.fixture
def small():
    """A service whose files may be at most 1 MiB."""
    s = Service(env={"KNOWLEDGE_MAX_FILE_MIB": "1"})
    yield s
    s.stop()


def test_an_admin_uploads_files_and_watches_them_indexed_replaces_and_deletes_them(small, page):
    service = small
    api = Api(service)
    # Every read of a collection's document list the page makes.
    reads = []
    page.on("request", lambda r: r.method == "GET" and re.search(r"/api/admin/collections/[^/]+/documents$", r.url) and reads.append(r.url))
    page.clock.install()
    # The local service mirrors its docs folder (docs/guide) as a collection: read-only here.
    base = api.ok("GET", "/api/admin/collections")["storage"]["usedBytes"]
    sign_in_admin(service, page, "documents")
    expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()
    expect(page.get_by_text(re.compile(r" of 100 GB; a file may be at most 1 MB\.$"))).to_be_visible()
    expect(page.get_by_label("Storage used")).to_have_attribute("value", str(base))
    guide = page.get_by_role("row", name=re.compile("^guide"))
    expect(guide).to_contain_text("mirrored from a folder, read-only")
    expect(guide.get_by_role("button", name="Delete: guide")).to_have_count(0)
    guide.get_by_role("button", name="Documents: guide").click()
    mirrored = page.get_by_role("table", name="Documents of guide")
    expect(mirrored.get_by_role("row", name=re.compile("^cancelling.md"))).to_contain_text("Indexed")
    expect(page.get_by_text("This collection mirrors a folder: its documents change when the folder does, not here.")).to_be_visible()
    expect(page.get_by_label("Files to upload")).to_have_count(0)
    expect(mirrored.get_by_role("button")).to_have_count(0)
    page.get_by_role("button", name="Close the documents of guide").click()
    expect(page.get_by_role("button", name="Documents: guide")).to_be_focused()

    page.get_by_role("button", name="New collection").click()
    expect(page.get_by_role("heading", name="New collection")).to_be_focused()
    page.get_by_label("Name", exact=True).fill("Handbook")
    page.get_by_label("Description").fill("How we work")
    expect(page.get_by_label("Every member")).to_be_checked()
    page.get_by_role("button", name="Create collection").click()
    expect(page.get_by_role("status")).to_have_text("The collection Handbook was created.")
    row = page.get_by_role("row", name=re.compile("^Handbook"))
    expect(row).to_contain_text("Every member")
    expect(row).to_contain_text("How we work")
    expect(page.get_by_role("button", name="New collection")).to_be_focused()

    page.get_by_role("button", name="Documents: Handbook").click()
    expect(page.get_by_role("heading", name="Documents of Handbook")).to_be_focused()
    expect(page.get_by_text("No documents in this collection yet.")).to_be_visible()
    # Two files through the file chooser, the third dropped on the drop zone. The first one's
    # bytes are held on their way: each file has its own bar meanwhile.
    held = []
    sending = re.compile(r"/documents/doc_[0-9a-f]{32}/original\?generation=\d+$")
    page.route(sending, lambda route: route.continue_() if held else held.append(route))
    with page.expect_file_chooser() as chooser:
        page.get_by_label("Files to upload").click()
    chooser.value.set_files([file("guide.md", GUIDE, "text/markdown"), file("notes.txt", NOTES, "text/plain")])
    drop(page, page.locator(".dropzone"), [("office.html", PAGE)])
    bars = page.get_by_role("list", name="Files being sent").get_by_role("progressbar")
    expect(bars).to_have_count(3)
    for name in ("guide.md", "notes.txt", "office.html"):
        expect(page.get_by_role("progressbar", name=name)).to_be_visible()
    wait_until(page, lambda: len(held) == 1, "the first file sent")
    expect(status_cell(page, "guide.md")).to_have_text("Uploading")
    held[0].continue_()
    for name in ("guide.md", "notes.txt", "office.html"):
        expect(status_cell(page, name)).to_have_text("Indexed", timeout=20_000)
    table = page.get_by_role("table", name="Documents of Handbook")
    expect(table.get_by_role("row", name=re.compile("^guide.md"))).to_contain_text(f"{len(GUIDE)} bytes")
    collection = next(c for c in api.ok("GET", "/api/admin/collections")["collections"] if c["name"] == "Handbook")["id"]
    stored = {d["name"]: d for d in api.documents(collection)}
    assert {d["status"] for d in stored.values()} == {"indexed"}, stored
    for name, d in stored.items():
        expect(table.get_by_role("row", name=re.compile(f"^{re.escape(name)}")).locator('td[data-label="Passages"]')).to_have_text(str(d["passages"]))
    # No bar is left once every file is sent, and the storage meter counts them.
    expect(page.get_by_role("list", name="Files being sent")).to_have_count(0)
    used = len(GUIDE) + len(NOTES) + len(PAGE)
    expect(page.get_by_label("Storage used")).to_have_attribute("value", str(base + used))

    # Nothing is on its way: the list is not read again, however long the page stays open.
    before = len(reads)
    page.clock.run_for(20_000)
    page.evaluate("1")
    assert len(reads) == before, reads[before:]

    # A PDF that is not one is taken, then fails with a reason a person can act on.
    with page.expect_file_chooser() as chooser:
        page.get_by_label("Files to upload").click()
    chooser.value.set_files([file("broken.pdf", BROKEN_PDF, "application/pdf")])
    expect(status_cell(page, "broken.pdf").locator(".status")).to_have_text("Failed", timeout=20_000)
    reason = next(d for d in api.documents(collection) if d["name"] == "broken.pdf")["reason"]
    assert reason, "a failed document has its reason"
    expect(status_cell(page, "broken.pdf").locator(".reason")).to_have_text(reason)

    # Over the limit: refused before anything is sent, in the words of the service's refusal.
    announced = []
    page.on("request", lambda r: r.method == "POST" and r.url.endswith("/documents") and announced.append(r.url))
    with page.expect_file_chooser() as chooser:
        page.get_by_label("Files to upload").click()
    chooser.value.set_files([file("big.md", b"x" * (MIB + 1), "text/markdown")])
    expect(page.get_by_role("alert")).to_have_text("big.md is too large: a file may be at most 1 MB.")
    assert announced == []
    page.get_by_role("button", name="Dismiss: big.md").click()
    # A format the service does not read, dropped: its refusal, in words that list what it reads.
    drop(page, page.locator(".dropzone"), [("sheet.xls", b"not a sheet")])
    expect(page.get_by_role("alert")).to_have_text(
        "sheet.xls: This format is not read: upload Markdown, text, HTML, PDF or DOCX."
    )
    assert len(announced) == 1
    page.get_by_role("button", name="Dismiss: sheet.xls").click()
    expect(page.get_by_role("alert")).to_have_count(0)

    # Replaced by a new file: its status follows it to indexed again, with the new size.
    generation = stored["guide.md"]["generation"]
    newer = GUIDE + b"\n## Travel\n\nTrains over planes for journeys under five hours.\n"
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Replace: guide.md").click()
    chooser.value.set_files([file("guide.md", newer, "text/markdown")])
    expect(table.get_by_role("row", name=re.compile("^guide.md"))).to_contain_text(f"{len(newer)} bytes")
    expect(status_cell(page, "guide.md")).to_have_text("Indexed", timeout=20_000)
    assert next(d for d in api.documents(collection) if d["name"] == "guide.md")["generation"] == generation + 1

    # Deleted only once confirmed; the storage meter gives its bytes back.
    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Delete: notes.txt").click()
    expect(table.get_by_role("row", name=re.compile("^notes.txt"))).to_have_count(1)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete: notes.txt").click()
    expect(page.locator("#collection-documents").get_by_role("status")).to_have_text("notes.txt was deleted.")
    expect(table.get_by_role("row", name=re.compile("^notes.txt"))).to_have_count(0)
    used = len(newer) + len(PAGE) + len(BROKEN_PDF)
    expect(page.get_by_label("Storage used")).to_have_attribute("value", str(base + used))

    # Opened to a group instead of everyone, picked from the organisation's groups.
    api.group("Finance", [])
    page.reload()
    page.get_by_role("button", name="Edit: Handbook").click()
    expect(page.get_by_role("heading", name="Edit Handbook")).to_be_focused()
    page.get_by_label("Members of the groups chosen").check()
    expect(page.get_by_text("With no group chosen, only admins may open it.")).to_be_visible()
    page.get_by_label("Finance").check()
    expect(page.get_by_text("With no group chosen, only admins may open it.")).to_have_count(0)
    page.get_by_role("button", name="Save collection").click()
    expect(page.get_by_role("status")).to_have_text("The collection Handbook was saved.")
    expect(page.get_by_role("row", name=re.compile("^Handbook"))).to_contain_text("Members of Finance")
    expect(page.get_by_role("button", name="Edit: Handbook")).to_be_focused()

    # The collection, deleted only once confirmed.
    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Delete: Handbook").click()
    expect(page.get_by_role("row", name=re.compile("^Handbook"))).to_have_count(1)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete: Handbook").click()
    expect(page.get_by_role("status")).to_have_text("The collection Handbook was deleted.")
    expect(page.get_by_role("row", name=re.compile("^Handbook"))).to_have_count(0)
    expect(page.get_by_label("Storage used")).to_have_attribute("value", str(base))

    actions = audit_actions(service)
    for action in ("collection.created", "document.added", "document.replaced", "document.deleted", "collection.changed", "collection.deleted"):
        assert action in actions, (action, actions)


def test_the_list_is_read_every_two_seconds_while_a_document_is_on_its_way(service, page):
    api = Api(service)
    collection = api.collection("Policies")
    # Announced and never sent: `uploading`, for the page to wait on.
    api.ok("POST", f"/api/admin/collections/{collection}/documents", {"name": "pending.md", "bytes": 10})
    reads = []
    page.on("request", lambda r: r.method == "GET" and r.url.endswith(f"/collections/{collection}/documents") and reads.append(r.url))
    page.clock.install()
    sign_in_admin(service, page, "documents")
    page.get_by_role("button", name="Documents: Policies").click()
    expect(status_cell(page, "pending.md")).to_have_text("Uploading")
    first = len(reads)
    page.clock.run_for(2_100)
    wait_until(page, lambda: len(reads) > first, "the list read again after 2 s")


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_documents_page_has_no_serious_accessibility_finding(service, browser, width, scheme):
    api = Api(service)
    add_member(service, "usr_ann", "ann@example.org")
    api.group("Engineering", ["usr_ann"])
    collection = api.collection("A collection with a rather long name for a phone's narrow screen")
    api.upload(collection, "guide-with-a-long-file-name-that-must-wrap-on-a-phone.md", GUIDE)
    api.upload(collection, "broken.pdf", BROKEN_PDF)
    context = browser.new_context(bypass_csp=True, color_scheme=scheme, viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto(service.first_link())
    expect(page.get_by_label("Message")).to_be_visible()
    page.goto(f"{service.base}/admin/documents")
    found = {}
    page.get_by_role("button", name=re.compile("^Documents: A collection")).click()
    expect(page.get_by_role("row", name=re.compile("^broken.pdf")).locator(".reason")).to_be_visible(timeout=20_000)
    expect(page.get_by_role("row", name=re.compile("^guide-with")).locator('td[data-label="Status"]')).to_have_text("Indexed", timeout=20_000)
    # A file refused, its bar's place taken by the reason.
    drop(page, page.locator(".dropzone"), [("sheet.xls", b"x")])
    expect(page.get_by_role("alert")).to_be_visible()
    if violations := axe_violations(page):
        found["a collection's documents"] = violations
    page.get_by_role("button", name=re.compile("^Edit: A collection")).click()
    page.get_by_label("Members of the groups chosen").check()
    expect(page.get_by_label("Engineering")).to_be_visible()
    if violations := axe_violations(page):
        found["the collection's form"] = violations
    assert wider_than_the_window(page) == []
    moved = scroll_to_the_end(page, page.get_by_role("link", name="Back to the chat"))
    context.close()
    assert found == {}, found
    assert moved is None, moved
