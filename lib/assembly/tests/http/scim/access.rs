//! Who may call SCIM (the token, the plan and single sign-on, the organisation), and the
//! audit log of what it did.

use std::sync::Arc;

use knowledge_assembly::operator::OrgChanges;
use knowledge_core::domain::{AuditAction, Plan};
use knowledge_core::ids::OrgId;
use reqwest::Method;
use serde_json::json;

use super::{Scim, assert_scim_error, enable_sso};
use crate::support::Api;

#[tokio::test]
async fn a_missing_or_wrong_token_is_401_and_a_new_token_invalidates_the_old() {
    let s = Scim::start().await;
    let url = format!("{}/api/scim/v2/Users", s.api.base);
    let missing = s.api.send(s.api.http.get(&url)).await;
    assert_scim_error(&missing, 401, None);
    let wrong = s
        .api
        .send(s.api.http.get(&url).bearer_auth("kscim.org_default.00"))
        .await;
    assert_scim_error(&wrong, 401, None);
    let basic = s
        .api
        .send(s.api.http.get(&url).basic_auth("user", Some(&s.token)))
        .await;
    assert_scim_error(&basic, 401, None);
    let old = s.token.clone();
    let new = s.api.admin().generate_scim_token(s.org()).await.unwrap();
    assert_ne!(old, new);
    assert_scim_error(
        &s.api.send(s.api.http.get(&url).bearer_auth(&old)).await,
        401,
        None,
    );
    assert_eq!(
        s.api
            .send(s.api.http.get(&url).bearer_auth(&new))
            .await
            .status,
        200
    );
    let org = s.api.svc.store.get_org(s.org()).await.unwrap().unwrap();
    let stored = org.scim_token_sha256.unwrap();
    assert!(
        !stored.contains(&new[new.len() - 64..]),
        "only a hash is stored"
    );
}

#[tokio::test]
async fn scim_needs_the_business_plan_and_sso_after_the_token_check() {
    let s = Scim::start().await;
    let org = s.org().clone();
    // The Pro plan with SSO on, then the Business plan with SSO off.
    for (plan, sso) in [(Plan::Pro, true), (Plan::Business, false)] {
        let changes = OrgChanges {
            plan: Some(plan),
            ..Default::default()
        };
        s.api.admin().update_org(&org, changes).await.unwrap();
        s.api.set_sso(&org, sso).await;
        assert_scim_error(&s.get("/Users").await, 403, None);
        let r = s
            .api
            .send(s.api.http.get(format!("{}/api/scim/Users", s.api.base)))
            .await;
        assert_scim_error(&r, 401, None);
    }
    enable_sso(&s.api, &org).await;
    assert_eq!(s.get("/Users").await.status, 200);
}

#[tokio::test]
async fn another_organisations_users_are_not_found_with_its_token() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    let other = OrgId::parse("org_other").unwrap();
    s.api
        .admin()
        .create_org(Some(other.clone()), "Other", Plan::Business)
        .await
        .unwrap();
    s.api.set_sso(&other, true).await;
    let theirs = Scim {
        token: s.api.admin().generate_scim_token(&other).await.unwrap(),
        api: Api::start_on(
            s.api.dir.clone(),
            Arc::new(knowledge_core::adapters::agent::BuiltinAgent),
        )
        .await,
    };
    assert_scim_error(&theirs.get(&format!("/Users/{id}")).await, 404, None);
    assert_eq!(theirs.get("/Users").await.body["totalResults"], 0);
    let r = theirs
        .patch(
            &id,
            json!([{ "op": "replace", "value": { "active": false } }]),
        )
        .await;
    assert_scim_error(&r, 404, None);
    assert_scim_error(
        &theirs
            .call(Method::DELETE, &format!("/Users/{id}"), None)
            .await,
        404,
        None,
    );
    assert!(s.member(&id).await.is_some());
    // The same userName is free in the other organisation.
    assert_eq!(
        theirs.post(json!({ "userName": "ann@x.org" })).await.status,
        201
    );
}

#[tokio::test]
async fn every_write_and_token_generation_is_in_the_audit_log() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    s.patch(
        &id,
        json!([{ "op": "add", "path": "title", "value": "CTO" }]),
    )
    .await;
    s.put(&id, json!({ "userName": "ann@x.org", "active": false }))
        .await;
    let bob = s.provision("bob@x.org").await;
    s.call(Method::DELETE, &format!("/Users/{bob}"), None).await;
    let log = s.api.admin().audit_log(s.org(), 100).await.unwrap();
    let entries: Vec<(AuditAction, &str, &str)> = log
        .iter()
        .rev()
        .map(|e| (e.action, e.actor.as_str(), e.target.as_str()))
        .collect();
    assert_eq!(
        entries[1..],
        [
            (AuditAction::SsoConfigured, "admin", "org_default"),
            (AuditAction::ScimTokenGenerated, "admin", "org_default"),
            (AuditAction::UserProvisioned, "scim", id.as_str()),
            (AuditAction::UserUpdated, "scim", id.as_str()),
            (AuditAction::UserDeactivated, "scim", id.as_str()),
            (AuditAction::UserProvisioned, "scim", bob.as_str()),
            (AuditAction::UserDeleted, "scim", bob.as_str()),
        ]
    );
    assert_eq!(
        entries[0].0,
        AuditAction::MemberAdded,
        "the bootstrap admin"
    );
}
