//! The account and sign-in functions: switch-org, me, logout, signin-link and single sign-on.

use knowledge_aws::functions;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::DirectoryStore;
use knowledge_http::cookie::SECURE_COOKIE_NAME as COOKIE_NAME;
use serde_json::json;
use tower::ServiceExt;

use crate::support::{Deployment, ORG, SECOND_ORG, requests};

#[tokio::test]
async fn switch_org_event_sets_a_cookie_for_the_other_organisation() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let response = d
        .router(functions::SWITCH_ORG)
        .await
        .oneshot(d.event(functions::SWITCH_ORG))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with(&format!("{COOKIE_NAME}=")), "{cookie}");
    assert!(cookie.contains("Secure"), "{cookie}");
    assert_eq!(d.counter.take(), requests(&[("GetItem", 1)]));
}

#[tokio::test]
async fn me_event_lists_both_organisations_of_the_sample_user() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::ME).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["org"]["id"], ORG);
    let orgs: Vec<&str> = body["orgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(orgs, [ORG, SECOND_ORG]);
    // The guard's membership read; the member and organisation again for the answer; the
    // index of memberships; the other organisation and membership.
    assert_eq!(made, requests(&[("GetItem", 5), ("Query", 1)]));
}

#[tokio::test]
async fn logout_event_signs_the_sample_user_out_of_both_organisations() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    // A request signed in before the sign-out, sent after it.
    let earlier = d.event(functions::LIST_SESSIONS);
    let (status, body, made) = d.invoke(functions::LOGOUT).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    for org in [ORG, SECOND_ORG] {
        let org = OrgId::parse(org).unwrap();
        let member = d
            .store
            .get_member(&org, &d.key.user)
            .await
            .unwrap()
            .unwrap();
        assert!(member.signed_out_at.is_some(), "{org}");
    }
    // The index of memberships; per organisation, the membership and its stamp with the
    // audit entry.
    assert_eq!(
        made,
        requests(&[("GetItem", 2), ("Query", 1), ("TransactWriteItems", 2)])
    );
    // Its cookie no longer works.
    let router = d.router(functions::LIST_SESSIONS).await;
    let response = router.oneshot(earlier).await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
}

#[tokio::test]
async fn signin_link_event_signs_the_sample_user_in_once() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let response = d
        .router(functions::SIGNIN_LINK)
        .await
        .oneshot(d.event(functions::SIGNIN_LINK))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with(&format!("{COOKIE_NAME}=")) && cookie.contains("Secure"));
    // The ticket taken (a DeleteItem returning it), then the membership read.
    assert_eq!(
        d.counter.take(),
        requests(&[("DeleteItem", 1), ("GetItem", 1)])
    );
    let (status, _, _) = d.invoke(functions::SIGNIN_LINK).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn sso_events_reach_their_functions_which_read_no_more_than_they_need() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    // The sample's e-mail domain leads to no organisation: one GetItem, the common answer.
    let (status, body, reads) = d.invoke(functions::SSO_LOGIN).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("sso_unavailable"))
    );
    assert_eq!(reads, requests(&[("GetItem", 1)]));
    // A callback without this browser's sign-in in progress reads nothing and clears it.
    let response = (d.router(functions::SSO_CALLBACK).await)
        .oneshot(d.event(functions::SSO_CALLBACK))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let cleared = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("__Host-ks_login=;") && cleared.contains("Max-Age=0"));
    assert!(d.counter.take().is_empty());
}
