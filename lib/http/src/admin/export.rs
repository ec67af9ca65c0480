//! The admin exports, as files to download: a month's usage as CSV (per member and day, or per
//! member and model), and the audit log as CSV or JSON Lines, filtered by dates, action and
//! actor, each written page by page as it is read, so that a year of entries (or a million
//! members' months) is never held at once. Where the runtime buffers responses whole (Lambda),
//! an export over [`crate::HttpConfig::buffered_export_max`] is refused with 413
//! `export_too_large` instead.
//! The rows are written by [`super::export_text`].

use axum::body::{Body, Bytes};
use axum::extract::RawQuery;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use knowledge_core::CoreError;
use knowledge_core::admin::{
    ActorFilter, Admin, Administration, AuditFilter, EXPORT_PAGE, export_start, parse_month,
};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditAction, AuditCursor};
use knowledge_core::error::Chain;
use knowledge_core::ids::UserId;
use utoipa::IntoParams;

use super::export_text::{BY_DAY_HEAD, BY_MODEL_HEAD, Format, usage_rows};
use super::{AdminErrors, Caller};
use crate::error::ApiError;
use crate::extract::QueryParams;

/// Pages of the audit log a buffered export reads at most (100 entries each): a filter that
/// rarely matches is refused like a large export, rather than read past the request's time.
const BUFFERED_PAGES_MAX: usize = 300;

/// `GET /usage/export`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageExportQuery {
    /// A calendar month, `YYYY-MM` (UTC).
    #[param(pattern = "^[0-9]{4}-(0[1-9]|1[0-2])$")]
    pub month: String,
    /// `day` (a row per member and day, the default) or `model` (a row per member and model).
    pub by: Option<String>,
}

/// `GET /audit/export`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditExportQuery {
    /// `csv` (the default) or `jsonl`.
    pub format: Option<String>,
    /// The first day (`YYYY-MM-DD`, UTC) of the entries, inclusive.
    #[param(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    pub from: Option<String>,
    /// The last day, inclusive.
    #[param(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    pub to: Option<String>,
    /// Only entries of this action, such as `member.removed`.
    pub action: Option<String>,
    /// Only entries by `admin` (in the admin API), `command-line`, `scim` or `member`.
    pub actor: Option<String>,
}

fn invalid(message: &str) -> ApiError {
    ApiError::InvalidField(message.to_owned())
}

/// A month's usage as CSV: a row per member and day with any usage (`by=day`), or per member
/// and model (`by=model`), members by user id, written page by page as it is read.
#[utoipa::path(get, path = "/usage/export", operation_id = "adminExportUsage",
    params(UsageExportQuery),
    responses((status = 200, description = "The month's usage, as an attachment. On AWS an \
        export over 4 MiB is refused with 413 `export_too_large`.",
        content_type = "text/csv", body = String), AdminErrors))]
pub async fn usage(c: Caller, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let q = QueryParams::parse(q.as_deref());
    let month = q.get("month").filter(|m| !m.is_empty());
    let month = parse_month(month.ok_or_else(|| invalid("month is required, YYYY-MM"))?)?;
    let by_model = match q.get("by") {
        None | Some("" | "day") => false,
        Some("model") => true,
        Some(_) => return Err(invalid("by must be day or model")),
    };
    let suffix = if by_model { "-by-model" } else { "" };
    let name = format!("usage-{month}{suffix}.csv");
    let head = if by_model { BY_MODEL_HEAD } else { BY_DAY_HEAD };
    let pages = Pages::Usage {
        month,
        by_model,
        after: None,
        done: false,
    };
    answer(&c, Format::Csv, &name, head, pages).await
}

/// The audit export asked for: its form and its filter.
fn audit_request(raw: Option<&str>) -> Result<(Format, AuditFilter), ApiError> {
    let q = QueryParams::parse(raw);
    let format =
        Format::parse(q.get("format")).ok_or_else(|| invalid("format must be csv or jsonl"))?;
    let date = |name: &str| -> Result<Option<Timestamp>, ApiError> {
        match q.get(name) {
            None | Some("") => Ok(None),
            Some(raw) => Timestamp::parse_date(raw)
                .map(Some)
                .ok_or_else(|| invalid(&format!("{name} must be a date, YYYY-MM-DD"))),
        }
    };
    let (from, to) = (date("from")?, date("to")?);
    if from.zip(to).is_some_and(|(from, to)| from > to) {
        return Err(invalid("from must not be after to"));
    }
    let action = match q.get("action") {
        None | Some("") => None,
        Some(a) => Some(a.parse::<AuditAction>().map_err(|_| {
            invalid("action must be one of the audit log's actions, such as member.removed")
        })?),
    };
    let actor = match q.get("actor") {
        None | Some("") => None,
        Some(a) => Some(
            ActorFilter::parse(a)
                .ok_or_else(|| invalid("actor must be admin, command-line, scim or member"))?,
        ),
    };
    let until = to.map(|to| to.plus_millis(86_400_000));
    Ok((
        format,
        AuditFilter {
            from,
            until,
            action,
            actor,
        },
    ))
}

/// An export being read: each call to [`Export::next_text`] reads one page and gives its rows.
enum Pages {
    Audit {
        filter: AuditFilter,
        format: Format,
        /// Where the next page ends (from the newest entry when `Some(None)`); `None` once the
        /// log or the filter's dates end.
        next: Option<Option<AuditCursor>>,
    },
    Usage {
        month: String,
        by_model: bool,
        /// The last member of the page before.
        after: Option<UserId>,
        done: bool,
    },
}

struct Export {
    admin: Administration,
    who: Admin,
    pages: Pages,
}

impl Export {
    /// Reads nothing more: the next call to [`Export::next_text`] ends the export.
    fn stop(&mut self) {
        match &mut self.pages {
            Pages::Audit { next, .. } => *next = None,
            Pages::Usage { done, .. } => *done = true,
        }
    }

    /// The next page's rows (possibly none: a filter passed over them), or `None` at the end.
    async fn next_text(&mut self) -> Result<Option<String>, CoreError> {
        let (admin, who) = (&self.admin, &self.who);
        match &mut self.pages {
            Pages::Audit {
                filter,
                format,
                next,
            } => {
                let Some(before) = next.take() else {
                    return Ok(None);
                };
                let page = admin
                    .audit_export_page(who, filter, before.as_ref())
                    .await?;
                *next = page.next.map(Some);
                Ok(Some(format.render(&page.entries)))
            }
            Pages::Usage {
                month,
                by_model,
                after,
                done,
            } => {
                if *done {
                    return Ok(None);
                }
                let page = admin.usage_export_page(who, month, after.as_ref()).await?;
                *done = page.len() < EXPORT_PAGE;
                *after = page.last().map(|row| row.user.clone());
                let mut text = String::new();
                for row in &page {
                    usage_rows(&mut text, month, row, *by_model);
                }
                Ok(Some(text))
            }
        }
    }
}

/// The audit log's entries of the filters, newest first, as CSV or JSON Lines (one
/// [`super::wire::AuditEntryView`] a line), written as each page of the log is read.
#[utoipa::path(get, path = "/audit/export", operation_id = "adminExportAudit",
    params(AuditExportQuery),
    responses((status = 200, description = "The entries, as an attachment: CSV, or JSON Lines \
        (`application/x-ndjson`) with `format=jsonl`. On AWS an export over 4 MiB, or one that \
        reads more than 30,000 entries, is refused with 413 `export_too_large`.",
        content_type = "text/csv", body = String), AdminErrors))]
pub async fn audit(c: Caller, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let (format, filter) = audit_request(q.as_deref())?;
    let name = format!("audit.{}", format.extension());
    let next = Some(export_start(&filter));
    let pages = Pages::Audit {
        filter,
        format,
        next,
    };
    answer(&c, format, &name, format.head(), pages).await
}

/// The export as an attachment named `name`: `head`, then each page as it is read. The first
/// page is read before the status is sent, so that a store that fails at once answers an
/// error status, not a cut file. Where responses are buffered, every page is read first, and
/// an export over the limit, or over [`BUFFERED_PAGES_MAX`] pages, is refused.
async fn answer(
    c: &Caller, format: Format, name: &str, head: &str, pages: Pages,
) -> Result<Response, ApiError> {
    let mut export = Export {
        admin: c.administration()?.clone(),
        who: c.admin.clone(),
        pages,
    };
    let first = export.next_text().await?.unwrap_or_default();
    let text = format!("{head}{first}");
    if let Some(limit) = c.app.config.buffered_export_max {
        let mut text = text;
        for _ in 0..BUFFERED_PAGES_MAX {
            if text.len() > limit {
                break;
            }
            match export.next_text().await? {
                Some(page) => text.push_str(&page),
                None => return Ok(attachment(format, name, Body::from(text))),
            }
        }
        return Err(ApiError::ExportTooLarge { limit });
    }
    // Each later page is read when the client has taken the one before.
    let rest = stream::unfold(export, |mut export| async move {
        match export.next_text().await {
            Ok(Some(text)) => Some((Ok(Bytes::from(text)), export)),
            Ok(None) => None,
            Err(e) => {
                tracing::error!(error = %Chain(&e), "export page");
                export.stop();
                let cut = std::io::Error::other("the export could not be read");
                Some((Err(cut), export))
            }
        }
    });
    let body = stream::once(async { Ok(Bytes::from(text)) }).chain(rest);
    // Fused: a body layer (compression) may poll once more after the end.
    Ok(attachment(format, name, Body::from_stream(body.fuse())))
}

fn attachment(format: Format, name: &str, body: Body) -> Response {
    let disposition = format!("attachment; filename=\"{name}\"");
    (
        [
            (CONTENT_TYPE, format.content_type().to_owned()),
            (CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response()
}
