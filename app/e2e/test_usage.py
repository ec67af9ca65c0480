"""Usage in Chromium, against the real binary answering through the fake OpenAI server (priced so
that each call costs a round dollar): the admin's Usage page a month at a time (the day chart and
its table, the members who used the most and how close they are, the split by model, an empty
month), a member's own allowance set from the member list and given back, the CSV downloads and
the audit log's, and a viewer's own usage at /usage, which shows nobody else's."""

import calendar
import csv
import io
import json
import re

import pytest
from playwright.sync_api import expect

from conftest import Service
from fake_openai import FakeOpenAi
from test_admin import add_member, audit_actions
from test_app import ask, wait_answered

# Each call is 10 tokens in and 5 out (the fake's usage): $0.50 + $0.50.
PRICES = json.dumps({"*": {"inputUsdPerMTok": 50_000, "outputUsdPerMTok": 100_000}})
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


@pytest.fixture
def priced():
    fake = FakeOpenAi(hold=False)
    service = Service(env={**fake.env(), "KNOWLEDGE_PRICES": PRICES})
    yield service
    fake.stop()
    service.stop()


def month_name(month: str) -> str:
    year, m = month.split("-")
    return f"{MONTHS[int(m) - 1]} {year}"


def day_name(date: str) -> str:
    _, m, d = date.split("-")
    return f"{int(d)} {MONTHS[int(m) - 1]}"


def month_before(month: str) -> str:
    year, m = map(int, month.split("-"))
    return f"{year - 1}-12" if m == 1 else f"{year}-{m - 1:02}"


def days_in(month: str) -> int:
    return calendar.monthrange(int(month[:4]), int(month[5:]))[1]


def place_on_axis(page) -> float:
    """Where the chart's one bar stands along its axis, from 0 (its start) to 1 (its end)."""
    return page.evaluate("""() => {
        const bar = document.querySelector('svg.chart rect.bar').getBBox();
        const axis = document.querySelector('svg.chart line.base');
        const [start, end] = [axis.x1.baseVal.value, axis.x2.baseVal.value];
        return (bar.x + bar.width / 2 - start) / (end - start);
    }""")


def money(usd: float) -> str:
    return f"${usd:,.2f}"


def ask_each(page, *questions: str):
    """Asks each question in the open conversation, one after another's answer."""
    for n, question in enumerate(questions, 1):
        ask(page, question)
        expect(page.locator("article.agent")).to_have_count(n, timeout=20_000)
        wait_answered(page)


def get(page, service, path: str):
    r = page.request.get(f"{service.base}{path}")
    assert r.ok, (r.status, r.text())
    return r.json()


def sign_in(service, page, user: str = "usr_default"):
    page.goto(service.link(user=user))
    expect(page.get_by_label("Message")).to_be_visible()


def test_the_usage_page_shows_the_month_day_by_day_the_members_who_used_most_and_the_models(priced, page):
    service = priced
    sign_in(service, page)
    ask_each(page, "What is a turn?", "And a session?")
    page.goto(f"{service.base}/admin/usage")
    page.get_by_label("Questions each member may ask a month").fill("10")
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_role("status")).to_have_text(re.compile("The limits are saved"))
    report = get(page, service, "/api/admin/usage")
    month, (today,), (model,) = report["month"], report["days"], report["models"]
    assert (report["queries"], today["questions"], model["model"]) == (2, 2, "fake")
    assert today["usd"] > 0 and model["calls"] >= 2 and model["usd"] == today["usd"], report
    day = day_name(today["date"])

    # The chart: named for the month, one bar (today's), said in a sentence.
    expect(page.get_by_role("img", name=f"Questions per day in {month_name(month)}")).to_be_visible()
    bars = page.locator("svg.chart rect.bar")
    expect(bars).to_have_count(1)
    expect(bars.locator("title")).to_have_text(f"{day}: 2 questions")
    assert abs(place_on_axis(page) - (int(today["date"][8:]) - 0.5) / days_in(month)) < 0.005
    expect(page.locator("#org-days-summary")).to_have_text(
        f"Questions per day in {month_name(month)}: 2 in all, most on {day} (2 questions)."
    )
    page.get_by_label("Dollars", exact=True).check()
    expect(bars.locator("title")).to_have_text(f"{day}: {money(today['usd'])}")
    # The same numbers as a table, every day of the month, opened from the keyboard.
    page.get_by_text("The numbers as a table").focus()
    page.keyboard.press("Enter")
    days = page.get_by_role("table", name=f"Usage per day in {month_name(month)}")
    expect(days.locator("tbody tr")).to_have_count(days_in(month))
    expect(days.locator("tbody tr th").first).to_have_text(day_name(f"{month}-01"))
    expect(days.locator("tbody tr th").last).to_have_text(day_name(f"{month}-{days_in(month)}"))
    expect(days.get_by_role("row", name=re.compile(f"^{day} ")).get_by_role("cell")).to_have_text(
        [str(today["questions"]), f"{today['inputTokens']:,}", f"{today['outputTokens']:,}", money(today["usd"])]
    )
    # The members who used the most, with their allowance and how close they are.
    (asker,) = report["members"]
    assert (asker["userId"], asker["questions"], asker["questionCap"]) == ("usr_default", 2, 10)
    expect(page.get_by_role("row", name=re.compile("^usr_default")).get_by_role("cell")).to_have_text(
        ["2", money(asker["usd"]), f"{asker['inputTokens']:,} in, {asker['outputTokens']:,} out", "10 questions",
         "20 % of 10 questions"]
    )
    # The split by model.
    expect(page.get_by_role("row", name=re.compile("^fake ")).get_by_role("cell")).to_have_text(
        [str(model["calls"]), f"{model['inputTokens']:,}", f"{model['outputTokens']:,}", money(model["usd"])]
    )
    expect(page.locator("dl.usage")).to_contain_text(
        f"Tokens{report['inputTokens']:,} in, {report['outputTokens']:,} out"
    )

    # Last month: nothing at all.
    before = month_before(month)
    page.get_by_label("Month", exact=True).select_option(before)
    expect(page.get_by_role("img", name=f"Dollars per day in {month_name(before)}")).to_be_visible()
    expect(bars).to_have_count(0)
    expect(page.locator("#org-days-summary")).to_have_text(f"Dollars per day in {month_name(before)}: none.")
    expect(page.get_by_text(f"Nobody asked anything in {month_name(before)}.")).to_be_visible()
    expect(page.get_by_text(f"No model was called in {month_name(before)}.")).to_be_visible()
    expect(page.locator("dl.usage dd").first).to_have_text("0 (no quota)")
    assert get(page, service, f"/api/admin/usage?month={before}")["queries"] == 0


def test_an_allowance_set_from_the_member_list_shows_in_the_report_until_it_is_given_back(priced, page):
    service = priced
    sign_in(service, page)
    ask_each(page, "What is a turn?")
    page.goto(f"{service.base}/admin/members")
    row = page.get_by_role("row", name=re.compile("usr_default"))
    allowance = row.get_by_role("cell").nth(2)
    expect(allowance).to_have_text("The organisation's")
    set_allowance = page.get_by_role("button", name="Set allowance: usr_default")
    # The form opens in the row with the focus in it; Escape closes it and gives the focus back.
    set_allowance.click()
    expect(page.get_by_label("Questions a month")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_label("Questions a month")).to_have_count(0)
    expect(set_allowance).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Questions a month")).to_be_focused()
    page.get_by_label("Questions a month").fill("4")
    page.get_by_label("US dollars a month").fill("3")
    page.get_by_role("button", name="Save allowance").click()
    expect(page.get_by_role("status")).to_have_text("usr_default may now use 4 questions and $3.00 a month.")
    expect(allowance).to_have_text("4 questions and $3.00their own")
    expect(set_allowance).to_be_focused()
    page.reload()
    expect(allowance).to_have_text("4 questions and $3.00their own")
    members = get(page, service, "/api/admin/members")["members"]
    assert members[0]["caps"] == {"questionCap": 4, "capUsd": 3.0}, members
    assert "member.caps_changed" in audit_actions(service)
    # The report shows it, and how close the member is: $1.00 of $3.00 is nearer than 1 of 4.
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Usage").click()
    cells = page.get_by_role("row", name=re.compile("^usr_default")).get_by_role("cell")
    expect(cells.nth(3)).to_have_text("4 questions and $3.00")
    expect(cells.nth(4)).to_have_text("33 % of $3.00")
    (asker,) = get(page, service, "/api/admin/usage")["members"]
    assert (asker["questionCap"], asker["capUsd"]) == (4, 3.0)

    # Given back: the organisation's (unlimited here) applies again.
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Members").click()
    page.get_by_role("button", name="Use the organisation's allowance: usr_default").click()
    expect(page.get_by_role("status")).to_have_text("usr_default has the organisation's allowance again.")
    expect(allowance).to_have_text("The organisation's")
    expect(set_allowance).to_be_focused()
    assert get(page, service, "/api/admin/members")["members"][0].get("caps") is None
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Usage").click()
    expect(cells.nth(3)).to_have_text("Unlimited")
    expect(cells.nth(4)).to_have_text("No limit")
    assert audit_actions(service).count("member.caps_changed") == 2


def download(page, link) -> str:
    """Follows the download `link` as a person would; returns the file."""
    with page.expect_download() as event:
        link.click()
    failure = event.value.failure()
    assert failure is None, f"the download of {link.get_attribute('href')} failed: {failure}"
    return open(event.value.path(), encoding="utf-8").read()


def test_the_downloads_hold_the_months_usage_and_the_audit_entries_asked_for(priced, page):
    service = priced
    add_member(service, "usr_bob", "bob@example.org")
    sign_in(service, page)
    ask_each(page, "What is a turn?", "And a session?")
    page.goto(f"{service.base}/admin/usage")
    report = get(page, service, "/api/admin/usage")
    (asker,) = report["members"]
    (today,), (model,) = report["days"], report["models"]

    by_day = list(csv.DictReader(io.StringIO(download(page, page.get_by_role("link", name="Download usage (CSV, per member per day)")))))
    assert len(by_day) == 1, by_day
    (row,) = by_day
    assert (row["user_id"], row["date"], int(row["questions"])) == ("usr_default", today["date"], 2), row
    assert float(row["usd"]) == pytest.approx(asker["usd"]), row
    by_model = list(csv.DictReader(io.StringIO(download(page, page.get_by_role("link", name="Download usage (CSV, per member per model)")))))
    (row,) = by_model
    assert (row["user_id"], row["model"], int(row["calls"])) == ("usr_default", "fake", model["calls"]), row
    assert (int(row["input_tokens"]), int(row["output_tokens"])) == (model["inputTokens"], model["outputTokens"]), row
    assert float(row["usd"]) == pytest.approx(model["usd"]), row

    # The audit log: a role change among members added at the command line.
    page.goto(f"{service.base}/admin/members")
    page.get_by_role("button", name="Make admin: bob@example.org").click()
    expect(page.get_by_role("status")).to_have_text("bob@example.org is now an admin.")
    page.goto(f"{service.base}/admin/audit")
    page.get_by_label("Kind of change").select_option("member.role_changed")
    link = page.get_by_role("link", name="Download the log (CSV)")
    expect(link).to_have_attribute("href", "/api/admin/audit/export?format=csv&action=member.role_changed")
    entries = list(csv.DictReader(io.StringIO(download(page, link))))
    assert [(e["action"], e["target"]) for e in entries] == [("member.role_changed", "usr_bob")], entries
    page.get_by_label("Format").select_option("jsonl")
    lines = download(page, page.get_by_role("link", name="Download the log (JSON Lines)")).splitlines()
    assert [(json.loads(line)["action"], json.loads(line)["from"], json.loads(line)["to"]) for line in lines] == [
        ("member.role_changed", "viewer", "admin")
    ], lines
    # Who made the change: the command line's entries (adding both members) and no others.
    page.get_by_label("Kind of change").select_option("")
    page.get_by_label("Made by").select_option("command-line")
    lines = download(page, page.get_by_role("link", name="Download the log (JSON Lines)")).splitlines()
    logged = get(page, service, "/api/admin/audit")["entries"]
    by_cli = [e for e in logged if e["actor"] == "command-line"]
    assert 0 < len(by_cli) < len(logged), logged
    assert [json.loads(line) for line in lines] == by_cli, lines


def test_a_viewer_sees_their_own_usage_in_words_and_nobody_elses(priced, page):
    service = priced
    add_member(service, "usr_vera", "vera@example.org")
    sign_in(service, page)
    ask_each(page, "The admin's own question")
    r = page.request.put(f"{service.base}/api/admin/members/usr_vera/caps", data={"questionCap": 5},
                         headers={"origin": service.base})
    assert r.ok, r.text()
    page.context.clear_cookies()
    sign_in(service, page, "usr_vera")
    ask_each(page, "What is a turn?")
    page.get_by_role("link", name="Usage").click()
    expect(page).to_have_url(f"{service.base}/usage")
    expect(page.get_by_role("heading", name="Your usage")).to_be_visible()
    own = get(page, service, "/api/usage")
    (today,) = own["days"]
    next_month = MONTHS[int(own["month"][5:]) % 12]
    expect(page.get_by_text("You have used 1 of your 5 questions this month")).to_have_text(
        f"You have used 1 of your 5 questions this month; they renew on 1 {next_month}."
    )
    expect(page.get_by_text("You have spent")).to_have_text(f"You have spent {money(own['usd'])} this month, with no limit on spending.")
    expect(page.get_by_label("Questions used")).to_have_attribute("value", "1")
    expect(page.locator("svg.chart rect.bar title")).to_have_text(f"{day_name(today['date'])}: 1 question")
    expect(page.get_by_role("row", name=re.compile("^fake ")).get_by_role("cell").first).to_have_text(str(own["models"][0]["calls"]))
    # Theirs alone: the admin's question is not in it, and the admin's report is refused.
    assert (own["questions"], today["questions"]) == (1, 1), own
    expect(page.get_by_text("usr_default")).to_have_count(0)
    assert page.request.get(f"{service.base}/api/admin/usage").status == 403
    # The address is the app's: a reload shows the page again.
    page.reload()
    expect(page.get_by_role("heading", name="Your usage")).to_be_visible()
