"""The assistant's memory in Chromium, against the real binary and a fake OpenAI server that
saves a note when asked to remember something: the member sees the note appear after the turn,
with the conversation it came from, exports everything as JSON, forgets it, and switches
memory off; the next conversation's system prompt holds the note only while it is kept."""

import json
import re

import pytest
from playwright.sync_api import expect

from conftest import Service


@pytest.fixture
def remembering():
    from fake_openai import FakeOpenAi

    fake = FakeOpenAi(hold=False)
    s = Service(env=fake.env())
    yield s, fake
    fake.stop()
    s.stop()


def ask(page, text: str):
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_a_note_appears_after_a_turn_is_exported_and_forgotten(remembering, page, tmp_path):
    service, fake = remembering
    page.goto(service.first_link())
    ask(page, "Remember I prefer metric units")
    expect(page.locator("article").get_by_text(re.compile("^The tool said:"))).to_be_visible(timeout=20_000)
    conversation = page.url

    page.get_by_role("link", name="Memory").click()
    expect(page).to_have_url(f"{service.base}/memory")
    expect(page.get_by_role("heading", name="Memory")).to_be_visible()
    row = page.get_by_role("row", name=re.compile("I prefer metric units"))
    expect(row).to_be_visible()
    expect(row.get_by_role("link", name="in this conversation")).to_have_attribute("href", re.compile(r"^/c/ses_"))

    with page.expect_download() as download:
        page.get_by_role("link", name="Export as JSON").click()
    saved = tmp_path / "memory.json"
    download.value.save_as(saved)
    exported = json.loads(saved.read_text())
    assert [n["text"] for n in exported["notes"]] == ["I prefer metric units"]

    # The next conversation's prompt holds the note while it is kept, and not once forgotten.
    page.goto(service.base)
    ask(page, "How far is Lyon?")
    expect(page.locator("article").get_by_text("Answer to: How far is Lyon?", exact=True)).to_be_visible(timeout=20_000)
    assert "I prefer metric units" in fake.systems[-1]

    page.goto(f"{service.base}/memory")
    page.get_by_role("button", name="Forget: I prefer metric units").click()
    expect(page.get_by_role("status")).to_have_text(re.compile("Forgotten"))
    expect(page.get_by_text("Nothing is remembered.")).to_be_visible()
    page.goto(service.base)
    ask(page, "And Paris?")
    expect(page.locator("article").get_by_text("Answer to: And Paris?", exact=True)).to_be_visible(timeout=20_000)
    assert "metric" not in fake.systems[-1]
    assert conversation.startswith(f"{service.base}/c/")


def test_switched_off_nothing_is_saved_and_everything_can_be_forgotten_after_confirmation(remembering, page):
    service, fake = remembering
    page.goto(service.first_link())
    ask(page, "Remember my team is billing")
    expect(page.locator("article").get_by_text(re.compile("^The tool said:"))).to_be_visible(timeout=20_000)
    page.goto(f"{service.base}/memory")
    switch = page.get_by_label("Let the assistant remember things about me")
    expect(switch).to_be_checked()
    switch.uncheck()
    expect(page.get_by_role("status")).to_have_text(re.compile("Memory is off"))
    page.goto(service.base)
    ask(page, "Remember my manager is Dee")
    expect(page.locator("article").get_by_text("Answer to: Remember my manager is Dee", exact=True)).to_be_visible(timeout=20_000)
    assert "billing" not in fake.systems[-1]
    page.goto(f"{service.base}/memory")
    expect(page.get_by_role("row", name=re.compile("my team is billing"))).to_be_visible()
    expect(page.locator("section.memory").get_by_text("my manager is Dee")).to_have_count(0)
    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_role("row", name=re.compile("my team is billing"))).to_be_visible()
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_role("status")).to_have_text("One note was forgotten.")
    expect(page.get_by_text("Nothing is remembered.")).to_be_visible()
