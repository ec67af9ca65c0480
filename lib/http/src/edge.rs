//! What every route passes before its own work: limits on a request's head (target and header
//! fields), checked before routing, so that an oversized head gets the documented JSON error
//! rather than the HTTP library's bare one (they sit below the server's own hard limits, see
//! `knowledge_local::server`, which answer only what cannot be parsed at all); and the
//! compression of answers.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use tower_http::compression::predicate::{DefaultPredicate, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::error::{ApiError, EdgeError, ScimApiError};
use crate::limits::{HEADER_MAX_COUNT, HEADERS_MAX_BYTES, URI_MAX_BYTES};

/// Refuses a request whose target or header fields are over the limits above, in the error
/// shape of the route it was meant for (SCIM's under `/api/scim`).
pub async fn limit_head(req: Request, next: Next) -> Response {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    let header_bytes: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    let too_long = target > URI_MAX_BYTES;
    let too_many = req.headers().len() > HEADER_MAX_COUNT || header_bytes > HEADERS_MAX_BYTES;
    if !too_long && !too_many {
        return next.run(req).await;
    }
    let refused = if too_long {
        EdgeError::UriTooLong
    } else {
        EdgeError::HeadersTooLarge
    };
    if req.uri().path().starts_with("/api/scim") {
        ScimApiError::from(refused).into_response()
    } else {
        ApiError::from(refused).into_response()
    }
}

/// Answers of at least this many bytes are compressed; below it the headers would cost about
/// what compression saves (a transcript tail poll with no new event is about 100 bytes).
pub const COMPRESS_FROM_BYTES: u16 = 1024;

/// Gzip, when the client's `Accept-Encoding` takes it, for answers of [`COMPRESS_FROM_BYTES`]
/// or more of any type but images, gRPC and event streams (tower-http's default predicate), at
/// level 4 (about as small as 6, and faster). An answer already compressed (the app's assets,
/// in brotli since the build) is left as it is. Brotli is not used here: its encoder would add
/// 1.1 MB to every function's binary.
pub fn compression() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new()
        .quality(CompressionLevel::Precise(4))
        .compress_when(DefaultPredicate::new().and(SizeAbove::new(COMPRESS_FROM_BYTES)))
}
