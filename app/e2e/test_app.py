"""What a person does in the app, in Chromium: sign in (one-time link, single sign-on), ask and
read the answer with its tool call and sources, come back to it after a reload (also mid-answer),
follow up while a turn runs, stop, delete, switch organisation, and use it at phone width (a
rate limit is in test_features). The slow cases run on a fake OpenAI server whose answers wait
for the test."""

import re

from playwright.sync_api import expect

from conftest import ROOT, Provider


def ask(page, question: str):
    page.get_by_label("Message").fill(question)
    page.keyboard.press("Enter")


def wait_until(page, ready, what: str, seconds: int = 10):
    """Lets the page's events in (a route's handler, say) until `ready()` holds, for at most
    `seconds`."""
    for _ in range(seconds * 50):
        if ready():
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"{what} did not happen within {seconds} s")


def wait_answered(page):
    expect(page.locator("article.agent").last).to_be_visible(timeout=20_000)
    expect(page.locator(".thinking")).to_have_count(0, timeout=20_000)
    # The passages an answer cites are named once their documents are read.
    expect(page.locator(".cited-sources li", has_text="Loading…")).to_have_count(0)


def test_the_one_time_link_signs_in_and_an_answer_shows_its_tool_call_and_sources(service, page):
    page.goto(service.first_link())
    expect(page).to_have_url(f"{service.base}/")
    expect(page.get_by_role("heading", name="Ask your organisation's knowledge")).to_be_visible()
    ask(page, "How do I cancel a running answer?")
    expect(page).to_have_url(re.compile(r"/c/ses_[0-9a-f]+$"))
    wait_answered(page)
    expect(page.locator("article.user").first).to_have_text("How do I cancel a running answer?")
    tool = page.locator("details.tool")
    expect(tool.locator("summary")).to_have_text("Used search_documents")
    tool.locator("summary").click()
    expect(tool.locator("pre").first).to_contain_text('"query": "How do I cancel a running answer?"')
    expect(page.locator(".sources li").first).to_contain_text("cancelling.md")
    # The answer is announced to screen readers, and the session is in the sidebar.
    expect(page.locator("[aria-live=polite]")).to_contain_text("New answer:")
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_text(["How do I cancel a running answer?"])


def test_a_reload_shows_the_conversation_again_from_its_log(service, page):
    page.goto(service.first_link())
    ask(page, "What is a turn?")
    wait_answered(page)
    answer = page.locator("article.agent").last.inner_text()
    page.reload()
    wait_answered(page)
    assert page.locator("article.agent").last.inner_text() == answer
    expect(page.locator("article.user")).to_have_count(1)


def test_a_deleted_conversation_leaves_the_sidebar_after_confirmation(service, page):
    page.goto(service.first_link())
    ask(page, "First question")
    wait_answered(page)
    dialogs = []
    page.once("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.get_by_role("button", name="Delete First question").click()
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_count(1)
    page.once("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    page.get_by_role("button", name="Delete First question").click()
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_count(0)
    expect(page).to_have_url(f"{service.base}/")
    assert len(dialogs) == 2 and "cannot be undone" in dialogs[0]


def test_shift_enter_writes_a_new_line_and_enter_sends(service, page):
    page.goto(service.first_link())
    box = page.get_by_label("Message")
    box.fill("line one")
    box.press("Shift+Enter")
    box.type("line two")
    expect(box).to_have_value("line one\nline two")
    box.press("Enter")
    wait_answered(page)
    expect(page.locator("article.user").first).to_have_text("line one\nline two")


def test_at_phone_width_everything_fits_without_sideways_scrolling(service, browser):
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    page.goto(service.first_link())
    ask(page, "How do I cancel a running answer?")
    wait_answered(page)
    expect(page.get_by_label("Message")).to_be_in_viewport()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, overflow
    context.close()


def test_without_a_sign_in_the_page_asks_for_a_work_email_and_sso_leads_to_the_provider(service, page):
    provider = Provider(service, {"ann": {"sub": "ann-sub", "email": "ann@example.com", "name": "Ann Example"}})
    try:
        service.admin(
            "sso", "set", "--org", "org_default", "--issuer", provider.issuer,
            "--client-id", "knowledge-e2e", "--domain", "example.com", stdin="e2e-secret\n",
        )
        service.admin("member", "add", "--org", "org_default", "--user-name", "ann@example.com")
        page.goto(f"{service.base}/")
        page.get_by_label("Work e-mail").fill("ann@example.com")
        page.get_by_role("button", name="Continue with single sign-on").click()
        page.get_by_label("Login").fill("ann")
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"{service.base}/")
        expect(page.get_by_role("complementary")).to_contain_text("ann@example.com")
    finally:
        provider.stop()


def test_the_organisation_switcher_shows_the_other_organisations_conversations(service, page):
    service.admin("org", "create", "--id", "org_second", "--name", "Second Org")
    service.admin("member", "add", "--org", "org_second", "--user", "usr_default", "--role", "viewer")
    page.goto(service.first_link())
    ask(page, "Asked in the first organisation")
    wait_answered(page)
    switcher = page.get_by_label("Organisation", exact=True)
    expect(switcher).to_have_value("org_default")
    # The page is loaded again in the other organisation, its list read afresh.
    with page.expect_response(lambda r: r.url.endswith("/sessions") and r.request.method == "GET"):
        switcher.select_option("org_second")
    expect(page).to_have_url(f"{service.base}/")
    expect(page.get_by_label("Organisation", exact=True)).to_have_value("org_second")
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_count(0)
    switcher = page.get_by_label("Organisation", exact=True)
    switcher.select_option("org_default")
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_text(["Asked in the first organisation"])


def test_an_answer_in_progress_survives_a_reload_and_arrives_after_it(held, page):
    service, agent = held
    page.goto(service.first_link())
    ask(page, "Slow question")
    agent.asked()
    expect(page.locator(".thinking")).to_be_visible()
    page.reload()
    expect(page.locator("article.user")).to_have_text(["Slow question"])
    expect(page.locator(".thinking")).to_be_visible()
    agent.release()
    expect(page.locator("article.agent .markdown")).to_have_text(["Answer to: Slow question"], timeout=15_000)
    expect(page.locator(".thinking")).to_have_count(0, timeout=15_000)


def test_a_follow_up_sent_while_a_turn_runs_is_queued_then_answered(held, page):
    service, agent = held
    page.goto(service.first_link())
    ask(page, "First")
    agent.asked()
    # What a person waits for: the first turn shown running (the first send has returned).
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    ask(page, "Second")
    second = page.locator("article.user").filter(has_text="Second")
    expect(second.locator(".badge")).to_have_text("Queued", timeout=10_000)
    agent.release()
    expect(page.locator("article.agent .markdown").first).to_have_text("Answer to: First", timeout=15_000)
    agent.asked()
    expect(second.locator(".badge")).to_have_count(0, timeout=10_000)
    agent.release()
    expect(page.locator("article.agent .markdown")).to_have_text(["Answer to: First", "Answer to: Second"], timeout=15_000)


def test_a_turn_reads_the_session_list_once_when_sent_and_not_again_when_it_ends(held, page):
    service, agent = held
    # Time flows as usual; it is jumped ahead only to bring the idle poll forward.
    page.clock.install()
    # The page's own first read of the list is done before counting starts.
    with page.expect_response(lambda r: r.url.endswith("/api/managed-agents/sessions")):
        page.goto(service.first_link())
    expect(page.get_by_role("heading", name="Ask your organisation's knowledge")).to_be_visible()
    lists = []
    page.on("request", lambda r: lists.append(r.url) if r.url.endswith("/api/managed-agents/sessions") else None)
    ask(page, "Counted question")
    agent.asked()
    agent.release()
    expect(page.locator("article.agent .markdown")).to_have_text(["Answer to: Counted question"], timeout=15_000)
    expect(page.locator(".thinking")).to_have_count(0, timeout=15_000)
    # The turn ended in the poll that brought the answer; a read of the list it asked for would
    # have gone before the next poll, the idle one 30 s later, brought forward here.
    with page.expect_request(lambda r: "/api/managed-agents/transcript" in r.url, timeout=15_000):
        page.clock.fast_forward(31_000)
    assert len(lists) == 1, lists
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_text(["Counted question"])


def test_a_message_sent_while_a_transcript_read_is_on_its_way_is_shown_without_waiting(service, page):
    page.goto(service.first_link())
    ask(page, "First question")
    wait_answered(page)
    # A read of the transcript leaves, and its answer, read before the next message, is held.
    held = []

    def hold(route):
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))

    page.route(lambda url: "/transcript" in url, hold)
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    wait_until(page, lambda: held, "a transcript read held")
    ask(page, "Second question")
    expect(page.get_by_label("Message")).to_have_value("")
    route, stale = held[0]
    route.fulfill(response=stale)
    # The read asked for after the send is made once the held one answers, not 30 s later.
    expect(page.locator("article.agent")).to_have_count(2, timeout=10_000)


def test_escape_stops_a_running_turn_and_the_stop_is_shown_plainly(held, page):
    service, agent = held
    page.goto(service.first_link())
    ask(page, "Never mind")
    agent.asked()
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    page.get_by_label("Message").press("Escape")
    expect(page.locator(".terminated")).to_have_text("Stopped.", timeout=15_000)
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    expect(page.locator("article.agent")).to_have_count(0)


def test_escape_stops_the_turn_from_the_moment_the_stop_button_shows(held, page):
    service, _agent = held
    page.goto(service.first_link())
    # Escape is pressed in the very task that puts the Stop button on the page, before any
    # effect of that render has run.
    page.evaluate(
        """() => new MutationObserver((_, seen) => {
            if (!document.querySelector('button.stop')) return;
            seen.disconnect();
            document.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
        }).observe(document.body, { childList: true, subtree: true })"""
    )
    ask(page, "Stop me at once")
    # The stop can reach the service before its worker asks the model, and then the model is
    # never asked: what counts is that the turn ends stopped, not whether the agent was asked.
    expect(page.locator(".terminated")).to_have_text("Stopped.", timeout=15_000)


def test_html_in_an_answer_never_runs_and_code_blocks_can_be_copied(held, page):
    service, agent = held
    page.goto(service.first_link())
    # The fake answers "Answer to: <the question>", so the question writes the answer.
    hostile = (
        '<img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> '
        '[click](javascript:window.pwned=3) [doc](https://example.com/doc)\n\n'
        "```\ncopy me\n```"
    )
    ask(page, hostile)
    agent.asked()
    agent.release()
    answer = page.locator("article.agent")
    expect(answer.locator("pre")).to_contain_text("copy me", timeout=15_000)
    assert page.evaluate("window.pwned") is None
    expect(answer.locator("img, script, [onerror]")).to_have_count(0)
    # Raw HTML the model wrote is shown as text, never parsed as markup.
    expect(answer).to_contain_text('<img src=x onerror="window.pwned=1">')
    hrefs = answer.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert not any(h and h.startswith("javascript:") for h in hrefs), hrefs
    expect(answer.locator('a[href="https://example.com/doc"]')).to_have_attribute("rel", "noopener noreferrer")
    expect(answer.get_by_role("button", name="Copy", exact=True)).to_be_visible()


def test_signing_out_ends_the_cookie_and_shows_the_sign_in_page(service, page):
    page.goto(service.first_link())
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "ks_session")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Work e-mail")).to_be_visible()
    # The old cookie, sent again, signs nobody in.
    again = page.request.get(f"{service.base}/api/auth/me", headers={"cookie": f"ks_session={cookie['value']}"})
    assert again.status == 401


def test_a_lost_network_is_said_and_the_answer_arrives_when_it_returns(held, page):
    service, agent = held
    page.goto(service.first_link())
    ask(page, "Through a tunnel")
    agent.asked()
    page.context.set_offline(True)
    conversation = page.get_by_role("region", name="Conversation")
    expect(conversation.get_by_role("alert")).to_contain_text("cannot be reached", timeout=15_000)
    agent.release()
    page.context.set_offline(False)
    expect(page.locator("article.agent .markdown")).to_have_text(["Answer to: Through a tunnel"], timeout=30_000)
    # No alert is left, in the conversation or above it (which one, if the check fails).
    alerts = page.get_by_role("alert")
    try:
        expect(alerts).to_have_count(0)
    except AssertionError:
        where = "a => a.map(e => (e.closest('section') ? 'conversation' : 'page') + ': ' + e.textContent)"
        raise AssertionError(alerts.evaluate_all(where)) from None


def test_a_provider_that_is_down_is_said_plainly_and_nothing_is_created(held, page):
    service, agent = held
    agent.healthy = False
    page.expected_statuses.add(502)
    page.goto(service.first_link())
    ask(page, "Anyone there?")
    expect(page.get_by_role("alert")).to_have_text("The AI provider cannot be reached right now. Try again in a moment.")
    # No conversation was made: the list, read again, is empty.
    with page.expect_response(lambda r: r.url.endswith("/sessions") and r.request.method == "GET"):
        page.reload()
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_count(0)
    expect(page).to_have_url(f"{service.base}/")


def test_the_colours_follow_the_system_preference(service, page):
    page.goto(service.first_link())
    background = "getComputedStyle(document.body).backgroundColor"
    page.emulate_media(color_scheme="light")
    light = page.evaluate(background)
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate(background)
    assert (light, dark) == ("rgb(255, 255, 255)", "rgb(15, 17, 21)")


AXE = ROOT / "app" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page) -> list:
    """Serious and critical findings of axe-core (pinned in app/package-lock.json) on the page."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)")
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]]) for v in found if v["impact"] in ("serious", "critical")]


def test_a_failed_single_sign_on_lands_on_the_sign_in_page_with_words_not_json(service, page):
    provider = Provider(service, {"eve": {"sub": "eve-sub", "email": "eve@example.com"}})
    try:
        service.admin(
            "sso", "set", "--org", "org_default", "--issuer", provider.issuer,
            "--client-id", "knowledge-e2e", "--domain", "example.com", stdin="e2e-secret\n",
        )
        # Expected failures of the sign-in, answered to the browser as a redirect.
        page.goto(f"{service.base}/")
        page.get_by_label("Work e-mail").fill("ann@unknown.example")
        page.get_by_role("button", name="Continue with single sign-on").click()
        expect(page.get_by_role("alert")).to_have_text(re.compile("No single sign-on is set up"))
        expect(page).to_have_url(f"{service.base}/")
        page.get_by_label("Work e-mail").fill("eve@example.com")
        page.get_by_role("button", name="Continue with single sign-on").click()
        page.get_by_label("Login").fill("eve")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_have_text(re.compile("not a member of this organisation"))
        expect(page.get_by_label("Work e-mail")).to_be_visible()
    finally:
        provider.stop()


def test_a_used_link_and_a_retired_redirect_uri_are_said_in_words_on_the_sign_in_page(service, page):
    link = service.link()
    context = page.context
    page.goto(link)
    expect(page.get_by_label("Message")).to_be_visible()
    # Signed in already, a used link leads into the app, not to an error.
    page.goto(link)
    expect(page.get_by_label("Message")).to_be_visible()
    context.clear_cookies()
    page.goto(link)
    expect(page.get_by_role("alert")).to_have_text(re.compile("already used or has expired"))
    # A provider still sending people to the shared callback of old: the page names the new one.
    page.goto(f"{service.base}/?signin=redirect_uri_changed&org=org_default")
    expect(page.get_by_role("alert")).to_contain_text(f"register {service.base}/api/auth/callback/org_default")
