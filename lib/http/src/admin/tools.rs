//! The admin's rules for an integration's tools: whether each runs, asks the member first,
//! or is never offered (`docs/design/approvals.md`).

use axum::Json;
use axum::extract::Path;
use knowledge_core::policy::limits::Action;

use super::wire::{ToolRuleRequest, ToolRuleView};
use super::{AdminErrors, Caller};
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::wire::Done;

/// Set when a tool of an integration runs: `allow`, `ask` (the member approves each call) or
/// `block` (never offered); audited. 404 for no such integration; 400 for a name that is not
/// one of its tools' (`<integration>_<tool>`).
#[utoipa::path(put, path = "/integrations/{name}/tools/{tool}", operation_id = "adminSetToolRule",
    params(("name" = String, Path, description = "The integration's name"),
        ("tool" = String, Path, description = "The tool, as the agent is offered it")),
    request_body = ToolRuleRequest,
    responses((status = 200, description = "The rule as now stored.", body = ToolRuleView),
        AdminErrors))]
pub async fn set_tool_rule(
    c: Caller, Path((name, tool)): Path<(String, String)>,
    JsonBody(body): JsonBody<ToolRuleRequest>,
) -> Result<Json<ToolRuleView>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let rule = body.into();
    uc.set_tool_rule(&c.admin, &name, &tool, Some(rule)).await?;
    Ok(Json(ToolRuleView::of(&tool, rule)))
}

/// Clear the rule of a tool: what its server says of it decides again (a tool that says it
/// only reads runs; any other asks); audited. Clearing a tool without a rule changes nothing
/// but the audit log.
#[utoipa::path(delete, path = "/integrations/{name}/tools/{tool}",
    operation_id = "adminClearToolRule",
    params(("name" = String, Path, description = "The integration's name"),
        ("tool" = String, Path, description = "The tool, as the agent is offered it")),
    responses((status = 200, description = "Cleared.", body = Done), AdminErrors))]
pub async fn clear_tool_rule(
    c: Caller, Path((name, tool)): Path<(String, String)>,
) -> Result<Json<Done>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    uc.set_tool_rule(&c.admin, &name, &tool, None).await?;
    Ok(Json(Done::OK))
}
