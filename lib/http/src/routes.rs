//! The handlers of the session endpoints and the organisation switch: parse, call one use case,
//! render. Authentication and request rules happen before them, in [`crate::guard`].

use axum::Extension;
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::HeaderValue;
use axum::http::header::SET_COOKIE;
use axum::response::{IntoResponse, Response};
use knowledge_core::CoreError;
use knowledge_core::domain::Event;
use knowledge_core::ids::{EventId, OrgId};
use knowledge_core::service::Principal;
use serde_json::{Value, json};

use crate::SessionApi;
use crate::cookie::{CookieClaims, set_cookie_header};
use crate::error::ApiError;
use crate::guard::{JsonObject, QueryParams, session_id};

type ApiResult = Result<Json<Value>, ApiError>;

fn event_json(e: &Event) -> Value {
    json!({
        "id": e.id().to_string(),
        "type": e.kind().as_str(),
        "payload": e.body.payload(),
        "occurredAt": e.occurred_at.to_iso8601(),
    })
}

pub async fn create_session(
    State(app): State<SessionApi>,
    Extension(p): Extension<Principal>,
    body: JsonObject,
) -> ApiResult {
    let created = app.service.create_session(&p, body.string("text")?).await?;
    Ok(Json(json!({
        "id": created.id.to_string(),
        "runId": created.run_id.to_string(),
        "noConnectors": created.no_connectors,
    })))
}

pub async fn post_message(
    State(app): State<SessionApi>,
    Extension(p): Extension<Principal>,
    body: JsonObject,
) -> ApiResult {
    let session = session_id(Some(body.string("sessionId")?))?;
    app.service
        .post_message(&p, &session, body.string("text")?)
        .await?;
    Ok(Json(json!({ "ok": true })))
}

pub async fn transcript(
    State(app): State<SessionApi>,
    Extension(p): Extension<Principal>,
    RawQuery(q): RawQuery,
) -> ApiResult {
    let q = QueryParams::parse(q.as_deref());
    let session = session_id(q.get("sessionId"))?;
    let since = q
        .get("sinceEventId")
        .map(EventId::parse_cursor)
        .transpose()
        .map_err(|e| CoreError::invalid("invalid_cursor", e.to_string()))?;
    let t = app.service.transcript(&p, &session, since).await?;
    Ok(Json(json!({
        "title": t.title,
        "workflowRunId": t.workflow_run_id.map(|r| r.to_string()),
        "events": t.events.iter().map(event_json).collect::<Vec<_>>(),
        "hasMore": t.has_more,
        "backfillFailed": false,
    })))
}

pub async fn list_sessions(
    State(app): State<SessionApi>,
    Extension(p): Extension<Principal>,
) -> ApiResult {
    let sessions = app.service.list_sessions(&p).await?;
    let sessions: Vec<Value> = sessions
        .iter()
        .map(|s| json!({ "id": s.id.to_string(), "title": s.title, "updatedAt": s.updated_at.to_iso8601() }))
        .collect();
    Ok(Json(json!({ "sessions": sessions })))
}

pub async fn cancel(
    State(app): State<SessionApi>,
    Extension(p): Extension<Principal>,
    body: JsonObject,
) -> ApiResult {
    let session = session_id(Some(body.string("sessionId")?))?;
    Ok(Json(if app.service.cancel(&p, &session).await? {
        json!({ "ok": true, "alreadyCancelled": true })
    } else {
        json!({ "ok": true })
    }))
}

pub async fn delete_session(
    State(app): State<SessionApi>,
    Extension(p): Extension<Principal>,
    RawQuery(q): RawQuery,
) -> ApiResult {
    let session = session_id(QueryParams::parse(q.as_deref()).get("sessionId"))?;
    app.service.delete(&p, &session).await?;
    Ok(Json(json!({ "ok": true })))
}

/// Takes `{"orgId": "..."}`; answers `{"ok": true, "orgId": ...}` and a new cookie for that
/// organisation that expires when the current one does, so switching never extends a sign-in.
pub async fn switch_org(
    State(app): State<SessionApi>,
    Extension(claims): Extension<CookieClaims>,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let org = match body.string("orgId")? {
        "" => return Err(CoreError::invalid("empty_field", "orgId must not be empty").into()),
        s => OrgId::parse(s).map_err(|e| ApiError::InvalidField(e.to_string()))?,
    };
    let p = app.service.switch_org(claims.user, org).await?;
    let token = app
        .signer
        .mint_until(&p.user, &p.org, claims.expires_at)
        .map_err(CoreError::internal)?;
    let cookie = set_cookie_header(&token, claims.expires_at, app.config.secure_cookies());
    let mut response = Json(json!({ "ok": true, "orgId": p.org.to_string() })).into_response();
    let value = HeaderValue::from_str(&cookie).map_err(CoreError::internal)?;
    response.headers_mut().insert(SET_COOKIE, value);
    Ok(response)
}

pub async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
