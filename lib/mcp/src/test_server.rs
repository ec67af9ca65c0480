//! The test MCP server, `scripts/mcp_server.py` (the official Python SDK), started as a child
//! process on a free loopback port, for this crate's tests and the local service's. Only built
//! with the `test-server` feature.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use knowledge_core::ports::Integration;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::{Instant, sleep, timeout};

use crate::{Credential, McpIntegration, Timeouts};

/// How long to wait for the server to start, or to record something.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running test server; killed when dropped.
pub struct Server {
    /// Its MCP endpoint.
    pub url: String,
    _stdout: Lines<BufReader<ChildStdout>>,
    _child: Child,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The interpreter from `KNOWLEDGE_TEST_PYTHON`, else the workspace's `.venv`. Panics with
/// what to do when there is none: the tests that need it fail rather than skip.
fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("KNOWLEDGE_TEST_PYTHON") {
        let path = PathBuf::from(path);
        assert!(
            path.exists(),
            "KNOWLEDGE_TEST_PYTHON is {}, which does not exist",
            path.display()
        );
        return path;
    }
    let venv = workspace().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "the MCP tests need Python with the `mcp` package: run scripts/test, or create the \
         environment with `python3 -m venv .venv && .venv/bin/pip install -r \
         scripts/requirements.txt`, or set KNOWLEDGE_TEST_PYTHON"
    );
    venv
}

/// Starts `scripts/mcp_server.py` with `args` (`--token T` makes it require that bearer
/// token) and waits (bounded) for the URL it prints. Panics when it does not start.
pub async fn start(args: &[&str]) -> Server {
    let mut child = Command::new(python())
        .arg(workspace().join("scripts/mcp_server.py"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the test MCP server starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let url = timeout(PATIENCE, stdout.next_line())
        .await
        .expect("the test MCP server printed its URL in time")
        .expect("the test MCP server's stdout reads")
        .expect(
            "the test MCP server exited before printing its URL (its error is above; is the \
             `mcp` package of scripts/requirements.txt installed?)",
        );
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "unexpected first line {url:?}"
    );
    Server {
        url,
        _stdout: stdout,
        _child: child,
    }
}

impl Server {
    /// A client of the test's own, reaching the server as the integration `probe`.
    fn probe(&self) -> McpIntegration {
        let http = crate::McpHttp::new(knowledge_egress::Egress::ANYWHERE).unwrap();
        McpIntegration::new(
            "probe",
            &self.url,
            Credential::None,
            Timeouts::default(),
            http,
        )
    }

    /// How many notes the server's `create_note` wrote, asked through a client of its own.
    pub async fn notes_created(&self) -> u64 {
        let client = self.probe();
        let notes = (client.call(
            "probe_notes",
            &json!({}),
            std::pin::pin!(std::future::pending()),
        ))
        .await
        .expect("the notes tool answers");
        notes["created"].as_u64().expect("a count of notes")
    }

    /// Polls (bounded) the server's `cancellations` counts, `{"started", "cancelled"}` of its
    /// `slow` tool, through a client of its own, until `done` holds of them.
    pub async fn wait_for_counts(&self, done: impl Fn(&Value) -> bool) {
        let client = self.probe();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let counts = client
                .call(
                    "probe_cancellations",
                    &json!({}),
                    std::pin::pin!(std::future::pending()),
                )
                .await
                .expect("the cancellations tool answers");
            if done(&counts) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the server's counts stayed at {counts}"
            );
            sleep(Duration::from_millis(50)).await;
        }
    }
}
