//! The organisation's switch for the agent's memory (`/api/admin/memory`). An admin sees and
//! sets the switch only: no admin route reads a member's notes.

use axum::Json;
use knowledge_core::policy::limits::Action;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{AdminErrors, Caller};
use crate::error::ApiError;
use crate::extract::JsonBody;

/// Whether the agent may remember things about the organisation's members.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySetting {
    pub enabled: bool,
}

/// Whether memory is on for the organisation (it is unless an admin switched it off).
#[utoipa::path(get, path = "/memory", operation_id = "adminGetMemory",
    responses((status = 200, description = "The organisation's switch.", body = MemorySetting),
    AdminErrors))]
pub async fn get_memory(c: Caller) -> Result<Json<MemorySetting>, ApiError> {
    let org = c.administration()?.org(&c.admin).await?;
    Ok(Json(MemorySetting {
        enabled: !org.memory_off,
    }))
}

/// Switch memory on or off for every member (audited). Off, nothing is read or saved and the
/// tools are not offered; members' notes are kept.
#[utoipa::path(put, path = "/memory", operation_id = "adminSetMemory", request_body = MemorySetting,
    responses((status = 200, description = "The organisation's switch.", body = MemorySetting),
    AdminErrors))]
pub async fn set_memory(
    c: Caller, JsonBody(body): JsonBody<MemorySetting>,
) -> Result<Json<MemorySetting>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let enabled = uc.set_memory(&c.admin, body.enabled).await?;
    Ok(Json(MemorySetting { enabled }))
}
