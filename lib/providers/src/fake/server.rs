//! The fake's HTTP server: [`Fake`] listens on 127.0.0.1, records every request and answers it
//! from its standing replies or its script.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::stream::{events_of, streaming};
use super::{Reply, Seen, bounded};

/// A reply given to every request for one method and path, outside the script.
struct Standing {
    method: Method,
    path: String,
    status: u16,
    body: Value,
}

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// The time between two events of a streamed answer.
    pace: Mutex<Duration>,
    standing: Mutex<Vec<Standing>>,
    seen: Mutex<Vec<Seen>>,
    arrived: mpsc::UnboundedSender<Seen>,
    aborted: mpsc::UnboundedSender<()>,
}

/// The fake provider: every request is recorded, then answered by a standing reply for its
/// method and path if one is set, else by the next reply of the script (a 418 when the script
/// is spent).
pub struct Fake {
    addr: SocketAddr,
    shared: Arc<Shared>,
    arrived: tokio::sync::Mutex<mpsc::UnboundedReceiver<Seen>>,
    aborted: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

/// Reports on drop: the server dropped a held request, which it does when the client goes away.
struct DropReport(mpsc::UnboundedSender<()>);

impl Drop for DropReport {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn respond(status: u16, headers: Vec<(&'static str, String)>, body: String) -> Response {
    let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
    for (name, value) in headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

async fn serve(
    State(shared): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes,
) -> Response {
    let seen = Seen {
        method,
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: Instant::now(),
    };
    // A request that asked for a stream gets a 200 answer of its format as events.
    let mut stream = (seen.body["stream"] == json!(true)).then(|| seen.path.clone());
    shared.seen.lock().unwrap().push(seen.clone());
    let standing = shared
        .standing
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.method == seen.method && s.path == seen.path)
        .map(|s| Reply::json(s.status, s.body.clone()));
    let next = standing.or_else(|| shared.script.lock().unwrap().pop_front());
    let _ = shared.arrived.send(seen);
    let mut reply = next.unwrap_or_else(|| Reply::raw(418, "unscripted request"));
    loop {
        match reply {
            Reply::Answer {
                status,
                headers,
                body,
            } => {
                if let Some(events) = stream
                    .as_ref()
                    .and_then(|path| events_of(path, status, &body))
                {
                    let pace = *shared.pace.lock().unwrap();
                    return streaming(events, pace, shared.aborted.clone());
                }
                return respond(status, headers, body);
            }
            Reply::Hold => {
                let _report = DropReport(shared.aborted.clone());
                std::future::pending::<()>().await;
            }
            Reply::After(gate, then) => {
                let _ = gate.await;
                reply = *then;
            }
            Reply::Whole(inner) => {
                stream = None;
                reply = *inner;
            }
        }
    }
}

impl Fake {
    /// Streamed answers send one event every `pace` (none between them by default): for
    /// tests of what is seen while an answer is being written.
    pub fn pace(&self, pace: Duration) -> &Self {
        *self.shared.pace.lock().unwrap() = pace;
        self
    }

    /// A fake listening on an ephemeral port of 127.0.0.1, with an empty script.
    pub async fn start() -> Self {
        let (arrived_tx, arrived) = mpsc::unbounded_channel();
        let (aborted_tx, aborted) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            script: Mutex::default(),
            pace: Mutex::default(),
            standing: Mutex::default(),
            seen: Mutex::default(),
            arrived: arrived_tx,
            aborted: aborted_tx,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().fallback(serve).with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            addr,
            shared,
            arrived: tokio::sync::Mutex::new(arrived),
            aborted: tokio::sync::Mutex::new(aborted),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Appends `reply` to the script.
    pub fn script(&self, reply: Reply) -> &Self {
        self.shared.script.lock().unwrap().push_back(reply);
        self
    }

    /// Answers every `method` request to `path` with `body` as JSON and `status`, leaving the
    /// script alone (for health probes, which a service makes whenever its cache says so).
    pub fn always(&self, method: Method, path: &str, status: u16, body: Value) -> &Self {
        self.shared.standing.lock().unwrap().push(Standing {
            method,
            path: path.into(),
            status,
            body,
        });
        self
    }

    /// Every request received so far, in order of arrival.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The requests received so far for `method` and `path`, in order of arrival.
    pub fn seen_at(&self, method: &Method, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == *method && s.path == path)
            .collect()
    }

    /// The last request received. Panics when there was none.
    pub fn last(&self) -> Seen {
        self.seen().pop().expect("the fake received no request")
    }

    /// The next request to arrive that this fake has not yet handed out here, waited for
    /// within [`PATIENCE`](super::PATIENCE).
    pub async fn arrival(&self) -> Seen {
        bounded("a request to arrive", self.arrived.lock().await.recv())
            .await
            .expect("the fake is serving")
    }

    /// Like [`Fake::arrival`], skipping requests for other methods and paths.
    pub async fn arrival_at(&self, method: &Method, path: &str) -> Seen {
        bounded(&format!("a {method} {path} request to arrive"), async {
            let mut arrived = self.arrived.lock().await;
            loop {
                let seen = arrived.recv().await.expect("the fake is serving");
                if seen.method == *method && seen.path == path {
                    return seen;
                }
            }
        })
        .await
    }

    /// Resolves when a held request, or a streamed answer before its last event, has been
    /// dropped by the server, which happens when its client goes away; panics after
    /// [`PATIENCE`](super::PATIENCE).
    pub async fn abort(&self) {
        bounded(
            "the held request to be aborted",
            self.aborted.lock().await.recv(),
        )
        .await;
    }
}

/// A base URL where nothing listens: a port just bound and released.
pub async fn nowhere() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}
