//! What a slow or hostile client does to the server, on raw sockets: connections that send
//! nothing, half a request or half a body, or stop reading their answers, are closed after
//! their bound; connections past the limit wait; bodies that declare too much are refused from
//! their head; heads over the limits get the documented JSON error.

use std::time::Duration;

use knowledge_assembly::operator::OrgChanges;
use knowledge_core::domain::Plan;
use knowledge_local::ServerLimits;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::support::{Api, Setup};

/// The bounds these tests run the server with: short, so that waiting them out is quick.
const SHORT: ServerLimits = ServerLimits {
    header_timeout: Duration::from_secs(1),
    body_timeout: Duration::from_secs(1),
    write_timeout: Duration::from_secs(1),
    max_connections: 512,
};

/// How long a test waits for the server to answer or close; several times the bounds above and
/// far below the defaults, so a server that ignores the bounds fails the test.
const BOUND: Duration = Duration::from_secs(6);

async fn service(limits: ServerLimits) -> Api {
    let agent = std::sync::Arc::new(knowledge_core::adapters::agent::BuiltinAgent);
    Api::start_setup(Setup {
        limits,
        ..Setup::new(agent)
    })
    .await
}

async fn connect(api: &Api) -> TcpStream {
    TcpStream::connect(api.base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// What the server sent until it closed the connection, and how long that took. Fails when it
/// keeps the connection open past [`BOUND`].
async fn until_closed(stream: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut received = Vec::new();
    tokio::time::timeout(BOUND, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server closes the connection within its bound");
    (
        String::from_utf8_lossy(&received).into_owned(),
        started.elapsed(),
    )
}

/// One whole response on a connection the server keeps open: its status and JSON body.
async fn response(stream: &mut TcpStream) -> (u16, String, Value) {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let (head, length) = loop {
        let n = tokio::time::timeout(BOUND, stream.read(&mut buf))
            .await
            .expect("the server answers in time")
            .unwrap();
        assert!(n > 0, "the server closed before answering");
        received.extend_from_slice(&buf[..n]);
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).into_owned();
            received.drain(..end + 4);
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            break (head, length);
        }
    };
    while received.len() < length {
        let n = tokio::time::timeout(BOUND, stream.read(&mut buf))
            .await
            .expect("the body arrives in time")
            .unwrap();
        assert!(n > 0, "the server closed mid-body");
        received.extend_from_slice(&buf[..n]);
    }
    (
        status_of(&head),
        head,
        serde_json::from_slice(&received).unwrap_or(Value::Null),
    )
}

fn status_of(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn body_of(response: &str) -> Value {
    response
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or(Value::Null)
}

/// A POST's head, as the browser app sends it, with `extra` header lines.
fn post_head(api: &Api, path: &str, extra: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nCookie: {}\r\nOrigin: {}\r\n\
         Content-Type: application/json\r\n{extra}\r\n",
        api.user.cookie, api.origin
    )
}

#[tokio::test]
async fn connections_that_send_nothing_or_half_a_head_are_closed_after_the_header_timeout() {
    let api = service(SHORT).await;
    let partial = [
        "",
        "GET /api/managed-agents/sess",
        "GET /api/managed-agents/sessions HTTP/1.1\r\nHost: test\r\nCookie: ks_sess",
    ];
    for sent in partial {
        let mut stream = connect(&api).await;
        stream.write_all(sent.as_bytes()).await.unwrap();
        let (received, took) = until_closed(&mut stream).await;
        // hyper has no request to answer: it closes without a word.
        assert_eq!(received, "", "{sent:?}");
        assert!(
            took >= Duration::from_millis(900),
            "{sent:?} closed early: {took:?}"
        );
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let api = service(SHORT).await;
    let mut stream = connect(&api).await;
    let request = format!(
        "GET /api/managed-agents/sessions HTTP/1.1\r\nHost: test\r\nCookie: {}\r\n\r\n",
        api.user.cookie
    );
    for _ in 0..2 {
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, _, body) = response(&mut stream).await;
        assert_eq!(status, 200, "{body}");
    }
    let (received, took) = until_closed(&mut stream).await;
    assert_eq!(received, "");
    assert!(took >= Duration::from_millis(900), "closed early: {took:?}");
}

#[tokio::test]
async fn a_body_shorter_than_its_length_or_an_unfinished_chunked_body_gets_408_and_is_closed() {
    let api = service(SHORT).await;
    let heads = [
        post_head(
            &api,
            "/api/managed-agents/session",
            "Content-Length: 100\r\n",
        ) + "{\"text\":",
        post_head(
            &api,
            "/api/managed-agents/session",
            "Transfer-Encoding: chunked\r\n",
        ) + "8\r\n{\"text\":\r\n4\r\n\"a",
    ];
    for sent in heads {
        let mut stream = connect(&api).await;
        stream.write_all(sent.as_bytes()).await.unwrap();
        let (received, _) = until_closed(&mut stream).await;
        assert_eq!(status_of(&received), 408, "{received}");
        assert_eq!(body_of(&received)["error"]["code"], "request_timeout");
    }
    let sessions = api
        .svc
        .store
        .list_sessions(&api.user.id, &api.user.org, 50)
        .await
        .unwrap();
    assert!(sessions.is_empty(), "nothing was created");
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_with_413_before_any_body_is_sent() {
    // The default body timeout (30 s) is far past the bound: only an answer from the head
    // alone arrives in time.
    let api = service(ServerLimits::default()).await;
    let org = api.user.org.clone();
    let changes = OrgChanges {
        plan: Some(Plan::Business),
        ..Default::default()
    };
    api.admin().update_org(&org, changes).await.unwrap();
    api.set_sso(&org, true).await;
    let token = api.admin().generate_scim_token(&org).await.unwrap();

    let mut stream = connect(&api).await;
    let head = post_head(
        &api,
        "/api/managed-agents/session",
        "Content-Length: 999999999\r\n",
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (status, head, body) = response(&mut stream).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (413, &Value::from("payload_too_large")),
        "{body}"
    );
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );

    let mut stream = connect(&api).await;
    let scim = format!(
        "POST /api/scim/v2/Users HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/scim+json\r\nContent-Length: 999999999\r\n\r\n"
    );
    stream.write_all(scim.as_bytes()).await.unwrap();
    let (status, _, body) = response(&mut stream).await;
    assert_eq!(
        (status, &body["status"]),
        (413, &Value::from("413")),
        "{body}"
    );
}

#[tokio::test]
async fn heads_over_the_limits_get_the_documented_json_error() {
    let api = service(SHORT).await;
    let long_target = format!(
        "GET /api/managed-agents/sessions?pad={} HTTP/1.1\r\nHost: test\r\n\r\n",
        "a".repeat(knowledge_http::limits::URI_MAX_BYTES)
    );
    let many_headers = format!(
        "GET /api/managed-agents/sessions HTTP/1.1\r\nHost: test\r\n{}\r\n",
        (0..150)
            .map(|i| format!("X-Pad-{i}: {i}\r\n"))
            .collect::<String>()
    );
    let large_headers = format!(
        "GET /api/scim/v2/Users HTTP/1.1\r\nHost: test\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(knowledge_http::limits::HEADERS_MAX_BYTES)
    );
    for (sent, status, code) in [
        (long_target, 414, "uri_too_long"),
        (many_headers, 431, "headers_too_large"),
    ] {
        let mut stream = connect(&api).await;
        stream.write_all(sent.as_bytes()).await.unwrap();
        let (got, _, body) = response(&mut stream).await;
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (status, Some(code)),
            "{body}"
        );
    }
    // Under /api/scim, in SCIM's error shape.
    let mut stream = connect(&api).await;
    stream.write_all(large_headers.as_bytes()).await.unwrap();
    let (got, _, body) = response(&mut stream).await;
    assert_eq!((got, &body["status"]), (431, &Value::from("431")), "{body}");

    // What cannot be parsed at all gets hyper's bare answer, as the README documents.
    let mut stream = connect(&api).await;
    stream.write_all(b"NOT HTTP AT ALL\r\n\r\n").await.unwrap();
    let (received, _) = until_closed(&mut stream).await;
    assert_eq!(status_of(&received), 400, "{received}");
    assert_eq!(body_of(&received), Value::Null, "{received}");
}

#[tokio::test]
async fn a_client_that_stops_reading_its_answers_is_cut_off_after_the_write_timeout() {
    use knowledge_core::domain::{NewEvent, Session};
    let api = service(SHORT).await;
    // A session whose first page is about 3 MB of JSON.
    let key = api.key(knowledge_core::ids::SessionId::generate().as_str());
    let now = api.clock_now();
    let mut session = Session::new(key.clone(), "large".into(), now);
    let text = "x".repeat(30 * 1024);
    let events = session.place(
        now,
        (0..99).map(|_| NewEvent::user_message(&text)).collect(),
    );
    api.svc
        .store
        .create_session(&session, &events, None)
        .await
        .unwrap();

    // A client with a small receive window (the kernel keeps about twice the 4 KiB asked):
    // the server's writes stall soon after its first bytes, not only once several answers
    // have filled megabytes of buffers, so its write timeout starts without much work first.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr = api.base.trim_start_matches("http://").parse().unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let request = format!(
        "GET /api/managed-agents/transcript?sessionId={} HTTP/1.1\r\nHost: test\r\nCookie: {}\r\n\r\n",
        key.session, api.user.cookie
    );
    const ASKED: usize = 30;
    stream
        .write_all(request.repeat(ASKED).as_bytes())
        .await
        .unwrap();
    // The client stops reading for twice the write timeout, counted from the first bytes of
    // the answers (peeked, not read): the socket buffers fill, the server's write stalls, and
    // the server gives up on the connection. Counted from there, the wait does not include
    // the server's work before it writes (reading the log, making 3 MB of JSON), which a
    // loaded machine can stretch past the write timeout.
    let mut first = [0u8; 1];
    (tokio::time::timeout(BOUND, stream.peek(&mut first)).await)
        .expect("the server starts answering")
        .unwrap();
    tokio::time::sleep(2 * SHORT.write_timeout).await;
    let (received, _) = until_closed(&mut stream).await;
    let answered = received.matches("HTTP/1.1 200").count();
    assert!(
        answered < ASKED,
        "all {ASKED} answers were written to a client that stopped reading"
    );
}

#[tokio::test]
async fn connections_past_the_limit_wait_until_one_closes() {
    let limits = ServerLimits {
        header_timeout: Duration::from_secs(20),
        max_connections: 2,
        ..SHORT
    };
    let api = service(limits).await;
    let idle = [connect(&api).await, connect(&api).await];
    let mut waiting = connect(&api).await;
    let request = format!(
        "GET /api/managed-agents/sessions HTTP/1.1\r\nHost: test\r\nCookie: {}\r\n\r\n",
        api.user.cookie
    );
    waiting.write_all(request.as_bytes()).await.unwrap();
    let mut first = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(500), waiting.peek(&mut first)).await;
    assert!(
        early.is_err(),
        "a third connection was served while two held every slot"
    );
    drop(idle);
    let (status, _, body) = response(&mut waiting).await;
    assert_eq!(status, 200, "{body}");
}
