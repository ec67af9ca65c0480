//! The request rules and the error table: authentication, origin, body rules, validation, and
//! tenant isolation. Every bad request leaves stored data unchanged.

use std::sync::Arc;

use knowledge_assembly::operator::OrgChanges;
use knowledge_core::domain::OrgStatus;
use knowledge_core::ids::{OrgId, UserId};
use serde_json::{Value, json};

use crate::support::{Api, UnreachableAgent, User};

const SESSION: &str = "/api/managed-agents/session";
const MESSAGE: &str = "/api/managed-agents/message";
const CANCEL: &str = "/api/managed-agents/cancel";

/// What a user can see of their sessions: the list and every transcript.
async fn snapshot(api: &Api) -> Value {
    let list = api.get("/api/managed-agents/sessions").await.body;
    let mut transcripts = vec![];
    for s in list["sessions"].as_array().unwrap() {
        transcripts.push(json!(api.all_events(s["id"].as_str().unwrap()).await));
    }
    json!({ "list": list, "transcripts": transcripts })
}

fn assert_error(r: &crate::support::Reply, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.code(), code, "{}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(r.headers.get("content-type").unwrap(), "application/json");
}

async fn every_endpoint_with_cookie(api: &Api, cookie: &str) -> Vec<crate::support::Reply> {
    let user = User {
        cookie: cookie.to_owned(),
        ..api.user.clone()
    };
    let sid = "ses_0123456789abcdef0123456789abcdef";
    vec![
        api.post_as(&user, SESSION, json!({ "text": "hi" })).await,
        api.post_as(&user, MESSAGE, json!({ "sessionId": sid, "text": "hi" }))
            .await,
        api.get_as(
            &user,
            &format!("/api/managed-agents/transcript?sessionId={sid}"),
        )
        .await,
        api.get_as(&user, "/api/managed-agents/sessions").await,
        api.post_as(&user, CANCEL, json!({ "sessionId": sid }))
            .await,
        api.delete_as(&user, sid).await,
        api.post_as(
            &user,
            "/api/auth/switch-org",
            json!({ "orgId": "org_default" }),
        )
        .await,
    ]
}

#[tokio::test]
async fn every_session_endpoint_answers_401_without_a_cookie() {
    let api = Api::start().await;
    for r in every_endpoint_with_cookie(&api, "").await {
        assert_error(&r, 401, "unauthenticated");
    }
}

#[tokio::test]
async fn an_expired_cookie_is_401() {
    let api = Api::start().await;
    let past = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 1;
    let token = api
        .signer
        .mint_until(&api.user.id, &api.user.org, past)
        .unwrap();
    for r in every_endpoint_with_cookie(&api, &format!("ks_session={token}")).await {
        assert_error(&r, 401, "unauthenticated");
    }
}

#[tokio::test]
async fn a_tampered_or_foreign_signed_cookie_is_401() {
    let api = Api::start().await;
    let token = api.user.cookie.trim_start_matches("ks_session=");
    let (head, rest) = token.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let other_claims = api
        .signer
        .mint(&UserId::parse("usr_other").unwrap(), &api.user.org, 60)
        .unwrap();
    let forged_body = other_claims.split('.').nth(1).unwrap();
    let foreign = knowledge_http::cookie::CookieSigner::new(&[9; 32])
        .unwrap()
        .mint(&api.user.id, &api.user.org, 60)
        .unwrap();
    for bad in [
        format!("{head}.{forged_body}.{sig}"),
        foreign,
        "not-a-jwt".into(),
    ] {
        for r in every_endpoint_with_cookie(&api, &format!("ks_session={bad}")).await {
            assert_error(&r, 401, "unauthenticated");
        }
    }
}

#[tokio::test]
async fn a_removed_members_cookie_stops_working_at_once() {
    let api = Api::start().await;
    let org = api.user.org.clone();
    let user = api.new_user(&org).await;
    assert_eq!(
        api.get_as(&user, "/api/managed-agents/sessions")
            .await
            .status,
        200
    );
    api.admin().remove_member(&org, &user.id).await.unwrap();
    assert_error(
        &api.get_as(&user, "/api/managed-agents/sessions").await,
        401,
        "unauthenticated",
    );
    assert_error(
        &api.post_as(&user, SESSION, json!({ "text": "hi" })).await,
        401,
        "unauthenticated",
    );
}

#[tokio::test]
async fn removing_a_member_with_the_admin_command_cancels_their_running_turns() {
    let agent = crate::support::GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let org = api.user.org.clone();
    let user = api.new_user(&org).await;
    let created = api
        .post_as(&user, SESSION, json!({ "text": "a long question" }))
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    agent.asked().await;
    // The admin command runs in its own process: it stamps the cancellation in the store and
    // the run sees it at its next step, without a signal.
    let cancelled = api.admin().remove_member(&org, &user.id).await.unwrap();
    assert_eq!(cancelled, 1);
    agent.release(1);
    let key = api.key(created.body["id"].as_str().unwrap());
    let key = knowledge_core::ids::SessionKey {
        user: user.id.clone(),
        ..key
    };
    api.settle().await;
    let events = api.svc.store.list_events(&key, 0, 100).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind().as_str()).collect();
    assert_eq!(kinds, ["user_message", "status_terminated"]);
}

#[tokio::test]
async fn post_and_delete_without_the_application_origin_are_403_and_change_nothing() {
    let api = Api::start().await;
    let id = api.create("keep me").await;
    api.settle().await;
    let before = snapshot(&api).await;
    for origin in [
        None,
        Some("https://evil.example"),
        Some("null"),
        Some(&*format!("{}/", api.origin)),
    ] {
        let mut headers = vec![
            ("cookie", api.user.cookie.as_str()),
            ("content-type", "application/json"),
        ];
        if let Some(o) = origin {
            headers.push(("origin", o));
        }
        for (path, body) in [
            (SESSION, json!({ "text": "x" })),
            (MESSAGE, json!({ "sessionId": id, "text": "x" })),
            (CANCEL, json!({ "sessionId": id })),
            ("/api/auth/switch-org", json!({ "orgId": "org_default" })),
        ] {
            assert_error(
                &api.post_raw(path, &headers, body.to_string()).await,
                403,
                "origin_forbidden",
            );
        }
        let mut del = api
            .http
            .delete(format!("{}{SESSION}?sessionId={id}", api.base))
            .header("cookie", &api.user.cookie);
        if let Some(o) = origin {
            del = del.header("origin", o);
        }
        let r = api.execute(del).await;
        assert_eq!(r.status(), 403);
    }
    assert_eq!(snapshot(&api).await, before);
}

#[tokio::test]
async fn get_requests_need_no_origin() {
    let api = Api::start().await;
    let id = api.create("hello").await;
    let r = api
        .get(&format!("/api/managed-agents/transcript?sessionId={id}"))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(api.get("/api/managed-agents/sessions").await.status, 200);
}

#[tokio::test]
async fn a_body_sent_as_anything_but_json_is_415() {
    let api = Api::start().await;
    let headers = [
        ("cookie", api.user.cookie.as_str()),
        ("origin", api.origin.as_str()),
        ("content-type", "text/plain"),
    ];
    assert_error(
        &api.post_raw(SESSION, &headers, r#"{"text":"hi"}"#).await,
        415,
        "unsupported_media_type",
    );
    let no_type = [
        ("cookie", api.user.cookie.as_str()),
        ("origin", api.origin.as_str()),
    ];
    assert_error(
        &api.post_raw(SESSION, &no_type, r#"{"text":"hi"}"#).await,
        415,
        "unsupported_media_type",
    );
    let charset = [
        ("cookie", api.user.cookie.as_str()),
        ("origin", api.origin.as_str()),
        ("content-type", "application/json; charset=utf-8"),
    ];
    assert_eq!(
        api.post_raw(SESSION, &charset, r#"{"text":"hi"}"#)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn create_with_text_missing_empty_blank_or_not_a_string_is_400() {
    let api = Api::start().await;
    for (body, code) in [
        (json!({}), "missing_field"),
        (json!({ "text": null }), "missing_field"),
        (json!({ "text": "" }), "empty_field"),
        (json!({ "text": " \n\t " }), "empty_field"),
        (json!({ "text": 42 }), "invalid_field"),
        (json!({ "text": ["a"] }), "invalid_field"),
        (json!(["text"]), "invalid_json"),
    ] {
        assert_error(&api.post(SESSION, body).await, 400, code);
    }
    assert_eq!(
        api.get("/api/managed-agents/sessions").await.body["sessions"],
        json!([])
    );
}

#[tokio::test]
async fn malformed_json_invalid_utf8_and_oversized_bodies_are_refused_and_change_nothing() {
    let api = Api::start().await;
    let id = api.create("keep me").await;
    api.settle().await;
    let before = snapshot(&api).await;
    let h = [
        ("cookie", api.user.cookie.as_str()),
        ("origin", api.origin.as_str()),
        ("content-type", "application/json"),
    ];
    for path in [SESSION, MESSAGE, CANCEL] {
        assert_error(
            &api.post_raw(path, &h, "{\"text\": ").await,
            400,
            "invalid_json",
        );
        assert_error(
            &api.post_raw(path, &h, b"{\"text\": \"\xff\xfe\"}".to_vec())
                .await,
            400,
            "invalid_encoding",
        );
        let huge = json!({ "sessionId": id, "text": "a".repeat(256 * 1024) }).to_string();
        assert_error(
            &api.post_raw(path, &h, huge).await,
            413,
            "payload_too_large",
        );
    }
    // Just under the limit is accepted.
    let fits = json!({ "sessionId": id, "text": "b".repeat(200 * 1024) }).to_string();
    assert_eq!(api.post_raw(MESSAGE, &h, fits).await.status, 200);
    api.settle().await;
    let after = snapshot(&api).await;
    assert_eq!(after["list"]["sessions"].as_array().unwrap().len(), 1);
    let before_events = before["transcripts"][0].as_array().unwrap();
    assert_eq!(
        &after["transcripts"][0].as_array().unwrap()[..before_events.len()],
        &before_events[..]
    );
}

#[tokio::test]
async fn create_is_403_when_the_organisation_may_not_start_sessions() {
    let api = Api::start().await;
    let id = api.create("before suspension").await;
    api.admin()
        .update_org(
            &api.user.org,
            OrgChanges {
                status: Some(OrgStatus::Suspended),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_error(
        &api.post(SESSION, json!({ "text": "hi" })).await,
        403,
        "plan_forbidden",
    );
    assert_error(&api.message(&id, "hi").await, 403, "plan_forbidden");
    // Reading stays possible.
    assert_eq!(api.transcript(&id).await.status, 200);
}

#[tokio::test]
async fn create_is_502_and_writes_nothing_when_the_provider_is_unreachable() {
    let api = Api::start_with(Arc::new(UnreachableAgent)).await;
    for _ in 0..12 {
        assert_error(
            &api.post(SESSION, json!({ "text": "hi" })).await,
            502,
            "provider_unavailable",
        );
    }
    assert_eq!(
        api.get("/api/managed-agents/sessions").await.body["sessions"],
        json!([])
    );
    assert_eq!(api.admin().usage(&api.user.org).await.unwrap().queries, 0);
    let window = knowledge_core::ports::LimitStore::get_rate_window(
        &*api.svc.store,
        &knowledge_core::policy::limits::Action::CreateSession.key(&api.user.id),
    )
    .await;
    assert_eq!(window.unwrap().hits, vec![]);
}

#[tokio::test]
async fn message_with_session_id_or_text_missing_empty_or_malformed_is_400() {
    let api = Api::start().await;
    let id = api.create("hello").await;
    for (body, code) in [
        (json!({ "text": "x" }), "missing_field"),
        (json!({ "sessionId": "", "text": "x" }), "empty_field"),
        (
            json!({ "sessionId": "ses_nothex", "text": "x" }),
            "invalid_field",
        ),
        (json!({ "sessionId": 7, "text": "x" }), "invalid_field"),
        (json!({ "sessionId": id }), "missing_field"),
        (json!({ "sessionId": id, "text": "" }), "empty_field"),
        (json!({ "sessionId": id, "text": "   " }), "empty_field"),
    ] {
        assert_error(&api.post(MESSAGE, body).await, 400, code);
    }
}

#[tokio::test]
async fn another_users_or_organisations_session_is_404_never_403() {
    let api = Api::start().await;
    let id = api.create("mine").await;
    api.settle().await;
    let colleague = api.new_user(&api.user.org.clone()).await;
    let other_org = OrgId::parse("org_other").unwrap();
    let stranger = api.new_user(&other_org).await;
    // The same user acting in another organisation of theirs.
    api.admin()
        .add_member(
            &other_org,
            Some(api.user.id.clone()),
            knowledge_core::domain::Role::Viewer,
        )
        .await
        .unwrap();
    let me_elsewhere = User {
        cookie: api.cookie(&api.user.id, &other_org),
        id: api.user.id.clone(),
        org: other_org.clone(),
    };
    let before = snapshot(&api).await;
    for who in [&colleague, &stranger, &me_elsewhere] {
        assert_error(
            &api.post_as(who, MESSAGE, json!({ "sessionId": id, "text": "x" }))
                .await,
            404,
            "not_found",
        );
        assert_error(
            &api.get_as(
                who,
                &format!("/api/managed-agents/transcript?sessionId={id}"),
            )
            .await,
            404,
            "not_found",
        );
        assert_error(
            &api.post_as(who, CANCEL, json!({ "sessionId": id })).await,
            404,
            "not_found",
        );
        assert_error(&api.delete_as(who, &id).await, 404, "not_found");
        assert_eq!(
            api.get_as(who, "/api/managed-agents/sessions").await.body["sessions"],
            json!([])
        );
    }
    assert_eq!(snapshot(&api).await, before);
}

#[tokio::test]
async fn message_to_a_session_that_does_not_exist_is_404() {
    let api = Api::start().await;
    let r = api
        .message("ses_0123456789abcdef0123456789abcdef", "x")
        .await;
    assert_error(&r, 404, "not_found");
}

#[tokio::test]
async fn transcript_with_session_id_missing_empty_or_malformed_is_400() {
    let api = Api::start().await;
    for (q, code) in [
        ("", "missing_field"),
        ("?sessionId=", "empty_field"),
        ("?sessionId=ses_short", "invalid_field"),
        (
            "?sessionId=ses_0123456789abcdef0123456789abcdef%0D%0AX-Evil:%201",
            "invalid_field",
        ),
    ] {
        let r = api.get(&format!("/api/managed-agents/transcript{q}")).await;
        assert_error(&r, 400, code);
        assert!(r.headers.get("x-evil").is_none());
    }
}

#[tokio::test]
async fn transcript_with_a_cursor_breaking_its_format_is_400() {
    let api = Api::start().await;
    let id = api.create("hello").await;
    for cursor in [
        "",
        "evt%2F1",
        "evt_000000000001%20",
        &"a".repeat(129),
        "%C3%A9vt_000000000001",
        "evt_1",
        "abc",
    ] {
        let r = api
            .get(&format!(
                "/api/managed-agents/transcript?sessionId={id}&sinceEventId={cursor}"
            ))
            .await;
        assert_error(&r, 400, "invalid_cursor");
    }
}

#[tokio::test]
async fn transcript_of_an_unknown_session_is_404() {
    let api = Api::start().await;
    let r = api
        .get("/api/managed-agents/transcript?sessionId=ses_0123456789abcdef0123456789abcdef")
        .await;
    assert_error(&r, 404, "not_found");
}

#[tokio::test]
async fn cancel_with_session_id_missing_empty_or_malformed_is_400_and_unknown_is_404() {
    let api = Api::start().await;
    for (body, code) in [
        (json!({}), "missing_field"),
        (json!({ "sessionId": "" }), "empty_field"),
        (json!({ "sessionId": "nope" }), "invalid_field"),
        (json!({ "sessionId": true }), "invalid_field"),
    ] {
        assert_error(&api.post(CANCEL, body).await, 400, code);
    }
    assert_error(
        &api.post(
            CANCEL,
            json!({ "sessionId": "ses_0123456789abcdef0123456789abcdef" }),
        )
        .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn delete_without_a_session_id_is_400_and_a_second_delete_is_404() {
    let api = Api::start().await;
    assert_error(&api.send_delete(SESSION).await, 400, "missing_field");
    assert_error(
        &api.send_delete(&format!("{SESSION}?sessionId=")).await,
        400,
        "empty_field",
    );
    let id = api.create("bye").await;
    api.settle().await;
    assert_eq!(api.delete_as(&api.user, &id).await.status, 200);
    assert_error(&api.delete_as(&api.user, &id).await, 404, "not_found");
}

#[tokio::test]
async fn list_sessions_is_scoped_sorted_by_update_and_capped_at_fifty() {
    let api = Api::start().await;
    let mut ids = vec![];
    for i in 0..52 {
        if i > 0 && i % 10 == 0 {
            api.clock.advance(3_600_000);
        }
        ids.push(api.create(&format!("question {i}")).await);
        api.settle().await;
        // Consecutive sessions never share a millisecond, so the order is by time alone.
        api.clock.advance(1);
    }
    // Touch an old session: it moves to the top.
    api.message(&ids[0], "bump").await;
    api.settle().await;
    let list = api.get("/api/managed-agents/sessions").await;
    let sessions = list.body["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 50);
    assert_eq!(sessions[0]["id"], ids[0].as_str());
    assert_eq!(sessions[0]["title"], "question 0");
    assert_eq!(sessions[1]["id"], ids[51].as_str());
    let stamps: Vec<&str> = sessions
        .iter()
        .map(|s| s["updatedAt"].as_str().unwrap())
        .collect();
    assert!(
        stamps.windows(2).all(|w| w[0] >= w[1]),
        "descending by updatedAt"
    );
    assert!(sessions.iter().all(|s| s.as_object().unwrap().len() == 3));
    let colleague = api.new_user(&api.user.org.clone()).await;
    assert_eq!(
        api.get_as(&colleague, "/api/managed-agents/sessions")
            .await
            .body["sessions"],
        json!([])
    );
}

#[tokio::test]
async fn titles_keep_the_first_sixty_characters_and_never_split_one() {
    let api = Api::start().await;
    for text in [
        "é".repeat(70),
        "👩‍💻".repeat(30),
        "日本語".repeat(25),
        "short".into(),
    ] {
        let id = api.create(&text).await;
        let title = api.transcript(&id).await.body["title"]
            .as_str()
            .unwrap()
            .to_owned();
        let expected: String = text.chars().take(60).collect();
        assert_eq!(title, expected);
        assert!(title.chars().count() <= 60);
    }
}

#[tokio::test]
async fn switch_org_moves_later_calls_to_the_new_organisation_with_a_new_cookie() {
    let api = Api::start().await;
    let mine = api.create("in the default org").await;
    let other = OrgId::parse("org_second").unwrap();
    api.admin()
        .create_org(
            Some(other.clone()),
            "Second",
            knowledge_core::domain::Plan::Pro,
        )
        .await
        .unwrap();
    api.admin()
        .add_member(
            &other,
            Some(api.user.id.clone()),
            knowledge_core::domain::Role::Viewer,
        )
        .await
        .unwrap();
    let r = api
        .post("/api/auth/switch-org", json!({ "orgId": "org_second" }))
        .await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!({ "ok": true, "orgId": "org_second" }))
    );
    let set_cookie = r.headers.get("set-cookie").unwrap().to_str().unwrap();
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"));
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    let switched = User {
        cookie,
        id: api.user.id.clone(),
        org: other,
    };
    assert_eq!(
        api.get_as(&switched, "/api/managed-agents/sessions")
            .await
            .body["sessions"],
        json!([])
    );
    assert_error(
        &api.get_as(
            &switched,
            &format!("/api/managed-agents/transcript?sessionId={mine}"),
        )
        .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn switch_org_to_an_organisation_the_user_is_not_in_is_404_and_bad_bodies_400() {
    let api = Api::start().await;
    let stranger_org = OrgId::parse("org_stranger").unwrap();
    api.new_user(&stranger_org).await;
    let r = api
        .post("/api/auth/switch-org", json!({ "orgId": "org_stranger" }))
        .await;
    assert_error(&r, 404, "not_found");
    assert!(r.headers.get("set-cookie").is_none());
    assert_error(
        &api.post("/api/auth/switch-org", json!({ "orgId": "org_nowhere" }))
            .await,
        404,
        "not_found",
    );
    assert_error(
        &api.post("/api/auth/switch-org", json!({})).await,
        400,
        "missing_field",
    );
    assert_error(
        &api.post("/api/auth/switch-org", json!({ "orgId": "a b" }))
            .await,
        400,
        "invalid_field",
    );
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_with_the_error_body() {
    let api = Api::start().await;
    assert_error(&api.get("/api/managed-agents/nope").await, 404, "not_found");
    assert_error(&api.get(MESSAGE).await, 405, "method_not_allowed");
    assert_error(&api.get("/elsewhere").await, 404, "not_found");
}

#[tokio::test]
async fn every_request_under_managed_agents_needs_the_cookie_even_unknown_ones() {
    let api = Api::start().await;
    let anonymous = User {
        cookie: String::new(),
        ..api.user.clone()
    };
    for path in ["/api/managed-agents/nope", MESSAGE, "/api/managed-agents/"] {
        let r = api.get_as(&anonymous, path).await;
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        assert_error(&r, 401, "unauthenticated");
    }
}

#[tokio::test]
async fn nothing_the_client_sends_is_echoed_into_a_response_header() {
    let api = Api::start().await;
    let id = api.create("hello").await;
    let probe = "probe-value-7f3a";
    let r = api
        .execute(
            api.http
                .get(format!(
                    "{}/api/managed-agents/transcript?sessionId={id}&sinceEventId={probe}",
                    api.base
                ))
                .header("cookie", &api.user.cookie)
                .header("x-request-id", probe)
                .header("origin", probe),
        )
        .await;
    for (name, value) in r.headers() {
        assert!(
            !value.to_str().unwrap_or("").contains(probe),
            "{name} echoes the request"
        );
    }
}
