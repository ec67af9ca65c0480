//! A client of the HTTP interface for tests: it sends requests as the browser app does (cookie,
//! `Origin`, JSON) and reads the replies, over whatever [`Transport`] the harness gives it (a
//! socket to the local server, or the application's router in process).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// Bound on every wait for the service to reach a state; reaching it is signalled, not slept on.
pub const WAIT: Duration = Duration::from_secs(20);
/// The bound on waiting for every run to finish: a test may queue sixty turns, which on the
/// DynamoDB stand-in, on a loaded two-core machine, have taken over 20 s together.
pub const SETTLE: Duration = Duration::from_secs(90);

/// How a request reaches the service.
#[async_trait]
pub trait Transport: Send + Sync {
    /// Sends `req`, built on any client, and returns the answer. Panics when the request is
    /// malformed or its server cannot be reached: a test fails there.
    async fn execute(&self, req: reqwest::RequestBuilder) -> reqwest::Response;
}

/// Over the network: a server on a socket. Each answer's status is checked against the
/// OpenAPI document ([`crate::documented::check`]).
pub struct Network;

#[async_trait]
impl Transport for Network {
    async fn execute(&self, req: reqwest::RequestBuilder) -> reqwest::Response {
        let (client, req) = req.build_split();
        let req = req.expect("a well-formed request");
        let (method, path) = (req.method().to_string(), req.url().path().to_owned());
        let answer = client
            .execute(req)
            .await
            .expect("request reaches the server");
        crate::documented::check(&method, &path, answer.status().as_u16());
        answer
    }
}

/// An answer of the service: its status, headers and JSON body (`Null` when empty).
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The error body's `code`, or `""` when there is none.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// `Retry-After` in seconds, when present.
    pub fn retry_after(&self) -> Option<u64> {
        self.headers.get("retry-after")?.to_str().ok()?.parse().ok()
    }
}

/// A signed-in user of an organisation.
#[derive(Clone)]
pub struct User {
    pub id: UserId,
    pub org: OrgId,
    pub cookie: String,
}

/// A client of the service at `base`, whose application's origin is `origin`, signed in as
/// `user` by default.
pub struct Client {
    pub base: String,
    pub origin: String,
    pub http: reqwest::Client,
    pub user: User,
    transport: Arc<dyn Transport>,
}

impl Client {
    pub fn new(base: &str, origin: &str, user: User, transport: Arc<dyn Transport>) -> Self {
        Self {
            base: base.to_owned(),
            origin: origin.to_owned(),
            http: reqwest::Client::new(),
            user,
            transport,
        }
    }

    /// How this client reaches the service, for another client (a browser) to share.
    pub fn transport(&self) -> Arc<dyn Transport> {
        self.transport.clone()
    }

    /// The key of the default user's `session`.
    pub fn key(&self, session: &str) -> SessionKey {
        SessionKey {
            user: self.user.id.clone(),
            org: self.user.org.clone(),
            session: SessionId::parse(session).unwrap(),
        }
    }

    /// Sends `req` ([`Transport::execute`]).
    pub async fn execute(&self, req: reqwest::RequestBuilder) -> reqwest::Response {
        self.transport.execute(req).await
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = self.execute(req).await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("JSON body")
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A POST as a browser of the application sends it: cookie, Origin, JSON.
    pub async fn post_as(&self, user: &User, path: &str, body: Value) -> Reply {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .header("cookie", &user.cookie)
                .header("origin", &self.origin)
                .json(&body),
        )
        .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.post_as(&self.user, path, body).await
    }

    /// A POST with the given headers and raw body, for request-rule tests.
    pub async fn post_raw(
        &self, path: &str, headers: &[(&str, &str)], body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut req = self.http.post(format!("{}{path}", self.base)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    pub async fn get_as(&self, user: &User, path: &str) -> Reply {
        self.send(
            self.http
                .get(format!("{}{path}", self.base))
                .header("cookie", &user.cookie),
        )
        .await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.get_as(&self.user, path).await
    }

    pub async fn delete_as(&self, user: &User, session: &str) -> Reply {
        self.send(
            self.http
                .delete(format!(
                    "{}/api/managed-agents/session?sessionId={session}",
                    self.base
                ))
                .header("cookie", &user.cookie)
                .header("origin", &self.origin),
        )
        .await
    }

    /// A DELETE of the session route with cookie and Origin, for request-rule tests.
    pub async fn send_delete(&self, path_and_query: &str) -> Reply {
        self.send(
            self.http
                .delete(format!("{}{path_and_query}", self.base))
                .header("cookie", &self.user.cookie)
                .header("origin", &self.origin),
        )
        .await
    }

    pub async fn create(&self, text: &str) -> String {
        let r = self
            .post("/api/managed-agents/session", json!({ "text": text }))
            .await;
        assert_eq!(r.status, 200, "create failed: {}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    pub async fn message(&self, session: &str, text: &str) -> Reply {
        self.post(
            "/api/managed-agents/message",
            json!({ "sessionId": session, "text": text }),
        )
        .await
    }

    pub async fn cancel(&self, session: &str) -> Reply {
        self.post(
            "/api/managed-agents/cancel",
            json!({ "sessionId": session }),
        )
        .await
    }

    pub async fn transcript(&self, session: &str) -> Reply {
        self.get(&format!(
            "/api/managed-agents/transcript?sessionId={session}"
        ))
        .await
    }

    /// Every event of the session, following cursors across pages.
    pub async fn all_events(&self, session: &str) -> Vec<Value> {
        let mut events: Vec<Value> = vec![];
        loop {
            let path = match events.last() {
                None => format!("/api/managed-agents/transcript?sessionId={session}"),
                Some(e) => format!(
                    "/api/managed-agents/transcript?sessionId={session}&sinceEventId={}",
                    e["id"].as_str().unwrap()
                ),
            };
            let r = self.get(&path).await;
            assert_eq!(r.status, 200, "{}", r.body);
            events.extend(r.body["events"].as_array().unwrap().iter().cloned());
            if !r.body["hasMore"].as_bool().unwrap() {
                return events;
            }
        }
    }
}

/// The `type` of each event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}
