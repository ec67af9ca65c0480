//! Naming and finding conversations, beside the interface's session endpoints: `POST /rename`
//! gives a session the title its member chose, `GET /find` finds the member's sessions by
//! words of their titles. Their wire types live here with them.

use axum::Json;
use axum::extract::RawQuery;
use knowledge_core::domain::{FoundSessions, Title, TitleQuery};
use knowledge_core::ids::SessionId;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::extract::{Claimant, JsonBody, Member, QueryParams};
use crate::routes::ApiErrors;
use crate::wire::{SessionView, session_id};

/// `POST /rename`: the session and its new title.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenameRequest {
    #[schema(pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: String,
    /// One line of 1 to 60 characters once trimmed.
    #[schema(pattern = r"\S", max_length = 60)]
    pub title: String,
}

/// A rename, parsed.
pub struct Rename {
    pub session: SessionId,
    pub title: Title,
}

impl TryFrom<RenameRequest> for Rename {
    type Error = ApiError;

    fn try_from(r: RenameRequest) -> Result<Self, ApiError> {
        Ok(Self {
            session: session_id(Some(&r.session_id))?,
            title: Title::parse(&r.title)?,
        })
    }
}

/// The answer of a rename: the title as stored (trimmed).
#[derive(Debug, Serialize, ToSchema)]
pub struct Renamed {
    /// Always `true`.
    pub ok: bool,
    pub title: String,
}

/// `GET /find`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FindQuery {
    /// Words the title must all hold, whatever their case: at most 8 words, 200 characters.
    #[param(required, pattern = r"\S", max_length = 200)]
    pub q: Option<String>,
}

impl FindQuery {
    /// The parameters of a query string; the first `q` wins.
    pub fn parse(raw: Option<&str>) -> Self {
        Self {
            q: QueryParams::parse(raw).get("q").map(str::to_owned),
        }
    }
}

impl TryFrom<FindQuery> for TitleQuery {
    type Error = ApiError;

    fn try_from(f: FindQuery) -> Result<Self, ApiError> {
        let q =
            f.q.ok_or_else(|| ApiError::MissingField("q is required".into()))?;
        Ok(TitleQuery::parse(&q)?)
    }
}

/// The sessions found, most recently updated first.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundView {
    /// At most 50.
    pub sessions: Vec<SessionView>,
    /// `false` when only the member's 6,000 most recently updated sessions were searched and
    /// older ones were left out.
    pub complete: bool,
}

impl From<FoundSessions> for FoundView {
    fn from(f: FoundSessions) -> Self {
        Self {
            sessions: f.sessions.into_iter().map(SessionView::from).collect(),
            complete: f.complete,
        }
    }
}

/// Rename a session: its title becomes the one given (it no longer follows the first
/// message). Its place in the list does not move.
#[utoipa::path(post, path = "/rename", operation_id = "renameSession", request_body = RenameRequest,
    responses((status = 200, description = "The session has its new title.", body = Renamed),
    ApiErrors))]
pub async fn rename_session(
    Claimant { app, who }: Claimant, JsonBody(body): JsonBody<RenameRequest>,
) -> Result<Json<Renamed>, ApiError> {
    let rename = Rename::try_from(body)?;
    (app.service)
        .rename_session(&who, &rename.session, &rename.title)
        .await?;
    Ok(Json(Renamed {
        ok: true,
        title: rename.title.as_str().to_owned(),
    }))
}

/// Find the member's sessions in the active organisation whose titles hold every word of `q`.
#[utoipa::path(get, path = "/find", operation_id = "findSessions", params(FindQuery),
    responses((status = 200, description = "The sessions found.", body = FoundView), ApiErrors))]
pub async fn find_sessions(
    Member { app, p }: Member, RawQuery(q): RawQuery,
) -> Result<Json<FoundView>, ApiError> {
    let query = TitleQuery::try_from(FindQuery::parse(q.as_deref()))?;
    Ok(Json(app.service.find_sessions(&p, &query).await?.into()))
}
