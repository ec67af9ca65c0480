//! The handlers of the session endpoints and the organisation switch: parse the request into
//! domain values, call one use case, render the response type. Authentication and the request
//! rules happen before them, in [`crate::guard`]. Each handler's `#[utoipa::path]` is its entry
//! in the OpenAPI document, and the router is built from the same declarations.

use axum::Json;
use axum::extract::RawQuery;
use knowledge_core::ids::SessionId;
use utoipa::IntoResponses;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Claimant, JsonBody, Member};
use crate::wire::{
    Answered, Answering, ApproveRequest, CancelRequest, Cancelled, CreateSessionRequest,
    CreatedSessionView, Done, Message, MessageRequest, SessionList, SessionQuery, SessionView,
    TranscriptPage, TranscriptQuery, TranscriptView,
};

/// Where a link takes the id of the session just created.
const SESSION_ID: &str = "$response.body#/id";

/// The errors the session endpoints and the organisation switch answer, in the documented
/// body. Which of them a request can meet depends on it: a GET has no body to refuse.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum ApiErrors {
    /// A field is missing, empty, of the wrong type or malformed, or the body is not a JSON
    /// object of UTF-8.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid session cookie of a current member of the active organisation.
    #[response(status = 401)]
    Unauthenticated(ErrorBody),
    /// A POST or DELETE without this application's `Origin`, a plan that does not allow
    /// sessions, or (signing in) a person not provisioned in the organisation.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// The session (or organisation) does not exist for this member, or (signing in) no single
    /// sign-on is set up for the e-mail address or organisation.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The body did not arrive in time.
    #[response(status = 408)]
    RequestTimeout(ErrorBody),
    /// The body is larger than 256 KiB.
    #[response(status = 413)]
    PayloadTooLarge(ErrorBody),
    /// The request target is longer than 8 KiB.
    #[response(status = 414)]
    UriTooLong(ErrorBody),
    /// A body not sent as `application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// A rate limit, the monthly query quota or the cost cap: retry after `Retry-After`
    /// seconds.
    #[response(
        status = 429,
        headers(("Retry-After" = u64, description = "Seconds until the request may succeed"))
    )]
    TooManyRequests(ErrorBody),
    /// More than 100 header fields, or more than 32 KiB of them.
    #[response(status = 431)]
    HeadersTooLarge(ErrorBody),
    /// Something failed inside the service; the cause is logged, never shown.
    #[response(status = 500)]
    Internal(ErrorBody),
    /// The AI provider (creating a session) or the identity provider (signing in) cannot be
    /// reached.
    #[response(status = 502)]
    ProviderUnavailable(ErrorBody),
}

/// Start a session: store the opening message and start the run that answers it.
#[utoipa::path(post, path = "/session", operation_id = "createSession",
    request_body = CreateSessionRequest,
    responses((status = 200, description = "The new session and the run answering it.",
        body = CreatedSessionView, links(
            ("transcript" = (operation_id = "transcript", parameters(("sessionId" = SESSION_ID)))),
            ("message" = (operation_id = "postMessage", request_body = json!({ "sessionId": SESSION_ID }))),
            ("cancel" = (operation_id = "cancel", request_body = json!({ "sessionId": SESSION_ID }))),
            ("delete" = (operation_id = "deleteSession", parameters(("sessionId" = SESSION_ID)))),
        )), ApiErrors))]
pub async fn create_session(
    Claimant { app, who }: Claimant, JsonBody(body): JsonBody<CreateSessionRequest>,
) -> Result<Json<CreatedSessionView>, ApiError> {
    let created = app.service.create_session(&who, &body.text).await?;
    Ok(Json(created.into()))
}

/// Send a follow-up: it is answered after the turn in flight, if any.
#[utoipa::path(post, path = "/message", operation_id = "postMessage", request_body = MessageRequest,
    responses((status = 200, description = "The message is in the log.", body = Done), ApiErrors))]
pub async fn post_message(
    Claimant { app, who }: Claimant, JsonBody(body): JsonBody<MessageRequest>,
) -> Result<Json<Done>, ApiError> {
    let message = Message::try_from(body)?;
    app.service
        .post_message(&who, &message.session, &message.text)
        .await?;
    Ok(Json(Done::OK))
}

/// Read the session's log after a cursor, one page at a time.
#[utoipa::path(get, path = "/transcript", operation_id = "transcript", params(TranscriptQuery),
    responses((status = 200, description = "One page of the log.", body = TranscriptView),
    ApiErrors))]
pub async fn transcript(
    Claimant { app, who }: Claimant, RawQuery(q): RawQuery,
) -> Result<Json<TranscriptView>, ApiError> {
    let page = TranscriptPage::parse(q.as_deref())?;
    let t = app
        .service
        .transcript(&who, &page.session, page.since)
        .await?;
    Ok(Json(t.into()))
}

/// List the member's sessions in the active organisation, most recently updated first.
#[utoipa::path(get, path = "/sessions", operation_id = "listSessions", responses((status = 200,
    description = "The sessions.", body = SessionList), ApiErrors))]
pub async fn list_sessions(Member { app, p }: Member) -> Result<Json<SessionList>, ApiError> {
    let sessions = app.service.list_sessions(&p).await?;
    Ok(Json(SessionList {
        sessions: sessions.into_iter().map(SessionView::from).collect(),
    }))
}

/// Stop the turn in flight; the run ends with `status_terminated`.
#[utoipa::path(post, path = "/cancel", operation_id = "cancel", request_body = CancelRequest,
    responses((status = 200, description = "Cancelled, or nothing was running.", body = Cancelled),
    ApiErrors))]
pub async fn cancel(
    Claimant { app, who }: Claimant, JsonBody(body): JsonBody<CancelRequest>,
) -> Result<Json<Cancelled>, ApiError> {
    let session = SessionId::try_from(body)?;
    let already = app.service.cancel(&who, &session).await?;
    Ok(Json(Cancelled {
        ok: true,
        already_cancelled: already.then_some(true),
    }))
}

/// Answer a call the agent asks the member about: `approve`, `decline`, or `always` (approve,
/// and always allow the tool for this member). The answer that leaves no call of the step
/// waiting resumes the turn. A call answered already is `409 approval_answered`; `always`
/// where the admin does not permit it is `409 always_not_permitted`; a call not waiting in
/// the session's turn (it ended, was cancelled, or never asked) is `404`.
#[utoipa::path(post, path = "/approve", operation_id = "approve", request_body = ApproveRequest,
    responses((status = 200, description = "The call's new state.", body = Answered),
    (status = 409, description = "The call was answered already, or `always` is not permitted \
        for its tool.", body = crate::error::ErrorBody), ApiErrors))]
pub async fn approve(
    Claimant { app, who }: Claimant, JsonBody(body): JsonBody<ApproveRequest>,
) -> Result<Json<Answered>, ApiError> {
    let a = Answering::try_from(body)?;
    let state = (app.service)
        .answer_call(&who, &a.session, a.tool_use, a.decision)
        .await?;
    Ok(Json(state.into()))
}

/// Delete the session and its whole log; a run in flight is cancelled.
#[utoipa::path(delete, path = "/session", operation_id = "deleteSession", params(SessionQuery),
    responses((status = 200, description = "The session is gone.", body = Done), ApiErrors))]
pub async fn delete_session(
    Member { app, p }: Member, RawQuery(q): RawQuery,
) -> Result<Json<Done>, ApiError> {
    let session = SessionId::try_from(SessionQuery::parse(q.as_deref()))?;
    app.service.delete(&p, &session).await?;
    Ok(Json(Done::OK))
}

pub async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// An unknown route behind the member guard: a non-member learns nothing of the routes (401).
pub async fn member_route_not_found(_: Member) -> ApiError {
    ApiError::RouteNotFound
}

/// A known route's unknown method behind the member guard, after the membership (401).
pub async fn member_method_not_allowed(_: Member) -> ApiError {
    ApiError::MethodNotAllowed
}
