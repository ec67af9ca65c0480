//! Discovery against a server nobody here wrote: the MCP TypeScript SDK's example server with
//! its OAuth authorization server (`scripts/mcp-oauth`, which `scripts/test` installs), started
//! on free loopback ports for the test.

use std::process::Stdio;
use std::time::Duration;

use knowledge_egress::Egress;
use knowledge_oauth::{BoundedHttp, discover};
use reqwest::Url;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The example server in a child process, stopped when dropped.
struct ExampleServer {
    /// Its MCP endpoint, `http://localhost:<port>/mcp`.
    url: Url,
    /// Its authorization server's issuer.
    issuer: String,
    _child: tokio::process::Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl ExampleServer {
    async fn start() -> Self {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/mcp-oauth");
        let script = format!(
            "{root}/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
        );
        assert!(
            std::path::Path::new(&script).is_file(),
            "the example server is not installed: run `npm ci --prefix scripts/mcp-oauth` \
             (scripts/test does)"
        );
        let (port, auth_port) = (free_port(), free_port());
        let mut child = tokio::process::Command::new("node")
            .arg(&script)
            .args(["--oauth", "--oauth-strict"])
            .env("MCP_PORT", port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let listening = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("MCP Streamable HTTP Server listening") {
                    return;
                }
            }
            panic!("the example server stopped before it listened");
        };
        tokio::time::timeout(Duration::from_secs(20), listening)
            .await
            .expect("the example server listens within 20 s");
        // Keep draining its output so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            url: Url::parse(&format!("http://localhost:{port}/mcp")).unwrap(),
            issuer: format!("http://localhost:{auth_port}/"),
            _child: child,
        }
    }
}

#[tokio::test]
async fn the_mcp_sdk_example_server_is_discovered_from_its_401_to_its_authorization_server() {
    let server = ExampleServer::start().await;
    let http = BoundedHttp::new(Egress::ANYWHERE).unwrap();
    let found = discover(&http, &server.url).await.unwrap();
    assert_eq!(found.resource, server.url.as_str());
    assert_eq!(found.issuer, server.issuer);
    assert_eq!(found.token_endpoint, format!("{}token", server.issuer));
    assert_eq!(
        found.authorization_endpoint,
        format!("{}authorize", server.issuer)
    );
    assert_eq!(
        found.registration_endpoint,
        Some(format!("{}register", server.issuer))
    );
    assert_eq!(found.revocation_endpoint, None, "the example offers none");
    assert_eq!(found.scopes, ["mcp:tools"]);
}

#[tokio::test]
async fn the_guard_refuses_the_example_server_on_loopback_where_private_addresses_are_refused() {
    let server = ExampleServer::start().await;
    let http = BoundedHttp::new(Egress::PUBLIC_ONLY).unwrap();
    let e = discover(&http, &server.url).await.unwrap_err();
    assert!(
        matches!(e, knowledge_oauth::DiscoveryError::Refused { .. }),
        "{e:?}"
    );
}
