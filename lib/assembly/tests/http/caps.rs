//! Each member's monthly allowance over the real server: set for every member by an admin,
//! overridden for one, refused as 429 `member_cap_reached` with the member's own figures, and
//! a member at their allowance never stopping the others.

use std::sync::Arc;

use knowledge_core::domain::AuditAction;
use reqwest::Method;
use serde_json::{Value, json};

use crate::limits::PricedGate;
use crate::support::{Api, GatedAgent, PricedAgent, Reply, Setup, User, admin};

const SESSION: &str = "/api/managed-agents/session";

async fn ask(api: &Api, user: &User, text: &str) -> Reply {
    api.post_as(user, SESSION, json!({ "text": text })).await
}

#[tokio::test]
async fn a_member_at_the_organisations_allowance_for_each_member_gets_their_own_figures() {
    let api = Api::start().await;
    let limits = json!({ "memberQuestionCap": 2, "monthlyQueryQuota": 100 });
    let r = admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["memberQuestionCap"], json!(2));
    assert_eq!(r.body["memberCapUsd"], Value::Null);

    let ann = api.new_user(&api.user.org).await;
    for i in 0..2 {
        assert_eq!(ask(&api, &ann, &format!("q{i}")).await.status, 200);
    }
    let r = ask(&api, &ann, "one too many").await;
    assert_eq!(
        (r.status, r.code()),
        (429, "member_cap_reached"),
        "{}",
        r.body
    );
    assert_eq!(r.body["memberMonthToDateQuestions"], json!(2));
    assert_eq!(r.body["memberQuestionCap"], json!(2));
    assert_eq!(r.body["memberMonthToDateUsd"], json!(0.0));
    assert!(r.body.get("memberCapUsd").is_none(), "{}", r.body);
    // Beside the interface's figures for the organisation.
    assert_eq!(r.body["monthToDateUsd"], json!(0.0));
    let retry = r.retry_after().expect("Retry-After");
    assert_eq!(r.body["retryAfterSeconds"], json!(retry));
    assert!(retry > 0 && retry <= 31 * 86_400, "{retry}");

    // The refusal took no rate-limit slot and counted nothing; another member still asks.
    let usage = admin(&api, Method::GET, "/usage", None).await;
    assert_eq!(usage.body["queries"], json!(2));
    assert_eq!(ask(&api, &api.user, "the admin asks").await.status, 200);
}

#[tokio::test]
async fn an_admin_overrides_one_members_allowance_and_gives_the_organisations_back() {
    let api = Api::start().await;
    let limits = json!({ "memberQuestionCap": 1 });
    admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    let bob = api.new_user(&api.user.org).await;
    assert_eq!(ask(&api, &bob, "first").await.status, 200);
    assert_eq!(ask(&api, &bob, "second").await.code(), "member_cap_reached");

    let caps = format!("/members/{}/caps", bob.id);
    let r = admin(&api, Method::PUT, &caps, Some(json!({ "questionCap": 3 }))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["caps"], json!({ "questionCap": 3, "capUsd": null }));
    assert_eq!(ask(&api, &bob, "second").await.status, 200);
    assert_eq!(ask(&api, &bob, "third").await.status, 200);
    let r = ask(&api, &bob, "fourth").await;
    assert_eq!(r.body["memberQuestionCap"], json!(3), "{}", r.body);

    // Given back the organisation's (1), they stay refused; others keep theirs.
    let r = admin(&api, Method::DELETE, &caps, None).await;
    assert_eq!((r.status, &r.body["caps"]), (200, &Value::Null));
    let r = ask(&api, &bob, "fourth").await;
    assert_eq!(r.body["memberQuestionCap"], json!(1), "{}", r.body);

    let log = (api.svc.store)
        .list_audit(&api.user.org, None, 10)
        .await
        .unwrap();
    let changed: Vec<_> = log
        .iter()
        .filter(|e| e.action == AuditAction::MemberCapsChanged)
        .map(|e| (e.detail.from.clone(), e.detail.to.clone()))
        .collect();
    let unset = Some("the organisation's".to_owned());
    let three = Some("3 questions a month".to_owned());
    assert_eq!(changed, [(three.clone(), unset.clone()), (unset, three)]);
}

#[tokio::test]
async fn bad_allowances_and_unknown_members_are_refused_and_change_nothing() {
    let api = Api::start().await;
    let bob = api.new_user(&api.user.org).await;
    let caps = format!("/members/{}/caps", bob.id);
    for body in [
        json!({ "questionCap": -1 }),
        json!({ "capUsd": 2e9 }),
        json!({ "questionCap": "many" }),
        json!([]),
    ] {
        let r = admin(&api, Method::PUT, &caps, Some(body.clone())).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    let limits = json!({ "memberCapUsd": -5 });
    let r = admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    assert_eq!((r.status, r.code()), (400, "invalid_field"), "{}", r.body);
    let unknown = format!("/members/{}/caps", knowledge_core::ids::UserId::generate());
    let r = admin(
        &api,
        Method::PUT,
        &unknown,
        Some(json!({ "questionCap": 1 })),
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.body);
    let stored = (api.svc.store.get_member(&api.user.org, &bob.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.caps, None);
    let org = api.svc.store.get_org(&api.user.org).await.unwrap().unwrap();
    assert_eq!(org.member_caps, Default::default());

    // A viewer cannot set anyone's allowance, their own included.
    let r = api
        .send(
            (api.http)
                .put(format!("{}/api/admin{caps}", api.base))
                .header("cookie", &bob.cookie)
                .header("origin", &api.origin)
                .json(&json!({ "questionCap": 100 })),
        )
        .await;
    assert_eq!((r.status, r.code()), (403, "admin_only"));
}

#[tokio::test]
async fn a_member_over_their_spending_allowance_is_refused_with_dollars() {
    // One answer costs $5.25, over a member's $5: their next question is refused, and the
    // organisation's other members are not.
    let api = Api::start_with(Arc::new(PricedAgent { micros: 5_250_000 })).await;
    let limits = json!({ "memberCapUsd": 5, "costCapUsd": 100 });
    admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    let ann = api.new_user(&api.user.org).await;
    assert_eq!(ask(&api, &ann, "expensive").await.status, 200);
    api.settle().await;
    let r = ask(&api, &ann, "more").await;
    assert_eq!(
        (r.status, r.code()),
        (429, "member_cap_reached"),
        "{}",
        r.body
    );
    assert_eq!(r.body["memberMonthToDateUsd"], json!(5.25));
    assert_eq!(r.body["memberCapUsd"], json!(5.0));
    assert_eq!(r.body["memberMonthToDateQuestions"], json!(1));
    assert_eq!(r.body["monthToDateUsd"], json!(5.25));
    assert_eq!(r.body["capUsd"], json!(100.0));
    assert_eq!(ask(&api, &api.user, "the admin asks").await.status, 200);
}

#[tokio::test]
async fn the_usage_report_names_the_members_who_used_most_with_their_allowances_by_month() {
    let api = Api::start().await;
    admin(
        &api,
        Method::PUT,
        "/usage/limits",
        Some(json!({ "memberQuestionCap": 5 })),
    )
    .await;
    let (ann, bob) = (
        api.new_user(&api.user.org).await,
        api.new_user(&api.user.org).await,
    );
    let caps = format!("/members/{}/caps", bob.id);
    admin(&api, Method::PUT, &caps, Some(json!({ "capUsd": 2.5 }))).await;
    for (user, n) in [(&ann, 1), (&bob, 3)] {
        for i in 0..n {
            assert_eq!(ask(&api, user, &format!("q{i}")).await.status, 200);
        }
    }
    let r = admin(&api, Method::GET, "/usage", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["queries"].clone(), r.body["activeMembers"].clone()),
        (json!(4), json!(2))
    );
    let members = r.body["members"].as_array().unwrap();
    let line = |i: usize| {
        let m = &members[i];
        (
            m["userId"].as_str().unwrap().to_owned(),
            m["questions"].clone(),
            m["questionCap"].clone(),
            m["capUsd"].clone(),
            m["removed"].clone(),
        )
    };
    assert_eq!(members.len(), 2);
    assert_eq!(
        line(0),
        (
            bob.id.to_string(),
            json!(3),
            Value::Null,
            json!(2.5),
            json!(false)
        )
    );
    assert_eq!(
        line(1),
        (
            ann.id.to_string(),
            json!(1),
            json!(5),
            Value::Null,
            json!(false)
        )
    );

    // A removed member's usage stays, said as removed.
    let r = admin(&api, Method::DELETE, &format!("/members/{}", ann.id), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = admin(&api, Method::GET, "/usage", None).await;
    assert_eq!(r.body["members"][1]["removed"], json!(true));
    assert_eq!(r.body["members"][1]["questions"], json!(1));

    // Another month, by name: nothing used then; a month that is not one is refused.
    let r = admin(&api, Method::GET, "/usage?month=1999-12", None).await;
    assert_eq!(
        (r.status, &r.body["month"], &r.body["queries"]),
        (200, &json!("1999-12"), &json!(0))
    );
    assert_eq!(r.body["members"], json!([]));
    for bad in ["2026-13", "last", "2026-1"] {
        let r = admin(&api, Method::GET, &format!("/usage?month={bad}"), None).await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_field"),
            "{bad}: {}",
            r.body
        );
    }
}

#[tokio::test]
async fn a_follow_up_queued_behind_the_turn_that_crosses_a_members_allowance_is_not_answered() {
    // Each answer costs $0.002, over the member's $0.001: the follow-up, accepted while the
    // first answer was in flight, ends with the member's limit, not a provider call.
    let agent = GatedAgent::new();
    let priced = PricedGate {
        inner: agent.clone(),
        micros: 2_000,
    };
    let api = Api::start_setup(Setup::new(Arc::new(priced))).await;
    let limits = json!({ "memberCapUsd": 0.001 });
    admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    let id = api.create("first").await;
    assert_eq!(agent.asked().await, "first");
    assert_eq!(api.message(&id, "second").await.status, 200);
    agent.release(1);
    api.settle().await;
    let events = api.all_events(&id).await;
    let kinds = crate::support::kinds(&events);
    assert_eq!(
        kinds,
        [
            "user_message",
            "user_message",
            "agent_message",
            "status_idle",
            "error",
            "status_idle"
        ]
    );
    assert_eq!(events[4]["payload"]["code"], "member_cap_reached");
    let usage = api.admin().usage(&api.user.org).await.unwrap();
    assert_eq!(
        usage.cost_micros, 2_000,
        "the queued turn made no provider call"
    );
    let r = api.message(&id, "third").await;
    assert_eq!((r.status, r.code()), (429, "member_cap_reached"));
}
