"""The app as a daily tool (issue 29), in Chromium against the real binary: what a long word
does to the layout, and the tab's title."""

from playwright.sync_api import expect

from test_app import ask, wait_answered


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_a_long_word_in_a_question_and_its_answer_never_makes_the_page_scroll_sideways(service, page):
    page.goto(service.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    viewport = page.evaluate("window.innerWidth")
    word = "https://example.com/" + "a" * 400
    ask(page, f"What is at {word} ?")
    wait_answered(page)
    expect(page.locator("article.user").last).to_contain_text("aaaa")
    assert page_width(page) <= viewport, f"{page_width(page)} px wide in a {viewport} px window"


def test_the_tab_is_titled_after_the_open_conversation(service, page):
    page.goto(service.first_link())
    expect(page).to_have_title("Knowledge")
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    expect(page).to_have_title("How do I cancel a running answer? – Knowledge")
    page.get_by_role("button", name="New chat").click()
    expect(page).to_have_title("Knowledge")
