//! The tools a member always allows: listed, and taken back one at a time. A tool joins the
//! list when the member answers a call of it with `always` (`POST /approve`).

use axum::Json;
use axum::extract::Path;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::Member;
use crate::routes::ApiErrors;
use crate::wire::Done;

/// A tool the member always allows.
#[derive(Debug, Serialize, ToSchema)]
pub struct AllowedToolView {
    /// The integration whose tool it is.
    pub integration: String,
    /// The tool, as the agent is offered it (`<integration>_<tool>`).
    pub tool: String,
}

/// The tools the member always allows, by integration and name.
#[derive(Debug, Serialize, ToSchema)]
pub struct AllowedToolList {
    pub tools: Vec<AllowedToolView>,
}

/// The tools you always allow: a call of one runs without asking you, while the admin permits
/// it.
#[utoipa::path(get, path = "/api/integrations/allowed-tools", operation_id = "listAllowedTools",
    responses((status = 200, description = "The tools you always allow.", body = AllowedToolList),
    ApiErrors))]
pub async fn list(Member { app, p }: Member) -> Result<Json<AllowedToolList>, ApiError> {
    let tools = app.service.allowed_tools(&p).await?;
    Ok(Json(AllowedToolList {
        tools: (tools.into_iter())
            .map(|(integration, tool)| AllowedToolView { integration, tool })
            .collect(),
    }))
}

/// Stop always allowing a tool: its next call asks you again. 404 when you do not always allow
/// it.
#[utoipa::path(delete, path = "/api/integrations/{name}/allowed-tools/{tool}",
    operation_id = "forgetAllowedTool",
    params(("name" = String, Path, description = "The integration's name"),
        ("tool" = String, Path, description = "The tool, as the agent is offered it")),
    responses((status = 200, description = "It asks again.", body = Done), ApiErrors))]
pub async fn forget(
    Member { app, p }: Member, Path((name, tool)): Path<(String, String)>,
) -> Result<Json<Done>, ApiError> {
    app.service.forget_allowed_tool(&p, &name, &tool).await?;
    Ok(Json(Done::OK))
}
