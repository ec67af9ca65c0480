//! The service's metrics (`knowledge_core::telemetry`) on a Prometheus endpoint, `GET
//! /metrics`, for whoever holds its bearer token: off unless `serve --metrics-token` gives one,
//! because the counts tell how the service is used.

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use subtle::ConstantTimeEq;

/// The path the metrics are served at.
pub const PATH: &str = "/metrics";
/// Characters a token has at least: guessing one must be hopeless.
pub const TOKEN_MIN_CHARS: usize = 32;
/// How often histograms are folded into their buckets.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);
/// Buckets of the waits, in milliseconds: from a tenth of a second to two minutes.
const WAIT_BUCKETS: &[f64] = &[
    100.0, 250.0, 500.0, 1_000.0, 2_000.0, 4_000.0, 8_000.0, 15_000.0, 30_000.0, 60_000.0,
    120_000.0,
];

/// The token a scraper sends as `Authorization: Bearer <token>`.
#[derive(Clone)]
pub struct MetricsToken(String);

impl std::fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsToken(…)")
    }
}

impl std::str::FromStr for MetricsToken {
    type Err = String;

    /// Errors: a token shorter than [`TOKEN_MIN_CHARS`], or with a character a header cannot
    /// carry plainly.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.chars().count() < TOKEN_MIN_CHARS {
            return Err(format!(
                "the metrics token must have at least {TOKEN_MIN_CHARS} characters (openssl rand -hex 32 makes one)"
            ));
        }
        if !s.chars().all(|c| c.is_ascii_graphic()) {
            return Err("the metrics token must be printable ASCII without spaces".into());
        }
        Ok(Self(s.to_owned()))
    }
}

/// Installs the Prometheus recorder as the process's metrics recorder, and answers the route
/// that serves what it holds to `token`'s bearer. Call it once, in a Tokio runtime: it spawns
/// the recorder's upkeep.
///
/// # Errors
/// A recorder was installed already.
pub fn install(token: MetricsToken) -> Result<Router, String> {
    let handle = PrometheusBuilder::new()
        .set_buckets(WAIT_BUCKETS)
        .map_err(|e| e.to_string())?
        .install_recorder()
        .map_err(|e| e.to_string())?;
    knowledge_core::telemetry::describe();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(UPKEEP_EVERY);
        loop {
            ticks.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(Router::new().route(
        PATH,
        get(move |headers: HeaderMap| {
            let (handle, token) = (handle.clone(), token.clone());
            async move { scrape(&handle, &token, &headers) }
        }),
    ))
}

/// The metrics, or 401 without the token.
fn scrape(handle: &PrometheusHandle, token: &MetricsToken, headers: &HeaderMap) -> Response {
    let sent = (headers.get(header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !bool::from(sent.as_bytes().ct_eq(token.0.as_bytes())) {
        let body =
            r#"{"error":{"code":"unauthorized","message":"the metrics need their bearer token"}}"#;
        return (
            StatusCode::UNAUTHORIZED,
            [
                (header::WWW_AUTHENTICATE, "Bearer"),
                (header::CONTENT_TYPE, "application/json"),
            ],
            body,
        )
            .into_response();
    }
    let text = handle.render();
    (
        [
            (header::CONTENT_TYPE, "text/plain; version=0.0.4"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}
