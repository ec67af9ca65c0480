//! The browser app's files, served by the service itself: the page at `/`, at each
//! conversation's address (`/c/<session>`), at the member's connections (`/connections`) and
//! memory (`/memory`), and at the admin area's (`/admin`, `/admin/<section>`), and the hashed assets under `/assets/`. The page is
//! `no-cache` (a deploy shows at once), the assets are immutable for a year (their names change
//! with their content), in brotli when the browser accepts it (compressed at build time; the
//! edge compresses the rest with gzip). Everything is served under a strict
//! Content-Security-Policy: scripts, styles and requests only from this origin, no inline
//! script, no frames.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

mod embedded {
    /// A file of `app/dist/assets`, and its brotli compression when that is smaller.
    pub struct Asset {
        pub name: &'static str,
        pub bytes: &'static [u8],
        pub brotli: Option<&'static [u8]>,
    }

    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// What the page may load and do.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const PAGE_CACHE: &str = "no-cache";
const ASSET_CACHE: &str = "public, max-age=31536000, immutable";

/// Where the app's files come from.
#[derive(Debug, Clone, Default)]
pub enum Files {
    /// Built into the binary from `app/dist`.
    #[default]
    Embedded,
    /// Read from a folder laid out as `app/dist` at each request: for working on the app
    /// (`serve --app-dir app/dist` while `npm run build` rewrites it).
    Folder(PathBuf),
}

/// The paths at which the app's page is served (`GET`): every view a link can open.
pub const PAGES: [&str; 7] = [
    "/",
    "/c/{session}",
    "/connections",
    "/memory",
    "/usage",
    "/admin",
    "/admin/{section}",
];

/// The path of the app's hashed assets (`GET`).
pub const ASSETS: &str = "/assets/{name}";

/// The routes of the app's files.
pub fn routes(files: Files) -> Router {
    let files = Arc::new(files);
    PAGES
        .iter()
        .fold(Router::new(), |router, path| router.route(path, get(page)))
        .route(ASSETS, get(asset))
        .with_state(files)
}

fn secured(mut response: Response, cache: &'static str) -> Response {
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    let csp = HeaderValue::from_static(CONTENT_SECURITY_POLICY);
    h.insert(header::CONTENT_SECURITY_POLICY, csp);
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// Whether `name` can be an asset's name: no path, no dot files.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Whether `headers` accept the `br` content coding (listed, and not with `q=0`).
fn accepts_brotli(headers: &HeaderMap) -> bool {
    let accepted = headers.get_all(header::ACCEPT_ENCODING).iter();
    accepted
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            name.eq_ignore_ascii_case("br") && !refused
        })
}

/// The embedded asset `name` in brotli, when it has such a copy.
fn brotli_copy(files: &Files, name: &str) -> Option<Bytes> {
    match files {
        Files::Embedded => embedded::ASSETS
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.brotli.map(Bytes::from_static)),
        Files::Folder(_) => None,
    }
}

/// The file at `relative` (`index.html` or `assets/<name>`, the name already checked).
async fn read(files: &Files, relative: &str) -> Option<Bytes> {
    match files {
        Files::Embedded if relative == "index.html" => Some(Bytes::from_static(embedded::INDEX)),
        Files::Embedded => {
            let name = relative.strip_prefix("assets/")?;
            let found = embedded::ASSETS.iter().find(|a| a.name == name);
            found.map(|a| Bytes::from_static(a.bytes))
        }
        Files::Folder(dir) => match tokio::fs::read(dir.join(relative)).await {
            Ok(bytes) => Some(Bytes::from(bytes)),
            Err(e) => {
                tracing::debug!(error = %e, relative, "app file not read");
                None
            }
        },
    }
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}

async fn page(State(files): State<Arc<Files>>) -> Response {
    match read(&files, "index.html").await {
        Some(bytes) => {
            let response = ([(header::CONTENT_TYPE, content_type("index.html"))], bytes);
            secured(response.into_response(), PAGE_CACHE)
        }
        None => not_found(),
    }
}

async fn asset(
    State(files): State<Arc<Files>>, Path(name): Path<String>, headers: HeaderMap,
) -> Response {
    if !plain_name(&name) {
        return secured(not_found(), PAGE_CACHE);
    }
    if let Some(br) = brotli_copy(&files, &name).filter(|_| accepts_brotli(&headers)) {
        let response = (
            [
                (header::CONTENT_TYPE, content_type(&name)),
                (header::CONTENT_ENCODING, "br"),
                (header::VARY, "accept-encoding"),
            ],
            br,
        );
        return secured(response.into_response(), ASSET_CACHE);
    }
    match read(&files, &format!("assets/{name}")).await {
        Some(bytes) => {
            let response = ([(header::CONTENT_TYPE, content_type(&name))], bytes);
            secured(response.into_response(), ASSET_CACHE)
        }
        None => secured(not_found(), PAGE_CACHE),
    }
}

/// The names of the embedded assets, for tests and the start-up log.
pub fn embedded_assets() -> impl Iterator<Item = &'static str> {
    embedded::ASSETS.iter().map(|a| a.name)
}
