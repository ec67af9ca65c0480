//! SCIM 2.0 over the real HTTP server: the request sequences Microsoft Entra ID and Okta send,
//! reproduced from their public documentation, then the rules around them (uniqueness,
//! deprovisioning, lists, groups, authentication, audit) and bad input.
//!
//! The service set up for SCIM and the helpers the tests share are here; the tests are in
//! `entra` and `okta` (the identity providers' sequences), `users` (uniqueness,
//! deprovisioning, names), `lists`, `groups` and `group_push` (groups, and Entra's and
//! Okta's group sequences), `discovery`, `access` (tokens, plans,
//! organisations, audit) and `errors` (bad input).

mod access;
mod discovery;
mod entra;
mod errors;
mod group_push;
mod groups;
mod lists;
mod okta;
mod users;

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, Group, Member, Plan};
use knowledge_core::ids::{OrgId, UserId};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, Reply};

const CORE: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
const GROUP: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const ERROR: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// The service with the default organisation set up for SCIM: Business plan, SSO enabled, and
/// a token.
struct Scim {
    api: Api,
    token: String,
}

impl Scim {
    async fn start() -> Self {
        Self::on(Api::start().await).await
    }

    async fn on(api: Api) -> Self {
        let org = api.user.org.clone();
        enable_sso(&api, &org).await;
        let token = api.admin().generate_scim_token(&org).await.unwrap();
        Self { api, token }
    }

    fn org(&self) -> &OrgId {
        &self.api.user.org
    }

    /// A request to `/api/scim/v2{path}` as an identity provider sends it.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut req = self
            .api
            .http
            .request(method, format!("{}/api/scim/v2{path}", self.api.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req
                .header("content-type", "application/scim+json")
                .body(body.to_string());
        }
        self.api.send(req).await
    }

    async fn get(&self, path: &str) -> Reply {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, body: Value) -> Reply {
        self.call(Method::POST, "/Users", Some(body)).await
    }

    async fn patch(&self, id: &str, ops: Value) -> Reply {
        let body = json!({ "schemas": [PATCH_OP], "Operations": ops });
        self.call(Method::PATCH, &format!("/Users/{id}"), Some(body))
            .await
    }

    async fn put(&self, id: &str, body: Value) -> Reply {
        self.call(Method::PUT, &format!("/Users/{id}"), Some(body))
            .await
    }

    /// Provisions a plain user; returns its id.
    async fn provision(&self, user_name: &str) -> String {
        let r = self
            .post(json!({ "schemas": [CORE], "userName": user_name, "active": true }))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    async fn member(&self, id: &str) -> Option<Member> {
        self.api
            .svc
            .store
            .get_member(self.org(), &UserId::parse(id).unwrap())
            .await
            .unwrap()
    }

    async fn audit_actions(&self) -> Vec<AuditAction> {
        let mut log = self.api.admin().audit_log(self.org(), 100).await.unwrap();
        log.reverse();
        log.iter().map(|e| e.action).collect()
    }

    /// The service with another organisation, `org_other`, set up for SCIM on the same store.
    async fn other_org(&self) -> Scim {
        let other = OrgId::parse("org_other").unwrap();
        let admin = self.api.admin();
        (admin.create_org(Some(other.clone()), "Other", Plan::Business))
            .await
            .unwrap();
        self.api.set_sso(&other, true).await;
        Scim {
            token: admin.generate_scim_token(&other).await.unwrap(),
            api: Api::start_on(
                self.api.dir.clone(),
                Arc::new(knowledge_core::adapters::agent::BuiltinAgent),
            )
            .await,
        }
    }

    async fn create_group(&self, body: Value) -> Reply {
        self.call(Method::POST, "/Groups", Some(body)).await
    }

    async fn patch_group(&self, id: &str, ops: Value) -> Reply {
        let body = json!({ "schemas": [PATCH_OP], "Operations": ops });
        self.call(Method::PATCH, &format!("/Groups/{id}"), Some(body))
            .await
    }

    /// The members' ids of group `id` as SCIM reads them, by id.
    async fn member_ids(&self, id: &str) -> Vec<String> {
        let r = self.get(&format!("/Groups/{id}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let members = r.body["members"].as_array().unwrap();
        members
            .iter()
            .map(|m| m["value"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Every group of the organisation as stored, with its members.
    async fn groups(&self) -> Vec<(Group, Vec<UserId>)> {
        let store = &self.api.svc.store;
        let mut all = Vec::new();
        for g in store.list_groups(self.org()).await.unwrap() {
            let members = store
                .list_group_members(self.org(), &g.id, None, 10_000)
                .await;
            all.push((g, members.unwrap()));
        }
        all
    }

    /// Everything SCIM can change, to show that a refused request changed nothing.
    async fn snapshot(&self) -> (Vec<Member>, usize) {
        let members = self.api.svc.store.list_members(self.org()).await.unwrap();
        (members, self.audit_actions().await.len())
    }
}

async fn enable_sso(api: &Api, org: &OrgId) {
    api.set_sso(org, true).await;
}

fn assert_scim_error(r: &Reply, status: u16, scim_type: Option<&str>) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.body["schemas"], json!([ERROR]), "{}", r.body);
    assert_eq!(r.body["status"], json!(status.to_string()));
    assert_eq!(r.body["scimType"].as_str(), scim_type, "{}", r.body);
    assert!(r.body["detail"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(
        r.headers["content-type"], "application/scim+json; charset=utf-8",
        "errors are SCIM too"
    );
}
