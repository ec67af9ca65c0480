"""Answers that appear as they are written, in Chromium against the real binary: while the
fake provider streams an answer one word every 250 ms, its draft shows and grows on screen, and
the first words show within 1.5 s of the provider's first word (the median of five turns). The
same answer from a provider that does not stream is the figure before drafts: its first words
show only once it is whole. Both are printed (docs/performance.md quotes them)."""

import statistics

from playwright.sync_api import expect

from conftest import Service
from fake_openai import FakeOpenAi
from test_app import ask, wait_answered

# Resolves with the wall-clock instant (ms) the first words of an answer are on screen.
WATCH = """() => { window.__firstWords = new Promise((resolve) => {
  const shown = () => [...document.querySelectorAll('article.agent .markdown')]
    .some((e) => e.textContent.includes('Answer'));
  const observer = new MutationObserver(() => {
    if (shown()) { observer.disconnect(); resolve(Date.now()); }
  });
  observer.observe(document.body, { subtree: true, childList: true, characterData: true });
}); }"""


def first_words_seconds(browser, stream: bool, turns: int) -> list:
    """For each of `turns` new chats, seconds from the provider's first word to the app's."""
    fake = FakeOpenAi(hold=False, pace=0.25, stream=stream)
    service = Service(env=fake.env())
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(service.first_link())
        took = []
        for n in range(turns):
            page.get_by_role("button", name="New chat").click()
            expect(page.locator(".examples")).to_be_visible()
            page.evaluate(WATCH)
            ask(page, f"Question {n}")
            if stream:
                # The draft grows word by word before the answer is whole.
                draft = page.locator("article.agent.draft")
                expect(draft).to_contain_text("word3", timeout=10_000)
                expect(draft).not_to_contain_text("word20")
            shown = page.evaluate("window.__firstWords") / 1000
            wait_answered(page)
            expect(page.locator("article.agent .markdown").last).to_contain_text("word20")
            took.append(shown - fake.first_words[n])
        return took
    finally:
        context.close()
        fake.stop()
        service.stop()


def test_a_streamed_answers_first_words_show_within_a_second_and_a_half(browser):
    streamed = first_words_seconds(browser, stream=True, turns=5)
    whole = first_words_seconds(browser, stream=False, turns=3)
    p50, before = statistics.median(streamed), statistics.median(whole)
    print(f"\nfirst words on screen after the provider's first word: p50 {p50:.2f} s streamed "
          f"({', '.join(f'{s:.2f}' for s in streamed)}); {before:.2f} s not streamed "
          f"({', '.join(f'{s:.2f}' for s in whole)})")
    assert p50 <= 1.5, streamed
    assert p50 < before, (streamed, whole)
