//! A member's own monthly allowance (`/api/admin/members/{userId}/caps`): set it, or give the
//! member back the organisation's. Both are audited as `member.caps_changed`.

use axum::Json;
use axum::extract::Path;
use knowledge_core::domain::MemberCaps;
use knowledge_core::policy::limits::Action;

use super::wire::{MemberCapsRequest, MemberView, user_id};
use super::{AdminErrors, Caller};
use crate::error::ApiError;
use crate::extract::JsonBody;

/// Set the member's own monthly allowance in questions and US dollars; one left out (or null)
/// is unlimited for them. It applies from their next question.
#[utoipa::path(put, path = "/members/{userId}/caps", operation_id = "adminSetMemberCaps",
    params(("userId" = String, Path, description = "The member's user id")),
    request_body = MemberCapsRequest,
    responses((status = 200, description = "The member as now stored.", body = MemberView),
        AdminErrors))]
pub async fn set_caps(
    c: Caller, Path(user): Path<String>, JsonBody(body): JsonBody<MemberCapsRequest>,
) -> Result<Json<MemberView>, ApiError> {
    let user = user_id(&user)?;
    let caps = MemberCaps::try_from(body)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    let member = uc.set_member_caps(&c.admin, &user, Some(caps)).await?;
    Ok(Json((&member).into()))
}

/// Give the member the organisation's allowance again.
#[utoipa::path(delete, path = "/members/{userId}/caps", operation_id = "adminClearMemberCaps",
    params(("userId" = String, Path, description = "The member's user id")),
    responses((status = 200, description = "The member as now stored.", body = MemberView),
        AdminErrors))]
pub async fn clear_caps(c: Caller, Path(user): Path<String>) -> Result<Json<MemberView>, ApiError> {
    let user = user_id(&user)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    let member = uc.set_member_caps(&c.admin, &user, None).await?;
    Ok(Json((&member).into()))
}
