//! The agent's memory as its member sees it (`/api/memory`): what is kept, with when and in
//! which conversation; forgetting one note or all; the member's own switch; an export of
//! everything as JSON. Only the member reaches their memory: no admin route reads it.

use axum::Json;
use axum::extract::Path;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use knowledge_core::domain::{MEMORY_ENTRIES, MEMORY_ENTRY_CHARS, MemoryEntry};
use knowledge_core::memory::MemoryView;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{JsonBody, Member};
use crate::routes::ApiErrors;

/// One note.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteView {
    /// Such as `m3`.
    pub id: String,
    pub text: String,
    pub saved_at: String,
    /// The conversation it was saved in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl From<&MemoryEntry> for NoteView {
    fn from(e: &MemoryEntry) -> Self {
        Self {
            id: e.id.clone(),
            text: e.text.clone(),
            saved_at: e.saved_at.to_iso8601(),
            session_id: e.session.as_ref().map(|s| s.to_string()),
        }
    }
}

/// The member's memory in the active organisation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryPage {
    /// The member's own switch.
    pub enabled: bool,
    /// The organisation's switch: when off, nothing is read or saved whatever the member's.
    pub organisation_enabled: bool,
    /// Oldest first.
    pub notes: Vec<NoteView>,
    /// Notes kept at most.
    pub max_notes: usize,
    /// Characters of one note at most.
    pub max_note_chars: usize,
}

impl From<MemoryView> for MemoryPage {
    fn from(v: MemoryView) -> Self {
        Self {
            enabled: !v.memory.off,
            organisation_enabled: v.org_on,
            notes: v.memory.entries.iter().map(NoteView::from).collect(),
            max_notes: MEMORY_ENTRIES,
            max_note_chars: MEMORY_ENTRY_CHARS,
        }
    }
}

/// `PUT /api/memory`: the member's switch.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySwitch {
    pub enabled: bool,
}

/// How many notes were forgotten.
#[derive(Debug, Serialize, ToSchema)]
pub struct Forgotten {
    pub forgotten: usize,
}

/// What the agent keeps about the signed-in member in the active organisation.
#[utoipa::path(get, path = "/api/memory", operation_id = "getMemory",
    responses((status = 200, description = "The member's memory.", body = MemoryPage), ApiErrors))]
pub async fn get(Member { app, p }: Member) -> Result<Json<MemoryPage>, ApiError> {
    let view = app.service.memories().view(&p.org, &p.user).await?;
    Ok(Json(view.into()))
}

/// Switch the member's memory on or off. Off, nothing is read or saved; the notes are kept
/// until forgotten.
#[utoipa::path(put, path = "/api/memory", operation_id = "switchMemory", request_body = MemorySwitch,
    responses((status = 200, description = "The member's memory.", body = MemoryPage), ApiErrors))]
pub async fn switch(
    Member { app, p }: Member, JsonBody(body): JsonBody<MemorySwitch>,
) -> Result<Json<MemoryPage>, ApiError> {
    let memories = app.service.memories();
    let view = memories.switch(&p.org, &p.user, body.enabled).await?;
    Ok(Json(view.into()))
}

/// Forget one note.
#[utoipa::path(delete, path = "/api/memory/notes/{id}", operation_id = "forgetNote",
    params(("id" = String, Path, description = "The note's id, such as m3")),
    responses((status = 200, description = "Forgotten.", body = Forgotten), ApiErrors))]
pub async fn forget(
    Member { app, p }: Member, Path(id): Path<String>,
) -> Result<Json<Forgotten>, ApiError> {
    app.service.memories().forget(&p.org, &p.user, &id).await?;
    Ok(Json(Forgotten { forgotten: 1 }))
}

/// Forget every note; the switch stays as it is.
#[utoipa::path(delete, path = "/api/memory/notes", operation_id = "forgetAllNotes",
    responses((status = 200, description = "Forgotten.", body = Forgotten), ApiErrors))]
pub async fn forget_all(Member { app, p }: Member) -> Result<Json<Forgotten>, ApiError> {
    let forgotten = app.service.memories().clear(&p.org, &p.user).await?;
    Ok(Json(Forgotten { forgotten }))
}

/// Everything kept, as a JSON file to download (`memory.json`).
#[utoipa::path(get, path = "/api/memory/export", operation_id = "exportMemory",
    responses((status = 200, description = "The member's memory, as an attachment.", body = MemoryPage),
    ApiErrors))]
pub async fn export(Member { app, p }: Member) -> Result<Response, ApiError> {
    let view = app.service.memories().view(&p.org, &p.user).await?;
    let page = MemoryPage::from(view);
    let body = serde_json::to_vec_pretty(&page).map_err(knowledge_core::CoreError::internal)?;
    Ok((
        [
            (CONTENT_TYPE, "application/json"),
            (CONTENT_DISPOSITION, "attachment; filename=\"memory.json\""),
        ],
        body,
    )
        .into_response())
}
