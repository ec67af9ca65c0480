"""The pictures in docs/app/, taken by the app in Chromium against the real binary: a
conversation in light and dark, the same on a phone, and the admin panel. `scripts/screenshots`
runs this with `KNOWLEDGE_SCREENSHOTS=docs/app` to remake them; in the test run they go to a
temporary folder, so the script is tested with the suite."""

import os
import tempfile
from pathlib import Path

from playwright.sync_api import expect

from test_app import ask, wait_answered

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_documentation_screenshots_are_taken(service, browser):
    service.admin("member", "add", "--org", "org_default", "--user", "usr_ann", "--role", "admin",
                  "--user-name", "ann@example.com")
    service.admin("member", "add", "--org", "org_default", "--user", "usr_bob", "--role", "viewer",
                  "--user-name", "bob@example.com")
    scratch = tempfile.TemporaryDirectory()
    out = Path(os.environ.get("KNOWLEDGE_SCREENSHOTS") or scratch.name)
    out.mkdir(parents=True, exist_ok=True)
    taken = []
    for scheme, width, height, name, questions in (
        ("light", 1280, 800, "chat-light.png", ("What are the rate limits?", "How do I cancel a running answer?")),
        ("dark", 1280, 800, "chat-dark.png", ("How do I rename a conversation?", "How do I find a conversation?")),
        ("light", 390, 844, "chat-phone.png", ("How do I copy an answer?",)),
    ):
        context = browser.new_context(color_scheme=scheme, viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto(service.link())
        for n, question in enumerate(questions):
            ask(page, question)
            expect(page.locator("article.agent")).to_have_count(n + 1, timeout=20_000)
            wait_answered(page)
        page.get_by_label("Message").focus()
        page.screenshot(path=str(out / name))
        taken.append(name)
        if scheme == "light" and width > 600:
            page.goto(f"{service.base}/admin/members")
            expect(page.get_by_role("row").filter(has_text="ann@example.com")).to_be_visible()
            page.screenshot(path=str(out / "admin-members.png"))
            taken.append("admin-members.png")
        context.close()
    for name in taken:
        data = (out / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, name
    scratch.cleanup()
