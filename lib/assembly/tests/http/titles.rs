//! Renaming a session and finding sessions by title, beside the interface's endpoints: the
//! happy paths, bad input refused in the documented body with nothing changed, the limit, and
//! another member's sessions out of reach.

use serde_json::{Value, json};

use crate::support::Api;

const RENAME: &str = "/api/managed-agents/rename";

fn find(q: &str) -> String {
    let q: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
    format!("/api/managed-agents/find?q={q}")
}

fn titles(body: &Value) -> Vec<&str> {
    (body["sessions"].as_array().unwrap().iter())
        .map(|s| s["title"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_renamed_session_keeps_its_new_title_and_its_place_in_the_list() {
    let api = Api::start().await;
    let first = api.create("How do I cancel a running answer?").await;
    api.settle().await;
    api.clock.advance(1);
    api.create("A newer question").await;
    api.settle().await;
    let before = api.get("/api/managed-agents/sessions").await.body;

    let r = api
        .post(
            RENAME,
            json!({ "sessionId": first, "title": "  Cancelling, explained " }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body,
        json!({ "ok": true, "title": "Cancelling, explained" })
    );
    assert_eq!(
        api.transcript(&first).await.body["title"],
        "Cancelling, explained"
    );
    let after = api.get("/api/managed-agents/sessions").await.body;
    assert_eq!(
        titles(&after),
        ["A newer question", "Cancelling, explained"]
    );
    assert_eq!(
        after["sessions"][1]["updatedAt"],
        before["sessions"][1]["updatedAt"]
    );
    // A follow-up does not bring the first message's title back.
    api.message(&first, "And deleting?").await;
    api.settle().await;
    assert_eq!(
        api.transcript(&first).await.body["title"],
        "Cancelling, explained"
    );
}

#[tokio::test]
async fn bad_titles_and_bodies_are_400_and_change_nothing() {
    let api = Api::start().await;
    let id = api.create("The original title").await;
    api.settle().await;
    for (body, code) in [
        (json!({ "sessionId": id, "title": "   " }), "empty_field"),
        (
            json!({ "sessionId": id, "title": "é".repeat(61) }),
            "invalid_title",
        ),
        (
            json!({ "sessionId": id, "title": "two\nlines" }),
            "invalid_title",
        ),
        (json!({ "sessionId": id }), "missing_field"),
        (json!({ "title": "No session" }), "missing_field"),
        (
            json!({ "sessionId": "ses_nope", "title": "x" }),
            "invalid_field",
        ),
        (json!({ "sessionId": id, "title": 7 }), "invalid_field"),
    ] {
        let r = api.post(RENAME, body.clone()).await;
        assert_eq!((r.status, r.code()), (400, code), "{body}: {}", r.body);
    }
    assert_eq!(
        api.transcript(&id).await.body["title"],
        "The original title"
    );
}

#[tokio::test]
async fn another_members_session_is_404_to_rename_and_never_found() {
    let api = Api::start().await;
    let id = api.create("Ann's refund question").await;
    api.settle().await;
    let colleague = api.new_user(&api.user.org.clone()).await;
    let r = api
        .post_as(
            &colleague,
            RENAME,
            json!({ "sessionId": id, "title": "Mine now" }),
        )
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.body);
    let found = api.get_as(&colleague, &find("refund")).await;
    assert_eq!(found.body, json!({ "sessions": [], "complete": true }));
    assert_eq!(
        api.transcript(&id).await.body["title"],
        "Ann's refund question"
    );
}

#[tokio::test]
async fn the_thirty_first_rename_within_a_minute_is_429() {
    let api = Api::start().await;
    let id = api.create("Renamed often").await;
    api.settle().await;
    for n in 0..30 {
        let r = api
            .post(
                RENAME,
                json!({ "sessionId": id, "title": format!("Name {n}") }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = api
        .post(RENAME, json!({ "sessionId": id, "title": "One too many" }))
        .await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"), "{}", r.body);
    assert!(r.retry_after().is_some());
    assert_eq!(api.transcript(&id).await.body["title"], "Name 29");
}

#[tokio::test]
async fn sessions_are_found_by_every_word_of_their_titles_whatever_their_case() {
    let api = Api::start().await;
    for text in [
        "Refund policy for annual plans",
        "Onboarding checklist",
        "Annual leave rules",
    ] {
        api.create(text).await;
        api.settle().await;
        api.clock.advance(1);
    }
    let r = api.get(&find("ANNUAL")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        titles(&r.body),
        ["Annual leave rules", "Refund policy for annual plans"]
    );
    assert_eq!(r.body["complete"], true);
    assert_eq!(
        titles(&api.get(&find("annual refund")).await.body),
        ["Refund policy for annual plans"]
    );
    assert!(titles(&api.get(&find("holidays")).await.body).is_empty());
}

#[tokio::test]
async fn a_search_without_words_or_with_too_many_is_400() {
    let api = Api::start().await;
    for (path, code) in [
        ("/api/managed-agents/find".to_owned(), "missing_field"),
        (find("   "), "empty_field"),
        (find(&"word ".repeat(9)), "invalid_query"),
        (find(&"x".repeat(201)), "invalid_query"),
    ] {
        let r = api.get(&path).await;
        assert_eq!((r.status, r.code()), (400, code), "{path}: {}", r.body);
    }
}
