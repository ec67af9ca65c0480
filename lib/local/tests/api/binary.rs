//! The `knowledge` binary run as a user runs it, for the tests that start, kill and restart
//! it: the running service, its admin commands, and calls to its API over HTTP.

use std::path::Path;
use std::process::Stdio;

use knowledge_core::fault::{FAULT_POINTS_ENV, REACHED};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::support::{WAIT, kinds};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_knowledge");

/// Runs an admin command to completion; returns its standard output, trimmed.
pub(crate) async fn admin(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("KNOWLEDGE_SIGNING_KEY")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Runs an admin command with `--json`; returns what it printed, parsed.
pub(crate) async fn admin_json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&admin(dir, &all).await).expect("JSON output")
}

pub(crate) async fn call(
    method: reqwest::Method, base: &str, path: &str, cookie: &str, body: Option<Value>,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .header("cookie", cookie)
        .header("origin", base);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let bytes = r.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The ids of the sessions the cookie's user lists.
pub(crate) async fn listed(base: &str, cookie: &str) -> Vec<String> {
    let path = "/api/managed-agents/sessions";
    let (_, list) = call(reqwest::Method::GET, base, path, cookie, None).await;
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls (bounded) until the session has no run in flight; returns the event types.
pub(crate) async fn wait_answered(base: &str, cookie: &str, session: &str) -> Vec<String> {
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (_, t) = call(reqwest::Method::GET, base, &path, cookie, None).await;
        if t["workflowRunId"].is_null() {
            return kinds(t["events"].as_array().unwrap());
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{session} never finished"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A running `knowledge serve`.
pub(crate) struct Process {
    child: Child,
    pub(crate) base: String,
    /// What it printed up to its listening line.
    pub(crate) printed: String,
    /// The fault points it has stopped at, as it reports them.
    reached: mpsc::UnboundedReceiver<String>,
    /// Every line of its log so far.
    logs: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Process {
    /// Starts `knowledge serve` on `dir` on an ephemeral port, with `options` (its own or the
    /// global ones, such as the store's), stopping at the fault `points`; returns once it
    /// listens.
    pub(crate) async fn start(dir: &Path, options: &[&str], points: &[&str]) -> Self {
        Self::start_with(dir, options, points, &[]).await
    }

    /// The same, with the environment variables `env` set too. Hybrid search is off
    /// (`KNOWLEDGE_HYBRID_SEARCH=false`) unless `env` turns it on: the model is the concern of
    /// the tests that say so (`hybrid.rs`).
    pub(crate) async fn start_with(
        dir: &Path, options: &[&str], points: &[&str], env: &[(&str, &str)],
    ) -> Self {
        let mut child = Command::new(BIN)
            .arg("--data-dir")
            .arg(dir)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(options)
            .env(FAULT_POINTS_ENV, points.join(","))
            .env("KNOWLEDGE_HYBRID_SEARCH", "false")
            .envs(env.iter().copied())
            .env_remove("KNOWLEDGE_SIGNING_KEY")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (tx, reached) = mpsc::unbounded_channel();
        let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
        let logs = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = logs.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = errors.next_line().await {
                if let Some(point) = line.strip_prefix(REACHED) {
                    let _ = tx.send(point.to_owned());
                }
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = String::new();
        let base = tokio::time::timeout(WAIT, async {
            loop {
                let line = lines.next_line().await.unwrap().expect("serve starts");
                printed.push_str(&line);
                printed.push('\n');
                if let Some(rest) = line.strip_prefix("knowledge service listening on ") {
                    return rest.split_whitespace().next().unwrap().to_owned();
                }
            }
        })
        .await
        .expect("serve starts in time");
        // Keep reading, so that nothing it prints later meets a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            base,
            printed,
            reached,
            logs,
        }
    }

    /// Its log so far.
    pub(crate) fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// Waits (bounded) until the process reports that it stopped at `point`.
    pub(crate) async fn stopped_at(&mut self, point: &str) {
        let got = tokio::time::timeout(WAIT, self.reached.recv())
            .await
            .unwrap_or_else(|_| panic!("the process never reached {point}"));
        assert_eq!(got.as_deref(), Some(point));
    }

    /// SIGKILL, and waits for the process to be gone.
    pub(crate) async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}
