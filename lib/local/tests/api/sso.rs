//! Single sign-on at the command line: the `knowledge sso` commands seal the client secret and
//! never print it. Sign-in itself, end to end against a real OpenID provider, is tested in
//! process with the rest of the HTTP suite (`lib/assembly/tests/http/sso.rs`).

use std::process::Stdio;

use serde_json::{Value, json};

/// Runs `knowledge --data-dir <dir> <args>` with `stdin` as its standard input; returns its
/// exit success and standard output.
async fn knowledge(dir: &std::path::Path, args: &[&str], stdin: &str) -> (bool, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(crate::binary::BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let out = child.wait_with_output().await.unwrap();
    let all = [out.stdout, out.stderr].concat();
    (out.status.success(), String::from_utf8(all).unwrap())
}

#[tokio::test]
async fn the_sso_commands_seal_the_secret_from_stdin_and_never_print_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let org = crate::binary::admin(
        d,
        &["org", "create", "--name", "Acme", "--plan", "business"],
    )
    .await;
    let set = [
        "sso",
        "set",
        "--org",
        &org,
        "--issuer",
        "https://login.example.com/tenant/v2.0",
        "--client-id",
        "app-1",
        "--domain",
        "Example.COM",
        "--user-name-claim",
        "upn",
    ];
    let (ok, out) = knowledge(d, &set, "the-very-secret\n").await;
    assert!(ok, "{out}");
    assert!(!out.contains("the-very-secret"), "{out}");
    let shown: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(shown["emailDomains"], json!(["example.com"]));
    assert_eq!(shown["userNameClaim"], "upn");
    assert_eq!(shown["enabled"], true);
    assert_eq!(
        shown["callbackUrl"],
        format!("http://127.0.0.1:3000/api/auth/callback/{org}")
    );

    let (ok, out) = knowledge(d, &["sso", "disable", "--org", &org], "").await;
    assert!(ok && !out.contains("the-very-secret"), "{out}");
    let (ok, out) = knowledge(d, &["sso", "show", "--org", &org], "").await;
    let shown: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(ok && shown["enabled"] == false, "{out}");
    // An empty secret keeps the stored one; for a new client id it is required.
    let (ok, out) = knowledge(d, &set, "\n").await;
    assert!(ok, "{out}");
    let mut other = set.to_vec();
    other[7] = "app-2";
    let (ok, out) = knowledge(d, &other, "\n").await;
    assert!(!ok && out.contains("clientSecret is required"), "{out}");
    let (ok, out) = knowledge(
        d,
        &[
            "sso",
            "set",
            "--org",
            &org,
            "--issuer",
            "http://evil.example",
            "--client-id",
            "x",
        ],
        "s\n",
    )
    .await;
    assert!(!ok && out.contains("issuer"), "{out}");
    // The secret is in the store sealed only.
    let mut stored = std::fs::read(d.join("store.db")).unwrap();
    stored.extend(std::fs::read(d.join("store.db-wal")).unwrap_or_default());
    assert!(
        String::from_utf8_lossy(&stored).contains("app-1"),
        "the store holds the client"
    );
    assert!(!String::from_utf8_lossy(&stored).contains("the-very-secret"));
}
