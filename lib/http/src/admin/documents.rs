//! The admin's collections and documents: list, create, change and delete collections; list,
//! announce (upload or replace), send and delete documents. Each handler parses, calls one
//! use case of [`knowledge_core::documents`] and renders.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::http::StatusCode;
use knowledge_core::documents::{CollectionChange, Documents, NewCollection};
use knowledge_core::domain::Document;
use knowledge_core::policy::limits::Action;

use super::wire::*;
use super::{AdminErrors, Caller, PREFIX};
use crate::error::{ApiError, EdgeError};
use crate::extract::{BodyError, JsonBody, QueryParams, read_bytes};
use crate::wire::Done;

/// Where the service takes a document's original itself (the local service): `PUT` the file
/// to its route.
fn local_target(document: &Document) -> UploadTarget {
    UploadTarget {
        method: "PUT".into(),
        url: format!(
            "{PREFIX}/collections/{}/documents/{}/original?generation={}",
            document.collection, document.id, document.generation
        ),
        fields: Vec::new(),
        headers: Vec::new(),
    }
}

/// The announcement's answer: where the originals' store takes the file (on AWS, a pre-signed
/// `PUT` to the bucket), or else the service's own route.
async fn started(documents: &Documents, document: &Document) -> Result<UploadStarted, ApiError> {
    let upload = match documents.upload_target(document).await? {
        Some(target) => UploadTarget {
            method: target.method,
            url: target.url,
            fields: Vec::new(),
            headers: target.headers,
        },
        None => local_target(document),
    };
    Ok(UploadStarted {
        document: document.into(),
        upload,
    })
}

/// The organisation's collections, by name, and the storage its documents use.
#[utoipa::path(get, path = "/collections", operation_id = "adminListCollections",
    responses((status = 200, description = "The collections.", body = CollectionList), AdminErrors))]
pub async fn list_collections(c: Caller) -> Result<Json<CollectionList>, ApiError> {
    let documents = c.app.documents()?;
    let collections = documents.collections(&c.admin).await?;
    let storage = documents.storage(&c.admin.org).await?;
    Ok(Json(CollectionList {
        collections: collections.iter().map(CollectionView::from).collect(),
        storage: StorageView::new(storage, documents.limits().max_file_bytes),
    }))
}

/// Create a collection, open to every member or to named groups. 400 `unknown_group` for a
/// group not of the organisation.
#[utoipa::path(post, path = "/collections", operation_id = "adminCreateCollection",
    request_body = CollectionRequest,
    responses((status = 201, description = "The new collection.", body = CollectionView),
        AdminErrors))]
pub async fn create_collection(
    c: Caller, JsonBody(body): JsonBody<CollectionRequest>,
) -> Result<(StatusCode, Json<CollectionView>), ApiError> {
    let new = NewCollection::try_from(body)?;
    c.admitted(Action::AdminWrite).await?;
    let collection = c.app.documents()?.create_collection(&c.admin, new).await?;
    Ok((StatusCode::CREATED, Json((&collection).into())))
}

/// Change a collection's name, description or who may open it: a member who may no longer
/// open it stops finding its passages at their next request.
#[utoipa::path(patch, path = "/collections/{collectionId}", operation_id = "adminChangeCollection",
    params(("collectionId" = String, Path, description = "The collection's id")),
    request_body = CollectionPatch,
    responses((status = 200, description = "The collection as now stored.",
        body = CollectionView), AdminErrors))]
pub async fn change_collection(
    c: Caller, Path(id): Path<String>, JsonBody(body): JsonBody<CollectionPatch>,
) -> Result<Json<CollectionView>, ApiError> {
    let id = collection_id(&id)?;
    let change = CollectionChange::try_from(body)?;
    c.admitted(Action::AdminWrite).await?;
    let documents = c.app.documents()?;
    let collection = documents.change_collection(&c.admin, &id, change).await?;
    Ok(Json((&collection).into()))
}

/// Delete a collection with every document of it: unsearchable at once, originals and
/// passages removed.
#[utoipa::path(delete, path = "/collections/{collectionId}", operation_id = "adminDeleteCollection",
    params(("collectionId" = String, Path, description = "The collection's id")),
    responses((status = 200, description = "The collection is gone.", body = Done), AdminErrors))]
pub async fn delete_collection(c: Caller, Path(id): Path<String>) -> Result<Json<Done>, ApiError> {
    let id = collection_id(&id)?;
    c.admitted(Action::AdminWrite).await?;
    c.app.documents()?.delete_collection(&c.admin, &id).await?;
    Ok(Json(Done::OK))
}

/// A collection's documents, by name, with their status.
#[utoipa::path(get, path = "/collections/{collectionId}/documents", operation_id = "adminListDocuments",
    params(("collectionId" = String, Path, description = "The collection's id")),
    responses((status = 200, description = "The documents.", body = DocumentList), AdminErrors))]
pub async fn list_documents(
    c: Caller, Path(id): Path<String>,
) -> Result<Json<DocumentList>, ApiError> {
    let id = collection_id(&id)?;
    let documents = c.app.documents()?.documents(&c.admin, &id).await?;
    Ok(Json(DocumentList {
        documents: documents.iter().map(DocumentView::from).collect(),
    }))
}

/// Announce a file to add to a collection: the document is recorded `uploading` (its bytes
/// counted against the storage allowance) and the answer says where to send the file. 413
/// `file_too_large` or `storage_full`; 415 for a format the service does not read.
#[utoipa::path(post, path = "/collections/{collectionId}/documents", operation_id = "adminUploadDocument",
    params(("collectionId" = String, Path, description = "The collection's id")),
    request_body = UploadRequest,
    responses((status = 201, description = "Send the file as `upload` says.",
        body = UploadStarted), AdminErrors))]
pub async fn upload_document(
    c: Caller, Path(id): Path<String>, JsonBody(body): JsonBody<UploadRequest>,
) -> Result<(StatusCode, Json<UploadStarted>), ApiError> {
    let id = collection_id(&id)?;
    c.admitted(Action::AdminWrite).await?;
    let documents = c.app.documents()?;
    let document = documents.begin_upload(&c.admin, &id, &body.into()).await?;
    Ok((
        StatusCode::CREATED,
        Json(started(documents, &document).await?),
    ))
}

/// Announce a new version of a document: its next generation is recorded `uploading` (its
/// current passages stop being found) and the answer says where to send the file.
#[utoipa::path(put, path = "/collections/{collectionId}/documents/{documentId}",
    operation_id = "adminReplaceDocument",
    params(("collectionId" = String, Path, description = "The collection's id"),
        ("documentId" = String, Path, description = "The document's id")),
    request_body = UploadRequest,
    responses((status = 200, description = "Send the file as `upload` says.",
        body = UploadStarted), AdminErrors))]
pub async fn replace_document(
    c: Caller, Path((collection, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<UploadRequest>,
) -> Result<Json<UploadStarted>, ApiError> {
    let (collection, id) = (collection_id(&collection)?, document_id(&id)?);
    c.admitted(Action::AdminWrite).await?;
    let documents = c.app.documents()?;
    let document = (documents)
        .begin_replace(&c.admin, &collection, &id, &body.into())
        .await?;
    Ok(Json(started(documents, &document).await?))
}

/// Delete a document: unsearchable at once, its original and passages removed.
#[utoipa::path(delete, path = "/collections/{collectionId}/documents/{documentId}",
    operation_id = "adminDeleteDocument",
    params(("collectionId" = String, Path, description = "The collection's id"),
        ("documentId" = String, Path, description = "The document's id")),
    responses((status = 200, description = "The document is gone.", body = Done), AdminErrors))]
pub async fn delete_document(
    c: Caller, Path((collection, id)): Path<(String, String)>,
) -> Result<Json<Done>, ApiError> {
    let (collection, id) = (collection_id(&collection)?, document_id(&id)?);
    c.admitted(Action::AdminWrite).await?;
    let documents = c.app.documents()?;
    documents
        .delete_document(&c.admin, &collection, &id)
        .await?;
    Ok(Json(Done::OK))
}

/// Send an announced document's file, as its body, where the service takes uploads itself
/// (the local service; on AWS the file goes straight to S3). The document is then queued for
/// indexing. 400 `size_mismatch` when it is not the size announced, `content_mismatch` when
/// its content is not what its name says; 409 `not_uploading` when it was sent already,
/// `upload_elsewhere` where the originals' store takes the file itself (on AWS).
#[utoipa::path(put, path = "/api/admin/collections/{collectionId}/documents/{documentId}/original",
    operation_id = "adminSendOriginal",
    params(("collectionId" = String, Path, description = "The collection's id"),
        ("documentId" = String, Path, description = "The document's id"),
        ("generation" = u64, Query, description = "The generation the announcement answered")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, description = "Queued for indexing.", body = DocumentView),
        AdminErrors))]
pub async fn send_original(
    c: Caller, Path((collection, id)): Path<(String, String)>, RawQuery(q): RawQuery, body: Body,
) -> Result<Json<DocumentView>, ApiError> {
    let (collection, id) = (collection_id(&collection)?, document_id(&id)?);
    let q = QueryParams::parse(q.as_deref());
    let generation = (q.get("generation").and_then(|g| g.parse::<u64>().ok()))
        .ok_or_else(|| ApiError::InvalidField("generation must be a whole number".into()))?;
    let documents = c.app.documents()?;
    let limit = usize::try_from(documents.limits().max_file_bytes).unwrap_or(usize::MAX);
    let bytes = read_bytes(body, limit).await.map_err(|e| match e {
        BodyError::TooLarge => ApiError::PayloadTooLarge { limit },
        BodyError::TimedOut => EdgeError::RequestTimeout.into(),
        BodyError::Unreadable => ApiError::InvalidField("the file could not be read".into()),
    })?;
    let document = documents
        .receive(&c.admin, &collection, &id, generation, bytes)
        .await?;
    Ok(Json((&document).into()))
}
