//! Usage by day and by model over the real server: a member's own month (theirs alone), the
//! admin's report summing its members, the usage export per member and day or model, and the
//! audit log's export filtered by dates, action and actor across many pages.

use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{Actor, AuditAction, AuditEntry};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, PricedAgent, Setup, User, admin};
use knowledge_core::adapters::agent::BuiltinAgent;

const SESSION: &str = "/api/managed-agents/session";

async fn ask(api: &Api, user: &User, text: &str) {
    let r = api.post_as(user, SESSION, json!({ "text": text })).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The body of a GET to `path` as `user`, as text, with its status and content type.
async fn download(api: &Api, user: &User, path: &str) -> (u16, String, String) {
    let resp = api
        .execute(
            (api.http)
                .get(format!("{}{path}", api.base))
                .header("cookie", &user.cookie),
        )
        .await;
    let status = resp.status().as_u16();
    let kind = (resp.headers().get("content-type"))
        .map_or(String::new(), |v| v.to_str().unwrap().to_owned());
    (status, kind, resp.text().await.unwrap())
}

#[tokio::test]
async fn a_members_month_by_day_and_model_is_theirs_and_the_report_sums_every_member() {
    // Each answer: 120 input and 30 output tokens, $0.0015, by `priced-model`.
    let api = Api::start_with(Arc::new(PricedAgent { micros: 1_500 })).await;
    let limits = json!({ "memberQuestionCap": 10 });
    admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    let (ann, bob) = (
        api.new_user(&api.user.org).await,
        api.new_user(&api.user.org).await,
    );
    ask(&api, &ann, "first").await;
    ask(&api, &ann, "second").await;
    ask(&api, &bob, "third").await;
    api.settle().await;
    let today = api.clock_now().to_iso8601()[..10].to_owned();

    let r = api.get_as(&ann, "/api/usage").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let day = json!({ "date": today, "questions": 2, "inputTokens": 240, "outputTokens": 60,
        "usd": 0.003 });
    let model = json!({ "model": "priced-model", "calls": 2, "inputTokens": 240,
        "outputTokens": 60, "usd": 0.003 });
    assert_eq!(r.body["days"], json!([day]));
    assert_eq!(r.body["models"], json!([model]));
    let totals = [
        "questions",
        "usd",
        "inputTokens",
        "outputTokens",
        "questionCap",
        "capUsd",
    ]
    .map(|k| r.body[k].clone());
    assert_eq!(
        totals,
        [
            json!(2),
            json!(0.003),
            json!(240),
            json!(60),
            json!(10),
            Value::Null
        ]
    );
    let r = api.get_as(&bob, "/api/usage").await;
    assert_eq!(
        (&r.body["questions"], &r.body["inputTokens"]),
        (&json!(1), &json!(120))
    );

    // The admin's report: the organisation's days and models are its members' sum.
    let r = admin(&api, Method::GET, "/usage", None).await;
    assert_eq!(r.body["days"][0]["questions"], json!(3), "{}", r.body);
    assert_eq!(r.body["days"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["models"][0]["calls"], json!(3));
    assert_eq!(
        (&r.body["inputTokens"], &r.body["outputTokens"]),
        (&json!(360), &json!(90))
    );
    assert_eq!(r.body["members"][0]["inputTokens"], json!(240));

    // Another month holds nothing; a month that is not one, or no cookie, is refused.
    let r = api.get_as(&ann, "/api/usage?month=1999-12").await;
    assert_eq!(
        (&r.body["questions"], &r.body["days"]),
        (&json!(0), &json!([]))
    );
    let r = api.get_as(&ann, "/api/usage?month=1999-13").await;
    assert_eq!((r.status, r.code()), (400, "invalid_field"));
    let r = api
        .send((api.http).get(format!("{}/api/usage", api.base)))
        .await;
    assert_eq!(r.status, 401);
    // A member removed since their cookie was issued reads nothing more.
    let r = admin(&api, Method::DELETE, &format!("/members/{}", bob.id), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(api.get_as(&bob, "/api/usage").await.status, 401);
}

#[tokio::test]
async fn the_usage_export_has_a_row_per_member_and_day_or_per_member_and_model() {
    let api = Api::start_with(Arc::new(PricedAgent { micros: 2_000 })).await;
    let ann = api.new_user(&api.user.org).await;
    ask(&api, &ann, "one").await;
    ask(&api, &api.user, "two").await;
    ask(&api, &api.user, "three").await;
    api.settle().await;
    let now = api.clock_now();
    let (month, today) = (now.month(), now.to_iso8601()[..10].to_owned());

    let path = format!("/api/admin/usage/export?month={month}");
    let (status, kind, csv) = download(&api, &api.user, &path).await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/csv; charset=utf-8"),
        "{csv}"
    );
    let mut rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows.remove(0),
        "date,user_id,user_name,display_name,questions,input_tokens,output_tokens,usd"
    );
    let mut want = vec![
        format!("{today},{},,,1,120,30,0.002000", ann.id),
        format!("{today},{},,,2,240,60,0.004000", api.user.id),
    ];
    want.sort();
    assert_eq!(rows, want);

    let (_, _, csv) = download(&api, &api.user, &format!("{path}&by=model")).await;
    let row = format!("{month},{},,,priced-model,2,240,60,0.004000", api.user.id);
    assert!(csv.lines().any(|l| l == row), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");

    for bad in [
        "/api/admin/usage/export",
        &format!("{path}&by=week"),
        "/api/admin/usage/export?month=2026",
    ] {
        let (status, _, body) = download(&api, &api.user, bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, _, _) = download(&api, &ann, &path).await;
    assert_eq!(status, 403, "a viewer exports nothing");
}

/// 300 entries six hours apart from 2026-01-01: by an admin in the admin API, by the command
/// line and by the identity provider in turn.
async fn seed_audit(api: &Api) -> Vec<AuditEntry> {
    let org = &api.user.org;
    let start = Timestamp::parse_date("2026-01-01").unwrap();
    let mut seeded = Vec::new();
    for i in 0..300_i64 {
        let at = start.plus_millis(i * 6 * 3_600_000);
        let entry = match i % 3 {
            0 => AuditEntry::new(
                org,
                at,
                Actor::Admin,
                AuditAction::OrgMemoryChanged,
                org.as_str(),
            )
            .by(&api.user.id),
            1 => AuditEntry::new(
                org,
                at,
                Actor::Admin,
                AuditAction::OrgMemoryChanged,
                org.as_str(),
            ),
            _ => AuditEntry::new(org, at, Actor::Scim, AuditAction::UserUpdated, org.as_str()),
        };
        api.svc
            .store
            .set_memory(org, i % 2 == 0, &entry)
            .await
            .unwrap();
        seeded.push(entry);
    }
    seeded
}

#[tokio::test]
async fn the_audit_export_holds_exactly_its_filters_entries_newest_first_across_pages() {
    let api = Api::start().await;
    let seeded = seed_audit(&api).await;
    let base = "/api/admin/audit/export";

    // Ten days of entries by an admin in the admin API, as JSON Lines.
    let path = format!("{base}?format=jsonl&from=2026-01-10&to=2026-01-19&actor=admin");
    let (status, kind, text) = download(&api, &api.user, &path).await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "application/x-ndjson"),
        "{text}"
    );
    let got: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (from, until) = (
        Timestamp::parse_date("2026-01-10").unwrap(),
        Timestamp::parse_date("2026-01-20").unwrap(),
    );
    let mut want: Vec<String> = (seeded.iter())
        .filter(|e| e.at >= from && e.at < until && e.by.is_some())
        .map(|e| e.at.to_iso8601())
        .collect();
    want.reverse();
    let at: Vec<&str> = got.iter().map(|v| v["at"].as_str().unwrap()).collect();
    assert_eq!(at, want);
    assert!(
        got.iter()
            .all(|v| v["actor"] == "admin" && v["actorId"] == json!(api.user.id.to_string()))
    );

    // Everything, as CSV: every seeded entry once, newest first, over three pages and more.
    let (_, kind, csv) = download(&api, &api.user, &format!("{base}?format=csv")).await;
    assert_eq!(kind, "text/csv; charset=utf-8");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("at,actor,actor_id,actor_name,action,target,target_name,from,to")
    );
    let times: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    let seeded_times: Vec<String> = seeded.iter().rev().map(|e| e.at.to_iso8601()).collect();
    let ours: Vec<&str> = times
        .iter()
        .copied()
        .filter(|t| t.starts_with("2026-0"))
        .collect();
    assert_eq!(
        ours,
        seeded_times.iter().map(String::as_str).collect::<Vec<_>>()
    );

    // The command line, by action: named as the command line, never as an admin.
    let path =
        format!("{base}?format=csv&actor=command-line&action=org.memory_changed&to=2026-01-03");
    let (_, _, csv) = download(&api, &api.user, &path).await;
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    let want = seeded
        .iter()
        .filter(|e| e.by.is_none() && e.actor == Actor::Admin)
        .filter(|e| e.at < Timestamp::parse_date("2026-01-04").unwrap())
        .count();
    assert_eq!(rows.len(), want, "{csv}");
    assert!(
        rows.iter()
            .all(|r| r.split(',').nth(1) == Some("command-line")),
        "{csv}"
    );

    for bad in [
        "format=xml",
        "from=2026-13-01",
        "from=2026-02-01&to=2026-01-01",
        "action=nothing.happened",
        "actor=robot",
    ] {
        let (status, _, body) = download(&api, &api.user, &format!("{base}?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let viewer = api.new_user(&api.user.org).await;
    let (status, _, _) = download(&api, &viewer, base).await;
    assert_eq!(status, 403);

    // Compressed, as every browser asks for it: the whole stream, every page.
    let resp = api
        .execute(
            (api.http)
                .get(format!("{}{base}?format=jsonl", api.base))
                .header("cookie", &api.user.cookie)
                .header("accept-encoding", "gzip"),
        )
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-encoding"], "gzip");
    let gz = resp.bytes().await.unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    assert!(
        text.lines().count() >= seeded.len(),
        "{} lines",
        text.lines().count()
    );
}

#[tokio::test]
async fn where_responses_are_buffered_an_export_over_the_limit_is_refused_whole() {
    // As on Lambda: 20 KB at most. The whole log is over it; a week of it is not.
    let api = Api::start_setup(Setup {
        buffered_export_max: Some(20_000),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    seed_audit(&api).await;
    let base = "/api/admin/audit/export?format=jsonl";
    let r = api.get(base).await;
    assert_eq!(
        (r.status, r.code()),
        (413, "export_too_large"),
        "{}",
        r.body
    );
    let (status, _, text) = download(&api, &api.user, &format!("{base}&to=2026-01-07")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(text.lines().count(), 7 * 4);
}

#[tokio::test]
async fn the_report_sums_more_members_than_one_page_and_names_the_ten_who_asked_most() {
    // 105 members, the report reading 100 at a time; the last five asked two more each.
    let api = Api::start().await;
    let mut users = Vec::new();
    for _ in 0..105 {
        let user = api.new_user(&api.user.org).await;
        ask(&api, &user, "once").await;
        users.push(user);
    }
    for user in &users[100..] {
        ask(&api, user, "again").await;
        ask(&api, user, "and again").await;
    }
    let r = admin(&api, Method::GET, "/usage", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (&r.body["activeMembers"], &r.body["queries"]),
        (&json!(105), &json!(115))
    );
    assert_eq!(r.body["days"][0]["questions"], json!(115));
    let members = r.body["members"].as_array().unwrap();
    assert_eq!(members.len(), 10);
    let busiest: Vec<&str> = members[..5]
        .iter()
        .map(|m| m["userId"].as_str().unwrap())
        .collect();
    let mut want: Vec<String> = users[100..].iter().map(|u| u.id.to_string()).collect();
    want.sort();
    assert_eq!(busiest, want.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(members[5..].iter().all(|m| m["questions"] == json!(1)));

    // The export is written a page at a time too: every member once, by user id.
    let month = api.clock_now().month();
    let path = format!("/api/admin/usage/export?month={month}");
    let (status, _, csv) = download(&api, &api.user, &path).await;
    assert_eq!(status, 200, "{csv}");
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    let mut all: Vec<String> = users.iter().map(|u| u.id.to_string()).collect();
    all.sort();
    assert_eq!(ids, all.iter().map(String::as_str).collect::<Vec<_>>());
    let asked: u64 = (csv.lines().skip(1))
        .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(asked, 115);
}
