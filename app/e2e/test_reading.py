"""What a member reads of the organisation's documents, in Chromium against the real binary: a
search from the sidebar, its results (document, collection, headings, the words marked, a
passage's markup shown as text), a result opened at its passage (marked, in view, focused), the
passages before and after it read on request and as the reader scrolls, the original downloaded;
a member outside a collection's group finding nothing of it and told a document of it cannot be
opened; citation markers in an answer (a fake OpenAI server writes them) as numbered links that
open the passage, the passages cited listed under the answer, one of a deleted document "No
longer available", a marker in code left as written; and the search, a document and an answer
with citations scanned by axe, light and dark, at 1280 and 375 px, nothing wider than the window
and the window never scrolled."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from conftest import Service
from fake_openai import FakeOpenAi
from test_admin import add_member
from test_app import ask, axe_violations, wait_answered
from test_documents import Api, wait_indexed
from test_newcomer import scroll_to_the_end, wider_than_the_window

GONE = "This document was deleted, or you may no longer open it."
UNIQUE = "zephyrine"
# Sections of about 270 words, each a passage of its own; one of them, far in, holds UNIQUE, so
# that its window starts after the document's start and ends before its end.
SECTIONS = 80
TARGET = 45


def manual() -> bytes:
    parts = ["# Manual\n"]
    for k in range(1, SECTIONS + 1):
        body = " ".join([f"Routine text of section {k} about the ordinary running of the office."] * 24)
        extra = f" The {UNIQUE} procedure starts here." if k == TARGET else ""
        parts.append(f"## Section {k}\n\n{body}{extra}\n")
    return "\n".join(parts).encode()


MANUAL = manual()
# Markup in a passage is text: the results show it as written, and none of it runs.
HOSTILE = b'Zanzibar notes: <img src=x onerror="window.pwned=1"> <b>bold</b> <script>window.pwned=2</script>\n'


def sign_in(service, page, user: str):
    page.goto(service.link(user=user))
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def search_from_the_sidebar(page, words: str):
    box = page.get_by_role("search", name="Documents").get_by_label("Search documents")
    box.fill(words)
    box.press("Enter")
    expect(page.get_by_role("heading", name="Search documents")).to_be_focused()


def passage_of(api: Api, collection: str, words: str) -> int:
    results = api.ok("GET", f"/api/search?q={words}&collection={collection}")["results"]
    return results[0]["passage"]


def test_a_member_searches_opens_a_result_at_its_passage_and_downloads_the_original(service, page):
    api = Api(service)
    collection = api.collection("Manuals")
    api.upload(collection, "manual.md", MANUAL)
    api.upload(collection, "hostile.txt", HOSTILE)
    wait_indexed(page, api, collection, 2)
    add_member(service, "usr_ann", "ann@example.org")
    sign_in(service, page, "usr_ann")

    search_from_the_sidebar(page, f"{UNIQUE.upper()} procedure")
    expect(page).to_have_title("Search documents – Knowledge")
    first = page.locator(".results .result").first
    title = first.get_by_role("link")
    expect(title).to_have_text("manual.md")
    expect(first.locator(".collection")).to_have_text("Manuals")
    expect(first.locator(".headings")).to_have_text(re.compile(f"· Manual › Section {TARGET}$"))
    expect(first.locator("mark").first).to_have_text(UNIQUE)
    href = title.get_attribute("href")
    n = int(re.fullmatch(rf"/#/documents/{collection}/doc_[0-9a-f]{{32}}\?passage=(\d+)", href).group(1))
    assert n == passage_of(api, collection, UNIQUE)

    title.click()
    cited = page.locator(f"#passage-{n}")
    expect(cited).to_be_focused()
    expect(cited).to_have_class(re.compile(r"\bcited\b"))
    expect(cited).to_contain_text(f"The {UNIQUE} procedure starts here.")
    expect(cited).to_contain_text(f"Manual › Section {TARGET}")
    expect(cited).to_be_in_viewport()
    expect(page.get_by_role("heading", name="manual.md", level=1)).to_be_visible()
    expect(page.locator(".document-facts")).to_contain_text("In Manuals")
    expect(page).to_have_title("manual.md – Knowledge")
    # The window around it: neither the document's start nor its end yet.
    expect(page.locator("#passage-0")).to_have_count(0)
    expect(page.locator(f"#passage-{n - 5}")).to_have_count(1)
    # Earlier passages on request, put above what the reader sees, which stays where it was.
    earlier = page.get_by_role("button", name="Show earlier passages")
    earlier.scroll_into_view_if_needed()
    seen = page.locator(f"#passage-{n - 5}")
    at = seen.bounding_box()["y"]
    earlier.click()
    expect(page.locator(f"#passage-{max(0, n - 35)}")).to_have_count(1)
    assert abs(seen.bounding_box()["y"] - at) < 2, (at, seen.bounding_box())
    # Later ones as the reader scrolls to the end of what is loaded, to the document's end.
    document = href.split("/")[4].split("?")[0]
    total = api.ok("GET", f"/api/documents/{collection}/{document}")["passages"]
    last = page.locator(f"#passage-{total - 1}")
    passages = page.locator(".passages li")
    for _ in range(total // 30 + 1):
        if last.count():
            break
        shown = passages.count()
        page.locator(".document-page .end").scroll_into_view_if_needed()
        expect(passages).not_to_have_count(shown)
    expect(last).to_have_count(1)
    expect(page.get_by_role("button", name="Show more")).to_have_count(0)

    # The original, as uploaded.
    with page.expect_download() as download:
        page.get_by_role("link", name="Download original").click()
    assert download.value.suggested_filename == "manual.md"
    assert Path(download.value.path()).read_bytes() == MANUAL

    # Back to the results; then a passage's markup, shown as written and never run.
    page.go_back()
    expect(page.locator(".results .result").first.get_by_role("link")).to_have_text("manual.md")
    page.get_by_label("Search for").fill("zanzibar")
    page.get_by_label("Search for").press("Enter")
    result = page.locator(".results .result").first
    expect(result.get_by_role("link")).to_have_text("hostile.txt")
    expect(result.locator(".snippet")).to_contain_text('<img src=x onerror="window.pwned=1"> <b>bold</b>')
    expect(result.locator(".snippet mark")).to_have_text("Zanzibar")
    expect(page.locator(".results img, .results script, .results b")).to_have_count(0)
    assert page.evaluate("window.pwned") is None


def test_a_member_outside_the_collections_group_finds_nothing_and_cannot_open_its_documents(service, page):
    api = Api(service)
    add_member(service, "usr_ann", "ann@example.org")
    add_member(service, "usr_bob", "bob@example.org")
    finance = api.group("Finance", ["usr_ann"])
    collection = api.collection("Finance only", groups=[finance])
    budget = api.upload(collection, "budget.md", b"# Budget\n\nThe quarterly zebra budget is for Finance alone.\n")
    wait_indexed(page, api, collection, 1)
    # What Bob may not open answers 404, which the page says in words.
    page.expected_statuses.add(404)

    sign_in(service, page, "usr_bob")
    search_from_the_sidebar(page, "quarterly zebra budget")
    # The search has answered (hybrid search may find the nearest passages of what Bob may
    # open, by meaning), and nothing of the budget is among them.
    expect(page.get_by_role("status")).to_contain_text("“quarterly zebra budget”")
    expect(page.get_by_role("link", name="budget.md")).to_have_count(0)
    expect(page.get_by_text("The quarterly zebra budget is for Finance alone.")).to_have_count(0)
    page.goto(f"{service.base}/#/documents/{collection}/{budget}?passage=0")
    expect(page.get_by_text(GONE)).to_be_visible()
    expect(page.get_by_role("link", name="Download original")).to_have_count(0)
    expect(page.get_by_text("quarterly zebra")).to_have_count(0)

    # Ann, in the group, finds it and opens it.
    page.context.clear_cookies()
    sign_in(service, page, "usr_ann")
    search_from_the_sidebar(page, "quarterly zebra budget")
    page.locator(".results .result").first.get_by_role("link", name="budget.md").click()
    expect(page.locator("#passage-0")).to_contain_text("The quarterly zebra budget is for Finance alone.")


@pytest.fixture
def answering():
    """A service whose agent, a fake OpenAI server, answers at once "Answer to: <the question>"."""
    fake = FakeOpenAi(hold=False)
    service = Service(env=fake.env())
    yield service
    fake.stop()
    service.stop()


def test_citations_in_an_answer_open_their_passage_and_one_to_a_deleted_document_says_so(answering, page):
    service = answering
    api = Api(service)
    collection = api.collection("Manuals")
    document = api.upload(collection, "manual.md", MANUAL)
    old = api.upload(collection, "old.md", b"# Old\n\nAn old note about the car park.\n")
    wait_indexed(page, api, collection, 2)
    n = passage_of(api, collection, UNIQUE)
    marker = f"[[cite:{collection}/{document}#{n}]]"
    gone = f"[[cite:{collection}/{old}#0]]"
    api.ok("DELETE", f"/api/admin/collections/{collection}/documents/{old}")
    # The name of the deleted document is asked for, and answers 404.
    page.expected_statuses.add(404)

    page.goto(service.first_link())
    # The fake answers "Answer to: <the question>", so the question writes the answer.
    ask(page, f"Quote {marker}, then {gone}, and {marker} again; in code it stays `{marker}`.")
    wait_answered(page)
    answer = page.locator("article.agent")
    links = answer.locator(".markdown a.citation")
    expect(links).to_have_text(["[1]", "[2]", "[1]"])
    expect(links.first).to_have_attribute("href", f"/#/documents/{collection}/{document}?passage={n}")
    expect(links.first).not_to_have_attribute("target", "_blank")
    expect(answer.locator(".markdown code")).to_have_text(marker)
    expect(answer.locator(".markdown")).not_to_contain_text(f"{marker},")
    cited = answer.locator(".cited-sources li")
    expect(cited).to_have_count(2)
    expect(cited.nth(0)).to_have_text(f"[1] manual.md in Manuals, passage {n + 1}")
    expect(cited.nth(0).get_by_role("link", name="manual.md")).to_have_attribute("href", f"/#/documents/{collection}/{document}?passage={n}")
    expect(cited.nth(1)).to_have_text("[2] No longer available")
    expect(cited.nth(1).get_by_role("link")).to_have_count(0)

    # The number opens the passage in the app, marked, in view and focused.
    conversation = page.url
    links.first.click()
    passage = page.locator(f"#passage-{n}")
    expect(passage).to_be_focused()
    expect(passage).to_have_class(re.compile(r"\bcited\b"))
    expect(passage).to_be_in_viewport()
    expect(passage).to_contain_text(f"The {UNIQUE} procedure starts here.")
    page.go_back()
    expect(page).to_have_url(conversation)
    # The deleted document's number says it cannot be opened.
    answer.locator(".markdown a.citation").nth(1).click()
    expect(page.get_by_text(GONE)).to_be_visible()


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_search_a_document_and_citations_have_no_serious_accessibility_finding(service, browser, width, scheme):
    api = Api(service)
    collection = api.collection("Manuals with a name long enough to wrap on a phone")
    document = api.upload(collection, "a-manual-with-a-long-file-name-that-must-wrap.md", MANUAL)
    context = browser.new_context(bypass_csp=True, color_scheme=scheme, viewport={"width": width, "height": 800})
    page = context.new_page()
    wait_indexed(page, api, collection, 1)
    n = passage_of(api, collection, UNIQUE)
    page.goto(service.first_link())
    expect(page.get_by_label("Message")).to_be_visible()
    phone = width < 600
    frame = page.get_by_role("button", name="Conversations" if phone else "New chat")
    found = {}

    def check(name: str):
        if violations := axe_violations(page):
            found[name] = violations
        # (Code and a tool's input and output scroll sideways in their own box, by design.)
        if wide := [w for w in wider_than_the_window(page) if not w.startswith("pre:")]:
            found[f"{name}: wider than the window"] = wide
        if moved := scroll_to_the_end(page, frame):
            found[f"{name}: the window scrolled"] = moved

    # The built-in agent answers from the sample guide with citations.
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    expect(page.locator("article.agent .cited-sources li").first.get_by_role("link")).to_be_visible()
    check("an answer with citations")
    if phone:
        page.get_by_role("button", name="Conversations").click()
    search_from_the_sidebar(page, f"{UNIQUE} procedure")
    expect(page.locator(".results .result mark").first).to_be_visible()
    check("search results")
    page.goto(f"{service.base}/#/documents/{collection}/{document}?passage={n}")
    expect(page.locator(f"#passage-{n}")).to_be_focused()
    check("a document at a passage")
    context.close()
    assert found == {}, found
