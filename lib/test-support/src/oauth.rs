//! OAuth-protected MCP servers nobody here wrote, started for a test on loopback and stopped
//! when dropped: the MCP TypeScript SDK's example server (`scripts/mcp-oauth`) and an
//! authorization server on the Python `mcp` package's handlers (`scripts/oauth_server.py`),
//! which can also be the protected MCP server. `scripts/test` installs both.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// The repository's root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A free loopback port (another process may take it before the server binds it; the servers
/// that can bind port 0 themselves do).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Reads `child`'s output until a line for which `found` gives a value, within 20 s, then
/// keeps draining it so that the child never blocks on a full pipe.
async fn wait_for<T>(
    mut lines: Lines<BufReader<ChildStdout>>, found: impl Fn(&str) -> Option<T>,
) -> T {
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(value) = found(&line) {
                return value;
            }
        }
        panic!("the server stopped before it was ready");
    });
    let value = waited.await.expect("the server is ready within 20 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    value
}

fn output(child: &mut Child) -> Lines<BufReader<ChildStdout>> {
    BufReader::new(child.stdout.take().unwrap()).lines()
}

/// The MCP TypeScript SDK's example server, `--oauth --oauth-strict`: its in-memory
/// authorization server registers clients dynamically, approves at once, checks PKCE and that
/// `resource` is the MCP URL; it issues no refresh token. Its tool `greet` greets a name.
pub struct SdkExampleServer {
    /// Its MCP endpoint, `http://localhost:<port>/mcp`.
    pub url: String,
    /// Its authorization server's issuer.
    pub issuer: String,
    _child: Child,
}

impl SdkExampleServer {
    pub async fn start() -> Self {
        let script = root().join(
            "scripts/mcp-oauth/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
        );
        assert!(
            script.is_file(),
            "the example server is not installed: run `npm ci --prefix scripts/mcp-oauth` \
             (scripts/test does)"
        );
        let (port, auth_port) = (free_port(), free_port());
        let mut child = Command::new("node")
            .arg(&script)
            .args(["--oauth", "--oauth-strict"])
            .env("MCP_PORT", port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let listening = |line: &str| {
            line.contains("MCP Streamable HTTP Server listening")
                .then_some(())
        };
        wait_for(output(&mut child), listening).await;
        Self {
            url: format!("http://localhost:{port}/mcp"),
            issuer: format!("http://localhost:{auth_port}/"),
            _child: child,
        }
    }
}

/// The authorization server of `scripts/oauth_server.py`: rotating refresh tokens with reuse
/// detection, revocation, counts of what it served.
pub struct RotatingServer {
    /// Its issuer, `http://127.0.0.1:<port>` (its metadata adds a trailing slash).
    pub issuer: String,
    _child: Child,
}

impl RotatingServer {
    /// The authorization server alone, for tokens of `resource`, access tokens lasting
    /// `access_ttl` seconds.
    pub async fn start(resource: &str, access_ttl: u32) -> Self {
        Self::spawn(&["--resource", resource], access_ttl).await
    }

    /// The authorization server and the MCP server it protects, at [`RotatingServer::mcp_url`]
    /// (tool `whoami`).
    pub async fn with_mcp(access_ttl: u32) -> Self {
        Self::spawn(&["--mcp"], access_ttl).await
    }

    /// The same, whose first access tokens last `access_ttl` seconds and refreshed ones an
    /// hour (once refreshed, a grant is no longer due, whoever reads it next), and whose
    /// refreshes each take a second (callers elsewhere arrive while one is in flight).
    pub async fn expiring(access_ttl: u32) -> Self {
        let args = ["--mcp", "--refreshed-ttl", "3600", "--refresh-delay", "1"];
        Self::spawn(&args, access_ttl).await
    }

    async fn spawn(args: &[&str], access_ttl: u32) -> Self {
        let python = root().join(".venv/bin/python");
        assert!(
            python.is_file(),
            "no Python environment: scripts/test makes .venv with scripts/requirements.txt"
        );
        let mut child = Command::new(python)
            .arg(root().join("scripts/oauth_server.py"))
            .args(["--port", "0", "--access-ttl", &access_ttl.to_string()])
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python runs");
        let ready = |line: &str| line.strip_prefix("ready ").map(str::to_owned);
        let issuer = wait_for(output(&mut child), ready).await;
        Self {
            issuer,
            _child: child,
        }
    }

    /// The protected MCP endpoint, when started [`RotatingServer::with_mcp`].
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.issuer)
    }

    /// What it counted: `refreshes`, `reuses`, `revokedGrants`, `revocations`.
    pub async fn stats(&self) -> Value {
        let answer = reqwest::get(format!("{}/stats", self.issuer))
            .await
            .unwrap();
        answer.json().await.unwrap()
    }

    /// Makes its token endpoint answer `status` without issuing anything, or serve again
    /// (`None`).
    pub async fn fail_token_endpoint(&self, status: Option<u16>) {
        let answer = reqwest::Client::new()
            .post(format!("{}/token-fault", self.issuer))
            .json(&serde_json::json!({ "status": status }))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success());
    }

    /// Ends every access token it issued, as a server that revokes them early does.
    pub async fn expire_access_tokens(&self) {
        let client = reqwest::Client::new();
        let answer = client
            .post(format!("{}/expire", self.issuer))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success());
    }
}

/// Follows an authorization URL as a browser would, up to the authorization server's redirect
/// back (the servers here approve at once): where it sends the browser.
pub async fn authorize(url: &str) -> String {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(url).send().await.unwrap();
    let status = answer.status().as_u16();
    assert_eq!(status, 302, "{}", answer.text().await.unwrap());
    answer.headers()["location"].to_str().unwrap().to_owned()
}
