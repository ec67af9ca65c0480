//! A member removed while the service runs is refused at their very next request, however the
//! removal comes: the admin API, SCIM, or the `knowledge member remove` command run as another
//! process on the same SQLite file; even when the polls before it were answered from what the
//! service keeps of a tail that nothing has changed.

use std::path::Path;

use serde_json::{Value, json};

use crate::binary::{Process, admin, call, wait_answered};

const ORG: &str = "org_default";

/// How a member is removed.
#[derive(Debug, Clone, Copy)]
enum Removal {
    /// `knowledge member remove`, another process on the same file.
    Command,
    /// `DELETE /api/admin/members/{userId}`, by the default admin.
    AdminApi,
    /// `DELETE /api/scim/v2/Users/{id}`, by the identity provider.
    Scim,
}

/// A member's cookie for `user`, minted by the admin command.
async fn cookie_of(dir: &Path, user: &str) -> String {
    admin(dir, &["cookie", "--org", ORG, "--user", user]).await
}

/// Switches single sign-on on for the default organisation (its client secret on standard
/// input, as an operator types it).
async fn sso_on(dir: &Path) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(crate::binary::BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(["sso", "set", "--org", ORG, "--client-id", "app-1"])
        .args(["--issuer", "https://login.example.com/tenant/v2.0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(b"a-secret\n").await.unwrap();
    drop(input);
    assert!(child.wait().await.unwrap().success());
}

/// A SCIM request with the organisation's bearer token; its status and body.
async fn scim(
    method: reqwest::Method, base: &str, path: &str, token: &str, body: Option<Value>,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}/api/scim/v2{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        req = req
            .header("content-type", "application/scim+json")
            .body(body.to_string());
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// A new member of the default organisation, as `removal` would find them: their user id.
async fn new_member(dir: &Path, base: &str, removal: Removal, token: &str, n: usize) -> String {
    match removal {
        Removal::Command | Removal::AdminApi => {
            admin(dir, &["member", "add", "--org", ORG, "--role", "viewer"]).await
        }
        Removal::Scim => {
            let body = json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": format!("poller{n}@example.com"),
                "active": true,
            });
            let (status, user) =
                scim(reqwest::Method::POST, base, "/Users", token, Some(body)).await;
            assert_eq!(status, 201, "{user}");
            user["id"].as_str().unwrap().to_owned()
        }
    }
}

async fn remove(
    dir: &Path, base: &str, removal: Removal, token: &str, admin_cookie: &str, user: &str,
) {
    match removal {
        Removal::Command => {
            admin(dir, &["member", "remove", "--org", ORG, "--user", user]).await;
        }
        Removal::AdminApi => {
            let path = format!("/api/admin/members/{user}");
            let (status, body) =
                call(reqwest::Method::DELETE, base, &path, admin_cookie, None).await;
            assert_eq!(status, 200, "{body}");
        }
        Removal::Scim => {
            let path = format!("/Users/{user}");
            let (status, body) = scim(reqwest::Method::DELETE, base, &path, token, None).await;
            assert_eq!(status, 204, "{body}");
        }
    }
}

#[tokio::test]
async fn a_member_removed_while_polling_is_refused_at_the_next_poll_however_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = Process::start(d, &[], &[]).await;
    let base = &p.base;
    let admin_cookie = cookie_of(d, "usr_default").await;
    // SCIM needs the Business plan and single sign-on switched on.
    admin(d, &["org", "set", "--org", ORG, "--plan", "business"]).await;
    sso_on(d).await;
    let token = admin(d, &["scim", "token", "--org", ORG]).await;
    let mut next_polls = vec![];
    for (n, removal) in [Removal::Command, Removal::AdminApi, Removal::Scim]
        .into_iter()
        .enumerate()
    {
        let user = new_member(d, base, removal, &token, n).await;
        let cookie = cookie_of(d, &user).await;
        let (status, created) = call(
            reqwest::Method::POST,
            base,
            "/api/managed-agents/session",
            &cookie,
            Some(json!({ "text": "How do I cancel a running answer?" })),
        )
        .await;
        assert_eq!(status, 200, "{removal:?}: {created}");
        let session = created["id"].as_str().unwrap();
        let events = wait_answered(base, &cookie, session).await.len();
        let tail = format!(
            "/api/managed-agents/transcript?sessionId={session}&sinceEventId=evt_{events:012}"
        );
        // Polls at the tail: the first reads the store, the next are answered from the kept
        // tail (nothing commits in between).
        for _ in 0..3 {
            let (status, page) = call(reqwest::Method::GET, base, &tail, &cookie, None).await;
            assert_eq!(status, 200, "{removal:?}: {page}");
            assert_eq!(page["events"], json!([]), "{removal:?}: at the tail");
        }
        remove(d, base, removal, &token, &admin_cookie, &user).await;
        let (status, refused) = call(reqwest::Method::GET, base, &tail, &cookie, None).await;
        let code = refused["error"]["code"].as_str().map(str::to_owned);
        next_polls.push((format!("{removal:?}"), status, code));
    }
    p.kill().await;
    // The next poll after each removal, all three told at once.
    let refused = |way: &str| (way.to_owned(), 401, Some("unauthenticated".to_owned()));
    assert_eq!(
        next_polls,
        [refused("Command"), refused("AdminApi"), refused("Scim")]
    );
}
