//! The rules around users: unique user names, deprovisioning, and names kept as sent.

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, MEMORY_ITEM, MemberData, MemberDataKind};
use knowledge_core::ids::UserId;
use serde_json::json;

use super::{Scim, assert_scim_error};
use crate::support::{Api, GatedAgent, WAIT};

#[tokio::test]
async fn user_names_are_unique_in_an_organisation_whatever_their_case() {
    let s = Scim::start().await;
    s.provision("Åsa.Berg@Example.org").await;
    let before = s.snapshot().await;
    for clash in ["åsa.berg@example.org", "ÅSA.BERG@EXAMPLE.ORG"] {
        let r = s.post(json!({ "userName": clash })).await;
        assert_scim_error(&r, 409, Some("uniqueness"));
    }
    // Renaming another user onto the name is refused too.
    let other = s.provision("other@example.org").await;
    let before_rename = s.snapshot().await;
    let r = s
        .patch(
            &other,
            json!([{ "op": "replace", "path": "userName", "value": "ÅSA.berg@example.org" }]),
        )
        .await;
    assert_scim_error(&r, 409, Some("uniqueness"));
    assert_eq!(s.snapshot().await, before_rename);
    assert_eq!(before.0.len() + 1, before_rename.0.len());
}

#[tokio::test]
async fn concurrent_creates_of_one_user_name_give_exactly_one_201() {
    let s = Arc::new(Scim::start().await);
    let attempts: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.post(json!({ "userName": if i % 2 == 0 { "race@x.org" } else { "RACE@x.org" } }))
                    .await
                    .status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for a in attempts {
        statuses.push(a.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
    let r = s
        .get("/Users?filter=userName%20eq%20%22race%40x.org%22")
        .await;
    assert_eq!(r.body["totalResults"], 1);
}

#[tokio::test]
async fn deprovisioning_removes_the_members_data_cancels_their_turns_and_fails_their_cookies() {
    let agent = GatedAgent::new();
    let s = Scim::on(Api::start_with(agent.clone()).await).await;
    let id = s.provision("ann@example.org").await;
    let user = UserId::parse(&id).unwrap();
    let store = &s.api.svc.store;
    // Her agent remembered a note, as its memory tool saves one.
    let session = knowledge_core::ids::SessionId::generate();
    let from = knowledge_core::domain::SavedFrom {
        session: &session,
        seq: 2,
    };
    let now = s.api.clock_now();
    knowledge_core::memory::change(store.as_ref(), s.org(), &user, |m| {
        m.save("Prefers metric units", now, from).map(|_| ())
    })
    .await
    .unwrap()
    .1
    .unwrap();
    for (kind, name) in [(MemberDataKind::IntegrationToken, "crm")] {
        let data = MemberData {
            kind,
            name: name.into(),
            value: "sealed".into(),
        };
        let stored = knowledge_core::domain::AuditEntry::new(
            s.org(),
            s.api.clock_now(),
            knowledge_core::domain::Actor::Admin,
            AuditAction::MemberDataStored,
            user.as_str(),
        );
        store
            .put_member_data(s.org(), &user, &data, &stored)
            .await
            .unwrap();
    }
    // Ann asks a question; her turn is in flight when her account is deactivated.
    let ann = crate::support::User {
        cookie: s.api.cookie(&user, s.org()),
        id: user.clone(),
        org: s.org().clone(),
    };
    let created = s
        .api
        .post_as(
            &ann,
            "/api/managed-agents/session",
            json!({ "text": "Where is the handbook?" }),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    agent.asked().await;
    let r = s
        .patch(
            &id,
            json!([{ "op": "Replace", "path": "active", "value": "False" }]),
        )
        .await;
    assert_eq!(r.status, 204);

    assert_eq!(store.list_member_data(s.org(), &user).await.unwrap(), []);
    let memory = store
        .get_member_data(s.org(), &user, MemberDataKind::AgentMemory, MEMORY_ITEM)
        .await;
    assert_eq!(memory.unwrap(), None, "her memory is gone");
    assert_eq!(s.member(&id).await, None);
    let listed = s.api.get_as(&ann, "/api/managed-agents/sessions").await;
    assert_eq!(listed.status, 401, "her cookie fails at once");
    let key = knowledge_core::ids::SessionKey {
        user: user.clone(),
        org: s.org().clone(),
        session: knowledge_core::ids::SessionId::parse(created.body["id"].as_str().unwrap())
            .unwrap(),
    };
    let session = store.get_session(&key).await.unwrap().unwrap();
    assert!(
        session.cancelled_at.is_some(),
        "her running turn is cancelled"
    );
    agent.release(1);
    tokio::time::timeout(WAIT, async {
        loop {
            let events = store.list_events(&key, 0, 100).await.unwrap();
            if events
                .iter()
                .any(|e| e.kind() == knowledge_core::domain::EventKind::StatusTerminated)
            {
                break;
            }
            s.api.svc.workflow.idle().await;
        }
    })
    .await
    .expect("the run ends as cancelled");
    assert_eq!(
        *s.audit_actions().await.last().unwrap(),
        AuditAction::UserDeactivated
    );
}

#[tokio::test]
async fn unicode_names_are_kept_exactly_and_compared_without_case() {
    let s = Scim::start().await;
    let r = s
        .post(json!({
            "userName": "Zoë.Ångström@例え.jp",
            "name": { "givenName": "Zoë", "familyName": "Ångström", "formatted": "Zoë Ångström 🚀" },
            "displayName": "ゾーイ",
        }))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap();
    let read = s.get(&format!("/Users/{id}")).await;
    assert_eq!(read.body["userName"], "Zoë.Ångström@例え.jp");
    assert_eq!(read.body["name"]["formatted"], "Zoë Ångström 🚀");
    assert_eq!(read.body["displayName"], "ゾーイ");
    let q: String =
        form_urlencoded::byte_serialize("userName eq \"ZOË.ÅNGSTRÖM@例え.JP\"".as_bytes())
            .collect();
    assert_eq!(
        s.get(&format!("/Users?filter={q}")).await.body["totalResults"],
        1
    );
}
