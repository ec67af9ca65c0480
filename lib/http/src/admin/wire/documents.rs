//! Collections and documents on the admin API's wire: a collection with who may open it, the
//! organisation's storage, a document with its status, and an upload announced, with where
//! its bytes go.

use std::collections::BTreeSet;

use knowledge_core::documents::{CollectionChange, NewCollection, UploadIntent};
use knowledge_core::domain::{Access, Collection, Document, DocumentStatus, Storage};
use knowledge_core::ids::{CollectionId, DocumentId, GroupId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::invalid;
use crate::error::ApiError;

/// Who may open a collection: every member, or the members of the groups listed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessView {
    /// `everyone` or `groups`.
    #[schema(pattern = "^(everyone|groups)$")]
    pub kind: String,
    /// The groups' ids, with `groups`; at most 20.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl AccessView {
    fn of(access: &Access) -> Self {
        match access {
            Access::Everyone => Self {
                kind: "everyone".into(),
                groups: Vec::new(),
            },
            Access::Groups(groups) => Self {
                kind: "groups".into(),
                groups: groups.iter().map(|g| g.as_str().to_owned()).collect(),
            },
        }
    }
}

impl TryFrom<AccessView> for Access {
    type Error = ApiError;

    fn try_from(view: AccessView) -> Result<Self, ApiError> {
        match view.kind.as_str() {
            "everyone" if view.groups.is_empty() => Ok(Access::Everyone),
            "everyone" => Err(invalid("access to everyone lists no groups")),
            "groups" => {
                let groups = (view.groups.iter())
                    .map(|g| GroupId::parse(g).map_err(|e| invalid(e.to_string())))
                    .collect::<Result<BTreeSet<_>, _>>()?;
                Ok(Access::Groups(groups))
            }
            _ => Err(invalid("access.kind must be everyone or groups")),
        }
    }
}

/// A collection as an admin sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CollectionView {
    pub id: String,
    pub name: String,
    pub description: String,
    pub access: AccessView,
    /// `upload`, or `folder` for one the local service mirrors from a folder (read-only).
    pub source: String,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Collection> for CollectionView {
    fn from(c: &Collection) -> Self {
        Self {
            id: c.id.as_str().to_owned(),
            name: c.name.clone(),
            description: c.description.clone(),
            access: AccessView::of(&c.access),
            source: c.source.as_str().to_owned(),
            created_at: c.created_at.to_iso8601(),
            updated_at: c.updated_at.to_iso8601(),
        }
    }
}

/// The organisation's originals against its allowance.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageView {
    pub used_bytes: u64,
    pub allowance_bytes: u64,
    /// The most bytes one file may have.
    pub max_file_bytes: u64,
}

impl StorageView {
    pub fn new(storage: Storage, max_file_bytes: u64) -> Self {
        Self {
            used_bytes: storage.used_bytes,
            allowance_bytes: storage.allowance_bytes,
            max_file_bytes,
        }
    }
}

/// The collections, by name, and the storage they use.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CollectionList {
    pub collections: Vec<CollectionView>,
    pub storage: StorageView,
}

/// A new collection.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CollectionRequest {
    /// 1 to 256 characters, one line.
    pub name: String,
    /// At most 1,000 characters.
    #[serde(default)]
    pub description: String,
    pub access: AccessView,
}

impl TryFrom<CollectionRequest> for NewCollection {
    type Error = ApiError;

    fn try_from(body: CollectionRequest) -> Result<Self, ApiError> {
        Ok(Self {
            name: body.name,
            description: body.description,
            access: body.access.try_into()?,
        })
    }
}

/// A change of a collection; a field left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CollectionPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub access: Option<AccessView>,
}

impl TryFrom<CollectionPatch> for CollectionChange {
    type Error = ApiError;

    fn try_from(body: CollectionPatch) -> Result<Self, ApiError> {
        Ok(Self {
            name: body.name,
            description: body.description,
            access: body.access.map(Access::try_from).transpose()?,
        })
    }
}

/// A document as an admin sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentView {
    pub id: String,
    pub collection_id: String,
    pub name: String,
    /// `markdown`, `text`, `html`, `pdf` or `docx`.
    pub format: String,
    pub bytes: u64,
    /// `uploading`, `queued`, `indexed` or `failed`.
    pub status: String,
    /// Whether a worker holds it now (reading it, making its passages and their vectors):
    /// `queued` and taken, so that a long indexing is seen to be under way rather than stuck.
    pub indexing: bool,
    /// Why it failed, for a person to act on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Which upload of it this is, from 1.
    pub generation: u64,
    pub passages: u32,
    /// The original's SHA-256; absent until it is stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Document> for DocumentView {
    fn from(d: &Document) -> Self {
        Self {
            id: d.id.as_str().to_owned(),
            collection_id: d.collection.as_str().to_owned(),
            name: d.name.clone(),
            format: d.format.as_str().to_owned(),
            bytes: d.bytes,
            status: d.status.as_str().to_owned(),
            indexing: d.status == DocumentStatus::Queued && d.lease_until.is_some(),
            reason: d.reason.clone(),
            generation: d.generation,
            passages: d.passages,
            sha256: Some(d.sha256.clone()).filter(|s| !s.is_empty()),
            created_at: d.created_at.to_iso8601(),
            updated_at: d.updated_at.to_iso8601(),
        }
    }
}

/// A collection's documents, by name.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentList {
    pub documents: Vec<DocumentView>,
}

/// A file about to be sent: its name (the format is told by its extension and confirmed by
/// its content) and its size in bytes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadRequest {
    pub name: String,
    pub bytes: u64,
}

impl From<UploadRequest> for UploadIntent {
    fn from(body: UploadRequest) -> Self {
        Self {
            name: body.name,
            bytes: body.bytes,
        }
    }
}

/// Where to send a file's bytes: `PUT` the file as the body to `url` with `headers`, or `POST`
/// a form of `fields` and then the file. Locally `url` is the service's own route; on AWS it is
/// a pre-signed `PUT` to the originals' bucket, valid 15 minutes, whose signature covers the
/// headers (the browser sets `Content-Length` from the file itself).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadTarget {
    /// `PUT` or `POST`.
    pub method: String,
    /// The service's own path, or an absolute URL elsewhere.
    pub url: String,
    /// The form's fields, in order, before the file, for `POST`.
    pub fields: Vec<(String, String)>,
    /// Headers to send exactly as given, besides `Content-Length` (`Content-Type` among them
    /// where a signature covers it); none for the service's own route.
    pub headers: Vec<(String, String)>,
}

/// An upload announced: the document `uploading`, and where its bytes go.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadStarted {
    pub document: DocumentView,
    pub upload: UploadTarget,
}

/// A collection's id from the path. Errors: 400 for one not of the id's form.
pub fn collection_id(raw: &str) -> Result<CollectionId, ApiError> {
    CollectionId::parse(raw).map_err(|e| invalid(e.to_string()))
}

/// A document's id from the path. Errors: 400 for one not of the id's form.
pub fn document_id(raw: &str) -> Result<DocumentId, ApiError> {
    DocumentId::parse(raw).map_err(|e| invalid(e.to_string()))
}
