//! The browser app's files, served by the service itself: the page at `/`, at each
//! conversation's address (`/c/<session>`), at the member's connections (`/connections`) and
//! memory (`/memory`), and at the admin area's (`/admin`, `/admin/<section>`), and the hashed assets under `/assets/`. The page is
//! `no-cache` (a deploy shows at once), the assets are immutable for a year (their names change
//! with their content), in brotli when the browser accepts it (compressed at build time; the
//! edge compresses the rest with gzip). Everything is served under a strict
//! Content-Security-Policy: scripts, styles and requests only from this origin (and the
//! bucket documents are uploaded to, where that is elsewhere), no inline script, no frames.

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

/// What the page may load and do, where documents' originals are uploaded to this origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What the page may load and do when documents' originals are uploaded straight to
/// `uploads` (an origin, `https://<bucket>.s3.<region>.amazonaws.com` on AWS): the same as
/// [`CONTENT_SECURITY_POLICY`], and requests to that origin too. `None` is the policy itself.
pub fn content_security_policy(uploads: Option<&str>) -> String {
    match uploads {
        Some(origin) => CONTENT_SECURITY_POLICY.replacen(
            "connect-src 'self'",
            &format!("connect-src 'self' {origin}"),
            1,
        ),
        None => CONTENT_SECURITY_POLICY.to_owned(),
    }
}

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

/// The app's files and the policy they are served under.
struct Served {
    files: Files,
    policy: HeaderValue,
}

/// The routes of the app's files, under [`content_security_policy`]`(uploads)`. An `uploads`
/// that cannot be a header's value (it is logged) is left out of the policy: the page then
/// cannot upload, and nothing else is opened.
pub fn routes(files: Files, uploads: Option<&str>) -> Router {
    let policy = HeaderValue::from_str(&content_security_policy(uploads)).unwrap_or_else(|_| {
        tracing::warn!(?uploads, "uploads' origin left out of the page's policy");
        HeaderValue::from_static(CONTENT_SECURITY_POLICY)
    });
    let served = Arc::new(Served { files, policy });
    PAGES
        .iter()
        .fold(Router::new(), |router, path| router.route(path, get(page)))
        .route(ASSETS, get(asset))
        .with_state(served)
}

fn secured(mut response: Response, policy: &HeaderValue, cache: &'static str) -> Response {
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::CONTENT_SECURITY_POLICY, policy.clone());
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

async fn page(State(served): State<Arc<Served>>) -> Response {
    let policy = &served.policy;
    match read(&served.files, "index.html").await {
        Some(bytes) => {
            let response = ([(header::CONTENT_TYPE, content_type("index.html"))], bytes);
            secured(response.into_response(), policy, PAGE_CACHE)
        }
        None => not_found(),
    }
}

async fn asset(
    State(served): State<Arc<Served>>, Path(name): Path<String>, headers: HeaderMap,
) -> Response {
    let policy = &served.policy;
    if !plain_name(&name) {
        return secured(not_found(), policy, PAGE_CACHE);
    }
    if let Some(br) = brotli_copy(&served.files, &name).filter(|_| accepts_brotli(&headers)) {
        let response = (
            [
                (header::CONTENT_TYPE, content_type(&name)),
                (header::CONTENT_ENCODING, "br"),
                (header::VARY, "accept-encoding"),
            ],
            br,
        );
        return secured(response.into_response(), policy, ASSET_CACHE);
    }
    match read(&served.files, &format!("assets/{name}")).await {
        Some(bytes) => {
            let response = ([(header::CONTENT_TYPE, content_type(&name))], bytes);
            secured(response.into_response(), policy, ASSET_CACHE)
        }
        None => secured(not_found(), policy, PAGE_CACHE),
    }
}

/// The names of the embedded assets, for tests and the start-up log.
pub fn embedded_assets() -> impl Iterator<Item = &'static str> {
    embedded::ASSETS.iter().map(|a| a.name)
}
