"""Daily use in Chromium (issue 29): renaming and finding conversations, copying an answer as
Markdown, retrying a failed or stopped turn, limits and failures said in words, the examples
on the empty page answered from the sample guide, and compressed scripts and JSON."""

import re

from playwright.sync_api import expect

from test_app import ask, wait_answered, wait_until
from test_admin import sign_in_admin


def create(page, service, text: str, settled: bool = False):
    """Starts a conversation; when `settled`, waits for its first turn to end, so that the
    conversations' order (by their last update, which the turn's end moves) is the order they
    were created in."""
    r = page.request.post(
        f"{service.base}/api/managed-agents/session", data={"text": text}, headers={"origin": service.base}
    )
    assert r.status == 200, r.text()
    session = r.json()["id"]
    if not settled:
        return session

    def idle() -> bool:
        t = page.request.get(f"{service.base}/api/managed-agents/transcript", params={"sessionId": session})
        assert t.status in (200, 429), t.text()
        return t.status == 200 and any(e["type"] == "status_idle" for e in t.json()["events"])

    wait_until(page, idle, f"the first turn of {text!r} ending", seconds=20)
    return session


def test_a_conversation_is_renamed_in_place_and_keeps_its_name_after_a_reload(service, page):
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    heading = page.locator("h2.title")
    rename = page.get_by_role("button", name="Rename this conversation")
    # Escape leaves it as it was, and focus goes back to Rename.
    rename.click()
    page.get_by_label("Title").fill("Never mind")
    page.get_by_label("Title").press("Escape")
    expect(heading).to_have_text("How do I cancel a running answer?")
    expect(rename).to_be_focused()
    rename.click()
    page.get_by_label("Title").fill("  Cancelling, explained  ")
    page.get_by_label("Title").press("Enter")
    expect(heading).to_have_text("Cancelling, explained")
    expect(page.get_by_role("navigation", name="Conversations").get_by_role("link")).to_have_text(["Cancelling, explained"])
    expect(page).to_have_title("Cancelling, explained – Knowledge")
    page.reload()
    expect(heading).to_have_text("Cancelling, explained")


def test_a_rename_begun_in_one_conversation_is_left_behind_when_another_is_opened(service, page):
    page.goto(service.first_link())
    ask(page, "Refund policy for annual plans")
    wait_answered(page)
    page.get_by_role("button", name="New chat").click()
    ask(page, "Onboarding checklist")
    wait_answered(page)
    page.get_by_role("button", name="Rename this conversation").click()
    page.get_by_label("Title").fill("Meant for the checklist")
    page.get_by_role("navigation", name="Conversations").get_by_role("link", name="Refund policy for annual plans").click()
    # The other conversation opens with its own title, and no rename of the first under way.
    expect(page.locator("h2.title")).to_have_text("Refund policy for annual plans")
    expect(page.get_by_label("Title")).to_have_count(0)
    expect(page.get_by_role("navigation", name="Conversations").get_by_role("link")).to_have_text(
        ["Onboarding checklist", "Refund policy for annual plans"]
    )


def test_conversations_are_found_by_words_of_their_titles_whatever_their_case(service, page):
    page.goto(service.first_link())
    for text in ("Refund policy for annual plans", "Onboarding checklist", "Annual leave rules"):
        create(page, service, text, settled=True)
    page.reload()
    links = page.get_by_role("navigation", name="Conversations").get_by_role("link")
    expect(links).to_have_count(3)
    find = page.get_by_label("Find a conversation")
    find.fill("annual")
    expect(links).to_have_text(["Annual leave rules", "Refund policy for annual plans"])
    find.fill("ANNUAL refund")
    expect(links).to_have_text(["Refund policy for annual plans"])
    find.fill("holidays")
    expect(links).to_have_count(0)
    expect(page.get_by_role("status")).to_contain_text("No conversation has these words in its title")
    find.fill("")
    expect(links).to_have_count(3)


def test_an_answer_is_copied_as_markdown(service, browser):
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    page.get_by_role("button", name="Copy as Markdown").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("Here is what I found"), copied
    # Markdown, not the rendered text: the emphasis and the quotes are kept.
    assert "**" in copied and "\n> " in copied, copied
    context.close()


def test_a_stopped_turn_is_retried_with_the_same_question(held, page):
    service, agent = held
    page.goto(service.first_link())
    ask(page, "Explain the limits")
    agent.asked()
    page.get_by_role("button", name="Stop").click()
    retry = page.get_by_role("button", name="Retry")
    expect(retry).to_be_visible(timeout=15_000)
    retry.click()
    expect(page.locator("article.user")).to_have_text(["Explain the limits", "Explain the limits"])
    agent.asked()
    # The stopped call is still held at the fake provider: release it too.
    agent.release()
    agent.release()
    expect(page.locator("article.agent")).to_have_text(re.compile("Answer to: Explain the limits"), timeout=15_000)
    expect(retry).to_have_count(0)
    expect(page.get_by_label("Message")).to_be_focused()


def test_a_failed_answer_is_said_in_words_with_retry_and_no_error_code(held, page):
    service, agent = held
    agent.failing = True
    page.goto(service.first_link())
    ask(page, "Will this work?")
    failed = page.locator(".error")
    expect(failed).to_contain_text("The assistant could not finish this answer.", timeout=60_000)
    expect(failed).not_to_contain_text("agent_failed")
    expect(page.locator(".conversation")).not_to_contain_text("agent_failed")
    agent.failing = False
    page.get_by_role("button", name="Retry").click()
    agent.asked()
    agent.release()
    expect(page.locator("article.agent")).to_have_text(re.compile("Answer to: Will this work"), timeout=15_000)


def test_the_limit_on_new_conversations_counts_down_in_words_and_existing_ones_still_work(service, page):
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    # Ten sessions a minute are allowed: use up the rest with the page's own cookie.
    for i in range(9):
        create(page, service, f"question {i}")
    page.get_by_role("button", name="New chat").click()
    ask(page, "One more")
    alert = page.get_by_role("alert")
    expect(alert).to_have_text(re.compile(
        r"You have started the most conversations allowed for now\. You can start a new one in "
        r"\d+ seconds; your existing conversations still work\."
    ))
    shown = alert.text_content()
    expect(alert).not_to_have_text(shown, timeout=5_000)
    # Nothing was created, and the question stays in the box to send again.
    expect(page.get_by_label("Message")).to_have_value("One more")
    # An existing conversation still takes a follow-up.
    page.get_by_role("link", name="How do I cancel a running answer?").click()
    ask(page, "And how do I delete it?")
    expect(page.locator("article.agent")).to_have_count(2, timeout=20_000)


def test_a_message_too_long_to_send_is_said_in_words_not_in_bytes(service, page):
    page.goto(service.first_link())
    page.get_by_label("Message").fill("x" * 300_000)
    page.keyboard.press("Enter")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("too long to send")
    expect(alert).not_to_contain_text("262144")
    expect(alert).not_to_contain_text("bytes")


def test_a_title_cut_at_sixty_characters_ends_with_an_ellipsis(service, page):
    question = "Where are the notes of the meeting about the new office in Lisbon next spring?"
    page.goto(service.first_link())
    ask(page, question)
    wait_answered(page)
    expect(page.locator("h2.title")).to_have_text(question[:60] + "…")
    expect(page).to_have_title(question[:60] + "… – Knowledge")


def test_the_built_in_agent_neither_repeats_the_question_nor_lists_its_sources_twice(service, page):
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    answer = page.locator("article.agent")
    body = answer.locator(".markdown")
    expect(body).not_to_contain_text("You asked")
    expect(body).not_to_contain_text("Sources:")
    sources = answer.locator(".sources li")
    expect(sources.first).to_be_visible()
    listed = sources.all_text_contents()
    assert len(listed) == len(set(listed)), listed
    # Each passage quoted (its section, in bold, and its file) is a source of its own, also
    # two sections of one file.
    quoted = body.evaluate(
        """b => [...b.querySelectorAll('p')].filter(p => p.querySelector('strong') && p.querySelector('code'))
              .map(p => `${p.querySelector('strong').textContent} (${p.querySelector('code').textContent})`)"""
    )
    assert quoted, body.inner_html()
    for passage in quoted:
        assert any(passage in s for s in listed), (passage, listed)


def test_two_sections_of_one_file_quoted_in_an_answer_are_two_sources(service, page):
    page.goto(service.first_link())
    ask(page, "rate limits of sessions and messages")
    wait_answered(page)
    answer = page.locator("article.agent")
    expect(answer.locator(".sources li").first).to_be_visible()
    quoted = answer.locator(".markdown").evaluate(
        """b => [...b.querySelectorAll('p')].filter(p => p.querySelector('strong') && p.querySelector('code'))
              .map(p => [p.querySelector('strong').textContent, p.querySelector('code').textContent])"""
    )
    files = [f for _, f in quoted]
    assert len(files) > len(set(files)), f"the question should quote two sections of one file: {quoted}"
    listed = answer.locator(".sources li").all_text_contents()
    for heading, file in quoted:
        assert any(f"{heading} ({file})" in s for s in listed), (heading, file, listed)


def test_every_example_on_the_empty_page_is_answered_from_the_sample_guide(service, page):
    page.goto(service.first_link())
    expect(page.locator(".examples button")).to_have_count(3)
    examples = page.locator(".examples button").all_text_contents()
    for example in examples:
        page.get_by_role("button", name="New chat").click()
        page.get_by_role("button", name=example).click()
        wait_answered(page)
        answer = page.locator("article.agent")
        expect(answer).to_contain_text("Here is what I found", timeout=20_000)
        expect(answer.locator(".sources li").first).to_be_visible()


def test_scripts_and_json_arrive_compressed(service, page):
    encodings = {}

    def seen(r):
        kind = r.request.resource_type
        if kind in ("script", "stylesheet") or "/transcript" in r.url:
            encodings.setdefault(kind if kind != "fetch" else "transcript", set()).add(r.all_headers().get("content-encoding"))

    page.on("response", seen)
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    # Chromium accepts br and gzip: the script and the style sheet arrive in brotli (made at
    # build time), and a transcript page with the answer in gzip (made per answer).
    assert encodings.get("script") == {"br"}, encodings
    assert encodings.get("stylesheet") == {"br"}, encodings
    assert "gzip" in encodings.get("transcript", set()), encodings


def test_single_sign_on_saved_off_says_so_and_a_failed_test_is_warned_about(service, page):
    # The test of an issuer that does not answer is a 502, on purpose.
    page.expected_statuses.add(502)
    # The stored settings are held back: until they arrive there is no form to type into, so
    # nothing typed is overwritten by them.
    held = []
    page.route(
        "**/api/admin/sso",
        lambda route: held.append(route) if route.request.method == "GET" and not held else route.continue_(),
    )
    sign_in_admin(service, page, "sso")
    expect(page.get_by_role("region", name="Single sign-on").get_by_text("Loading…")).to_be_visible()
    wait_until(page, lambda: held, "the settings' read held")
    expect(page.get_by_label("Issuer URL")).to_have_count(0)
    held[0].continue_()
    page.get_by_label("Issuer URL").fill("http://127.0.0.1:9/not-a-provider")
    page.get_by_label("Client ID").fill("knowledge")
    page.get_by_label("Client secret").fill("secret")
    page.get_by_role("button", name="Test issuer").click()
    expect(page.get_by_role("alert")).to_be_visible()
    page.get_by_role("button", name="Save").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("saved, and off")
    expect(alert).to_contain_text("failed its test")
    # Saved again without a failed test: said as done, and off.
    page.get_by_label("Issuer URL").fill("http://127.0.0.1:9/another")
    page.get_by_label("Client secret").fill("secret")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text(
        "Single sign-on is saved, and off: members sign in with it once you turn it on."
    )
