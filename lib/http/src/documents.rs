//! What a member reads of the organisation's documents: search (`/api/search`), a document
//! (`/api/documents/...`) and its original. Only what the member may open now: another
//! organisation's document, or one of a collection closed to them, is 404.

use axum::Json;
use axum::extract::{Path, RawQuery};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, LOCATION, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use knowledge_core::CoreError;
use knowledge_core::documents::{Original, SearchHit, SearchRequest};
use knowledge_core::domain::{Document, content_disposition};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::admin::wire::{collection_id, document_id};
use crate::error::ApiError;
use crate::extract::{Member, QueryParams};
use crate::routes::ApiErrors;

/// `GET /api/search`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// What to look for: 1 to 1,000 characters.
    pub q: String,
    /// Within one collection only.
    pub collection: Option<String>,
    /// Passages at most, 1 to 50; 10 by default.
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<usize>,
}

impl SearchQuery {
    /// The search asked for. Errors: 400 for a missing `q`, a malformed `collection` or a
    /// `limit` that is not a whole number.
    fn parse(raw: Option<&str>) -> Result<SearchRequest, ApiError> {
        let q = QueryParams::parse(raw);
        let query = q
            .get("q")
            .ok_or_else(|| ApiError::MissingField("q is required".into()))?;
        let limit = match q.get("limit") {
            None => 10,
            Some(l) => l
                .parse()
                .map_err(|_| ApiError::InvalidField("limit must be a whole number".into()))?,
        };
        Ok(SearchRequest {
            query: query.to_owned(),
            collection: q.get("collection").map(collection_id).transpose()?,
            limit,
        })
    }
}

/// A passage found: where it is (collection, document, headings or page) and its text.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PassageView {
    pub collection_id: String,
    pub collection_name: String,
    pub document_id: String,
    pub document_name: String,
    /// Its place in the document, from 0: what a citation names.
    pub passage: u32,
    /// The headings it sits under, outermost first.
    pub headings: Vec<String>,
    /// Its page, in a PDF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    pub text: String,
    /// Higher is better; comparable within one answer only.
    pub score: f32,
}

impl From<SearchHit> for PassageView {
    fn from(hit: SearchHit) -> Self {
        let p = hit.passage;
        Self {
            collection_id: p.collection.as_str().to_owned(),
            collection_name: hit.collection_name,
            document_id: p.document.as_str().to_owned(),
            document_name: hit.document_name,
            passage: p.ordinal,
            headings: p.headings,
            page: p.page,
            text: p.text,
            score: p.score,
        }
    }
}

/// The passages found, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    pub results: Vec<PassageView>,
}

/// Search the documents you may open.
#[utoipa::path(get, path = "/api/search", operation_id = "searchDocuments", params(SearchQuery),
    responses((status = 200, description = "The passages found.", body = SearchResults), ApiErrors))]
pub async fn search(
    Member { app, p }: Member, RawQuery(q): RawQuery,
) -> Result<Json<SearchResults>, ApiError> {
    let request = SearchQuery::parse(q.as_deref())?;
    let hits = app.documents()?.search(&p, &request).await?;
    Ok(Json(SearchResults {
        results: hits.into_iter().map(PassageView::from).collect(),
    }))
}

/// A document as a member sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReaderDocumentView {
    pub id: String,
    pub collection_id: String,
    pub collection_name: String,
    pub name: String,
    pub format: String,
    pub bytes: u64,
    /// `uploading`, `queued`, `indexed` or `failed`.
    pub status: String,
    pub passages: u32,
    pub updated_at: String,
}

/// A document you may open.
#[utoipa::path(get, path = "/api/documents/{collectionId}/{documentId}", operation_id = "getDocument",
    params(("collectionId" = String, Path, description = "The collection's id"),
        ("documentId" = String, Path, description = "The document's id")),
    responses((status = 200, description = "The document.", body = ReaderDocumentView), ApiErrors))]
pub async fn get(
    Member { app, p }: Member, Path((collection, id)): Path<(String, String)>,
) -> Result<Json<ReaderDocumentView>, ApiError> {
    let (collection, id) = (collection_id(&collection)?, document_id(&id)?);
    let (collection, d) = app.documents()?.open_document(&p, &collection, &id).await?;
    Ok(Json(ReaderDocumentView {
        id: d.id.as_str().to_owned(),
        collection_id: collection.id.as_str().to_owned(),
        collection_name: collection.name,
        name: d.name,
        format: d.format.as_str().to_owned(),
        bytes: d.bytes,
        status: d.status.as_str().to_owned(),
        passages: d.passages,
        updated_at: d.updated_at.to_iso8601(),
    }))
}

/// A download's headers: always an attachment (never rendered in the application's origin,
/// so an uploaded HTML file runs nothing), of its own media type, never sniffed.
fn download(document: &Document, bytes: axum::body::Bytes) -> Response {
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(document.format.media_type()),
    );
    if let Ok(value) = HeaderValue::from_str(&content_disposition(&document.name)) {
        headers.insert(CONTENT_DISPOSITION, value);
    }
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// A `303 See Other` to where the browser fetches the original itself (a pre-signed URL of
/// the bucket, on AWS): never cached, and not told where it came from.
fn fetch_from(url: &str) -> Result<Response, ApiError> {
    let location = HeaderValue::from_str(url).map_err(CoreError::internal)?;
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(LOCATION, location);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    Ok(response)
}

/// The original of a document you may open, as uploaded: the file, or, where the originals
/// are kept in a bucket (on AWS), a redirect to a link that serves it for a few minutes.
#[utoipa::path(get, path = "/api/documents/{collectionId}/{documentId}/original",
    operation_id = "downloadDocument",
    params(("collectionId" = String, Path, description = "The collection's id"),
        ("documentId" = String, Path, description = "The document's id")),
    responses((status = 200, description = "The file, as an attachment.",
        content_type = "application/octet-stream"),
        (status = 303, description = "Where to fetch the file, as an attachment: a link \
            valid for a few minutes (`Location`)."), ApiErrors))]
pub async fn original(
    Member { app, p }: Member, Path((collection, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (collection, id) = (collection_id(&collection)?, document_id(&id)?);
    match app.documents()?.original(&p, &collection, &id).await? {
        (document, Original::Bytes(bytes)) => Ok(download(&document, bytes)),
        (_, Original::Link(url)) => fetch_from(&url),
    }
}

/// A passage of a document, in its place.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentPassageView {
    /// Its place in the document, from 0.
    pub passage: u32,
    pub headings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    pub text: String,
}

/// A window of a document's passages, in order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PassageWindow {
    pub passages: Vec<DocumentPassageView>,
    /// The `from` of the next window, when there may be more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<u32>,
}

/// `GET .../passages`' query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowQuery {
    /// The first passage's place, from 0; 0 by default.
    pub from: Option<u32>,
    /// Passages at most, 1 to 200; 50 by default.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<usize>,
}

/// A window of a document you may open: its passages in order, from `from`. None while it is
/// not indexed.
#[utoipa::path(get, path = "/api/documents/{collectionId}/{documentId}/passages",
    operation_id = "getDocumentPassages",
    params(("collectionId" = String, Path, description = "The collection's id"),
        ("documentId" = String, Path, description = "The document's id"), WindowQuery),
    responses((status = 200, description = "The passages.", body = PassageWindow), ApiErrors))]
pub async fn passages(
    Member { app, p }: Member, Path((collection, id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Result<Json<PassageWindow>, ApiError> {
    let (collection, id) = (collection_id(&collection)?, document_id(&id)?);
    let q = QueryParams::parse(q.as_deref());
    let number = |name: &str, default: u64| match q.get(name) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| ApiError::InvalidField(format!("{name} must be a whole number"))),
    };
    let from = u32::try_from(number("from", 0)?).unwrap_or(u32::MAX);
    let limit = usize::try_from(number("limit", 50)?).unwrap_or(usize::MAX);
    let (_, _, found) = (app.documents()?)
        .passages(&p, &collection, &id, from, limit)
        .await?;
    let next = (found.len() == limit).then(|| from.saturating_add(limit as u32));
    Ok(Json(PassageWindow {
        passages: found
            .into_iter()
            .map(|p| DocumentPassageView {
                passage: p.ordinal,
                headings: p.headings,
                page: p.page,
                text: p.text,
            })
            .collect(),
        next,
    }))
}
