"""The app as a daily tool (issue 29), in Chromium against the real binary: a layout that holds
(long words, long conversations, the phone), the keyboard, and the tab's title. Each test here
failed before the change it covers."""

from playwright.sync_api import expect

from test_app import ask, wait_answered


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def phone(browser):
    context = browser.new_context(viewport={"width": 375, "height": 740})
    return context, context.new_page()


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


def test_at_the_end_of_a_long_conversation_the_sidebar_stays_in_view(service, page):
    page.goto(service.first_link())
    ask(page, "\n".join(f"Line {i} of a long question" for i in range(300)))
    wait_answered(page)
    # The transcript scrolled to its end, inside its own pane: the window itself never scrolls.
    expect(page.locator("article.agent").last).to_be_in_viewport()
    expect(page.get_by_role("button", name="New chat")).to_be_in_viewport()
    expect(page.get_by_role("button", name="Sign out")).to_be_in_viewport()
    assert page.evaluate("document.scrollingElement.scrollHeight <= window.innerHeight")
    # Nothing of the last answer hides behind the composer that sticks to the pane's bottom.
    bottom = page.locator("article.agent").last.evaluate("e => e.getBoundingClientRect().bottom")
    top = page.locator("form.composer").evaluate("e => e.getBoundingClientRect().top")
    assert bottom <= top + 1, (bottom, top)


def test_focus_comes_back_to_the_message_box_after_send_and_stop_with_the_mouse(held, page):
    service, agent = held
    page.goto(service.first_link())
    box = page.get_by_label("Message")
    box.fill("Hold on a moment")
    page.get_by_role("button", name="Send").click()
    agent.asked()
    expect(box).to_be_focused()
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".terminated")).to_contain_text("Stopped.", timeout=15_000)
    expect(box).to_be_focused()


def test_escape_stops_a_turn_wherever_the_focus_is(held, page):
    service, agent = held
    page.goto(service.first_link())
    ask(page, "Stop me from the sidebar")
    agent.asked()
    # A person presses Escape once they see the turn running.
    expect(page.get_by_role("button", name="Stop", exact=True)).to_be_visible()
    page.get_by_role("navigation", name="Conversations").get_by_role("link").first.focus()
    page.keyboard.press("Escape")
    expect(page.locator(".terminated")).to_contain_text("Stopped.", timeout=15_000)


def test_after_deleting_a_conversation_focus_moves_to_the_one_in_its_place(service, page):
    page.goto(service.first_link())
    for question in ("First question", "Second question", "Third question"):
        page.get_by_role("button", name="New chat").click()
        ask(page, question)
        wait_answered(page)
    page.on("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete Second question").click()
    # Newest first: the first question's conversation now stands where the second's was.
    expect(page.get_by_role("link", name="First question")).to_be_focused()
    page.get_by_role("button", name="Delete First question").click()
    expect(page.get_by_role("link", name="Third question")).to_be_focused()


def test_the_first_tab_reaches_a_skip_link_to_the_message_box_and_a_new_chat_starts_there(service, page):
    page.goto(service.first_link())
    box = page.get_by_label("Message")
    # A new chat, as the sign-in lands on, is ready for typing.
    expect(box).to_be_focused()
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    page.reload()
    expect(page.locator("article.agent")).to_have_count(1)
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the message box")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(box).to_be_focused()
    page.get_by_role("button", name="New chat").click()
    expect(box).to_be_focused()


def test_on_a_phone_the_conversations_are_a_drawer_that_the_keyboard_can_close(service, browser):
    context, page = phone(browser)
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    new_chat = page.get_by_role("button", name="New chat")
    menu = page.get_by_role("button", name="Conversations")
    # The conversation has the whole width.
    expect(new_chat).to_be_hidden()
    assert page.evaluate("document.querySelector('main').getBoundingClientRect().width") == 375
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(new_chat).to_be_in_viewport()
    expect(new_chat).to_be_focused()
    page.keyboard.press("Escape")
    expect(new_chat).to_be_hidden()
    expect(menu).to_be_focused()
    # Choosing in it closes it.
    menu.click()
    new_chat.click()
    expect(new_chat).to_be_hidden()
    expect(page.get_by_label("Message")).to_be_focused()
    assert page_width(page) <= 375
    context.close()


def test_on_a_phone_the_admin_tables_fit_the_screen(service, browser):
    for n in range(3):
        service.admin(
            "member", "add", "--org", "org_default", "--user", f"usr_long{n}", "--role", "viewer",
            "--user-name", f"someone.with.a.rather.long.address.{n}@subsidiary.example.org",
        )
    context, page = phone(browser)
    page.goto(service.first_link())
    expect(page.get_by_role("button", name="Conversations")).to_be_visible()
    for section, heading in (("members", "Members"), ("audit", "Audit log"), ("integrations", "Integrations")):
        page.goto(f"{service.base}/admin/{section}")
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        if section != "integrations":
            expect(page.get_by_role("row").nth(1)).to_be_visible()
        assert page_width(page) <= 375, f"{section}: {page_width(page)} px wide"
    context.close()


def test_the_organisation_switcher_is_drawn_like_the_other_fields(service, page):
    service.admin("org", "create", "--id", "org_second", "--name", "Second Org")
    service.admin("member", "add", "--org", "org_second", "--user", "usr_default", "--role", "viewer")
    page.goto(service.first_link())
    switcher = page.get_by_label("Organisation", exact=True)
    find = page.get_by_label("Find a conversation")
    style = "e => { const s = getComputedStyle(e); return [s.borderTopColor, s.borderRadius, s.backgroundColor]; }"
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert switcher.evaluate(style) == find.evaluate(style), scheme
