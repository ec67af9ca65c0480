//! The metrics' Prometheus endpoint on the real binary: off without a token, refused without
//! the token, and with it the counts of what a turn did, labelled by outcome and model and
//! never by member, session or organisation.

use knowledge_providers::fake::{OpenAi, Reply, USAGE, Wire};
use reqwest::StatusCode;
use serde_json::json;

use crate::binary::{Process, wait_answered};
use crate::crashes::{cookie, create, openai_at, provider};

const TOKEN: &str = "0123456789abcdef0123456789abcdef-metrics";

/// `GET /metrics` on `p` with `authorization`, if any: its status, `WWW-Authenticate` and body.
async fn scrape(p: &Process, authorization: Option<&str>) -> (StatusCode, Option<String>, String) {
    let mut req = reqwest::Client::new().get(format!("{}/metrics", p.base));
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    let r = req.send().await.unwrap();
    let challenge = (r.headers().get("www-authenticate")).map(|v| v.to_str().unwrap().to_owned());
    (r.status(), challenge, r.text().await.unwrap())
}

/// The value of the sample `series` (its name and labels, as rendered) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    (text.lines())
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

#[tokio::test]
async fn without_a_token_the_service_serves_no_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start(dir.path(), &[], &[]).await;
    let (_, _, body) = scrape(&p, Some(&format!("Bearer {TOKEN}"))).await;
    assert!(!body.contains("# TYPE"), "{body}");
}

#[tokio::test]
async fn a_scrape_without_the_token_or_with_another_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start(dir.path(), &["--metrics-token", TOKEN], &[]).await;
    for sent in [
        None,
        Some("Bearer"),
        Some("Bearer wrong-token"),
        Some(TOKEN),
    ] {
        let (status, challenge, body) = scrape(&p, sent).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{sent:?}");
        assert_eq!(challenge.as_deref(), Some("Bearer"));
        assert!(!body.contains("# TYPE"), "{body}");
    }
    let longer = format!("Bearer {TOKEN}x");
    assert_eq!(scrape(&p, Some(&longer)).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_token_too_short_to_be_safe_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(crate::binary::BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--addr", "127.0.0.1:0", "--metrics-token", "short"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("at least 32 characters"), "{said}");
}

#[tokio::test]
async fn the_metrics_count_a_turn_answered_and_one_failed_by_model_and_reason_only() {
    let fake = provider().await;
    fake.script(Reply::json(200, OpenAi::answer("Forty euros a day.")))
        .script(Reply::json(
            400,
            json!({"error": {"message": "no such model"}}),
        ));
    let env = openai_at(&fake.base());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start_with(dir.path(), &["--metrics-token", TOKEN], &[], &env).await;
    let cookie = cookie(dir.path()).await;
    let answered = create(&p, &cookie, "What is the per diem?").await;
    wait_answered(&p.base, &cookie, &answered).await;
    let failed = create(&p, &cookie, "And in Porto?").await;
    wait_answered(&p.base, &cookie, &failed).await;

    let (status, _, text) = scrape(&p, Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(status, StatusCode::OK);
    let count = |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series}:\n{text}"));
    assert_eq!(count(r#"turns{outcome="answered"}"#), 1.0);
    assert_eq!(count(r#"turns{outcome="failed"}"#), 1.0);
    assert_eq!(count(r#"turn_failures{reason="AgentRejected"}"#), 1.0);
    assert_eq!(
        count(r#"model_calls{model="test-model",outcome="ok"}"#),
        1.0
    );
    assert_eq!(
        count(r#"model_calls{model="test-model",outcome="rejected"}"#),
        1.0
    );
    let input = r#"model_tokens{model="test-model",direction="input"}"#;
    assert_eq!(count(input), USAGE.input as f64);
    let output = r#"model_tokens{model="test-model",direction="output"}"#;
    assert_eq!(count(output), USAGE.output as f64);
    assert_eq!(count("turn_answer_ms_count"), 1.0);
    assert_eq!(count("turn_first_words_ms_count"), 1.0);
    assert_eq!(count("cold_starts"), 1.0);
    // Low cardinality by construction: no member, session or organisation in any label.
    for id in [
        answered.as_str(),
        failed.as_str(),
        "org_default",
        "usr_default",
    ] {
        assert!(!text.contains(id), "{id} in:\n{text}");
    }
}
