//! The admin exports, as files to download: a month's usage as CSV (per member and day, or per
//! member and model), and the audit log as CSV or JSON Lines, filtered by dates, action and
//! actor, written page by page as it is read, so that a year of entries is never held at
//! once. Where the runtime buffers responses whole (Lambda), an export over
//! [`crate::HttpConfig::buffered_export_max`] is refused with 413 `export_too_large` instead.
//! The rows are written by [`super::export_text`].

use axum::body::{Body, Bytes};
use axum::extract::RawQuery;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use knowledge_core::CoreError;
use knowledge_core::admin::{
    ActorFilter, Admin, Administration, AuditFilter, export_start, parse_month,
};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditAction, AuditCursor};
use knowledge_core::error::Chain;
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
/// and model (`by=model`), members by user id.
#[utoipa::path(get, path = "/usage/export", operation_id = "adminExportUsage",
    params(UsageExportQuery),
    responses((status = 200, description = "The month's usage, as an attachment.",
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
    let rows = c.administration()?.usage_export(&c.admin, &month).await?;
    let mut csv = String::from(if by_model { BY_MODEL_HEAD } else { BY_DAY_HEAD });
    for row in &rows {
        usage_rows(&mut csv, &month, row, by_model);
    }
    if let Some(limit) = c.app.config.buffered_export_max.filter(|l| csv.len() > *l) {
        return Err(ApiError::ExportTooLarge { limit });
    }
    let suffix = if by_model { "-by-model" } else { "" };
    let name = format!("usage-{month}{suffix}.csv");
    Ok(attachment(Format::Csv, &name, Body::from(csv)))
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

/// An audit export being read: each call to [`AuditPages::next_text`] reads one page of the
/// log and gives its entries in the export's form.
struct AuditPages {
    admin: Administration,
    who: Admin,
    filter: AuditFilter,
    format: Format,
    /// Where the next page starts; `None` once the log or the filter's dates end.
    next: Option<AuditCursor>,
}

impl AuditPages {
    /// The next page's text (possibly empty: the filter passed over it), or `None` at the end.
    async fn next_text(&mut self) -> Result<Option<String>, CoreError> {
        let Some(before) = self.next.take() else {
            return Ok(None);
        };
        let page = (self.admin)
            .audit_export_page(&self.who, &self.filter, Some(&before))
            .await?;
        self.next = page.next;
        Ok(Some(self.format.render(&page.entries)))
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
    let admin = c.administration()?.clone();
    // The first page is read before the status is sent, so that a store that fails at once
    // answers an error status, not a cut file.
    let first = admin
        .audit_export_page(&c.admin, &filter, export_start(&filter).as_ref())
        .await?;
    let text = format!("{}{}", format.head(), format.render(&first.entries));
    let mut pages = AuditPages {
        admin,
        who: c.admin.clone(),
        filter,
        format,
        next: first.next,
    };
    let name = format!("audit.{}", format.extension());
    if let Some(limit) = c.app.config.buffered_export_max {
        // The response is buffered whole anyway: read it all, and refuse it past the limit.
        let mut text = text;
        for _ in 0..BUFFERED_PAGES_MAX {
            match pages.next_text().await? {
                Some(page) => text.push_str(&page),
                None => return Ok(attachment(format, &name, Body::from(text))),
            }
            if text.len() > limit {
                break;
            }
        }
        return Err(ApiError::ExportTooLarge { limit });
    }
    // Each later page is read when the client has taken the one before.
    let rest = stream::unfold(pages, |mut pages| async move {
        match pages.next_text().await {
            Ok(Some(text)) => Some((Ok(Bytes::from(text)), pages)),
            Ok(None) => None,
            Err(e) => {
                tracing::error!(error = %Chain(&e), "audit export page");
                Some((
                    Err(std::io::Error::other("the audit log could not be read")),
                    pages,
                ))
            }
        }
    });
    let body = stream::once(async { Ok(Bytes::from(text)) }).chain(rest);
    // Fused: a body layer (compression) may poll once more after the end.
    Ok(attachment(format, &name, Body::from_stream(body.fuse())))
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
