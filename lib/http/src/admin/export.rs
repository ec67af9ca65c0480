//! The admin exports, as files to download: a month's usage as CSV (per member and day, or per
//! member and model), and the audit log as CSV or JSON Lines, filtered by dates, action and
//! actor, written page by page as it is read, so that a year of entries is never held at
//! once. Where the runtime buffers responses whole (Lambda), an export over
//! [`crate::HttpConfig::buffered_export_max`] is refused with 413 `export_too_large` instead.
//! Every text field is escaped for CSV and kept from reading as a spreadsheet formula.

use std::fmt::Write as _;

use axum::body::{Body, Bytes};
use axum::extract::RawQuery;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use knowledge_core::CoreError;
use knowledge_core::admin::{ActorFilter, AuditFilter, MemberMonth, export_start, parse_month};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditAction, AuditCursor, micros_to_usd};
use utoipa::IntoParams;

use super::wire::AuditEntryView;
use super::{AdminErrors, Caller};
use crate::error::ApiError;
use crate::extract::QueryParams;

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
    let month = parse_month(
        q.get("month")
            .ok_or_else(|| invalid("month is required, YYYY-MM"))?,
    )?;
    let by_model = match q.get("by") {
        None | Some("day") => false,
        Some("model") => true,
        Some(_) => return Err(invalid("by must be day or model")),
    };
    let rows = c.administration()?.usage_export(&c.admin, &month).await?;
    let mut csv = String::new();
    if by_model {
        csv.push_str(
            "month,user_id,user_name,display_name,model,calls,input_tokens,output_tokens,usd\r\n",
        );
    } else {
        csv.push_str(
            "date,user_id,user_name,display_name,questions,input_tokens,output_tokens,usd\r\n",
        );
    }
    for row in &rows {
        let (user_name, display_name) = names(row);
        let who = [row.user.as_str(), user_name, display_name]
            .map(field)
            .join(",");
        if by_model {
            for (model, m) in row.usage.models_by_cost() {
                let usd = micros_to_usd(m.cost_micros);
                let (calls, i, o) = (m.calls, m.input_tokens, m.output_tokens);
                let _ = write!(
                    csv,
                    "{month},{who},{},{calls},{i},{o},{usd:.6}\r\n",
                    field(model)
                );
            }
        } else {
            for (day, d) in &row.usage.days {
                let usd = micros_to_usd(d.cost_micros);
                let (n, i, o) = (d.questions, d.input_tokens, d.output_tokens);
                let _ = write!(csv, "{month}-{day:02},{who},{n},{i},{o},{usd:.6}\r\n");
            }
        }
    }
    if let Some(limit) = c.app.config.buffered_export_max.filter(|l| csv.len() > *l) {
        return Err(ApiError::ExportTooLarge { limit });
    }
    let suffix = if by_model { "-by-model" } else { "" };
    Ok(attachment(
        "text/csv; charset=utf-8",
        &format!("usage-{month}{suffix}.csv"),
        Body::from(csv),
    ))
}

fn names(row: &MemberMonth) -> (&str, &str) {
    let profile = row.member.as_ref().and_then(|m| m.profile.as_ref());
    (
        profile.map_or("", |p| p.user_name.as_str()),
        profile.and_then(|p| p.display_name()).unwrap_or(""),
    )
}

#[derive(Clone, Copy)]
enum Format {
    Csv,
    JsonLines,
}

/// The audit log's entries of the filters, newest first, as CSV or JSON Lines (one
/// [`AuditEntryView`] a line), written as each page of the log is read.
#[utoipa::path(get, path = "/audit/export", operation_id = "adminExportAudit",
    params(AuditExportQuery),
    responses((status = 200, description = "The entries, as an attachment.",
        content_type = "text/csv", body = String), AdminErrors))]
pub async fn audit(c: Caller, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let q = QueryParams::parse(q.as_deref());
    let format = match q.get("format") {
        None | Some("csv") => Format::Csv,
        Some("jsonl") => Format::JsonLines,
        Some(_) => return Err(invalid("format must be csv or jsonl")),
    };
    let date = |name: &str| -> Result<Option<Timestamp>, ApiError> {
        match q.get(name) {
            None | Some("") => Ok(None),
            Some(raw) => Timestamp::parse_date(raw)
                .map(Some)
                .ok_or_else(|| invalid(&format!("{name} must be a date, YYYY-MM-DD"))),
        }
    };
    let (from, to) = (date("from")?, date("to")?);
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
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
    let filter = AuditFilter {
        from,
        until: to.map(|to| to.plus_millis(86_400_000)),
        action,
        actor,
    };
    // The first page is read before the status is sent, so that a store that fails at once
    // answers an error status, not a cut file.
    let admin = c.administration()?;
    let first = admin
        .audit_export_page(&c.admin, &filter, export_start(&filter).as_ref())
        .await?;
    let (content_type, ext) = match format {
        Format::Csv => ("text/csv; charset=utf-8", "csv"),
        Format::JsonLines => ("application/x-ndjson", "jsonl"),
    };
    let head = match format {
        Format::Csv => {
            "at,actor,actor_id,actor_name,action,target,target_name,from,to\r\n".to_owned()
        }
        Format::JsonLines => String::new(),
    };
    let first_text = head + &render(format, &first.entries);
    if let Some(limit) = c.app.config.buffered_export_max {
        // The response is buffered whole anyway: read it all, and refuse it past the limit.
        let mut text = first_text;
        let mut next = first.next;
        while let Some(before) = next.take() {
            let page = admin
                .audit_export_page(&c.admin, &filter, Some(&before))
                .await?;
            text.push_str(&render(format, &page.entries));
            if text.len() > limit {
                return Err(ApiError::ExportTooLarge { limit });
            }
            next = page.next;
        }
        return Ok(attachment(
            content_type,
            &format!("audit.{ext}"),
            Body::from(text),
        ));
    }
    // Each later page is read when the client has taken the one before.
    let pages = stream::unfold(
        (Some(first_text), first.next, c),
        move |(ready, next, c): (Option<String>, Option<AuditCursor>, Caller)| {
            let filter = filter.clone();
            async move {
                if let Some(text) = ready {
                    return Some((Ok(Bytes::from(text)), (None, next, c)));
                }
                let before = next?;
                let page = match c.administration() {
                    Ok(admin) => {
                        admin
                            .audit_export_page(&c.admin, &filter, Some(&before))
                            .await
                    }
                    Err(_) => Err(CoreError::internal(
                        "the admin routes are not assembled here",
                    )),
                };
                match page {
                    Ok(page) => {
                        let text = render(format, &page.entries);
                        Some((Ok(Bytes::from(text)), (None, page.next, c)))
                    }
                    Err(e) => {
                        tracing::error!(error = %knowledge_core::error::Chain(&e), "audit export page");
                        Some((
                            Err(std::io::Error::other("the audit log could not be read")),
                            (None, None, c),
                        ))
                    }
                }
            }
        },
    );
    let name = format!("audit.{ext}");
    // Fused: a body layer (compression) may poll once more after the end.
    Ok(attachment(
        content_type,
        &name,
        Body::from_stream(pages.fuse()),
    ))
}

fn render(format: Format, entries: &[knowledge_core::domain::AuditEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        let v = AuditEntryView::from(e);
        match format {
            Format::JsonLines => {
                out.push_str(&serde_json::to_string(&v).expect("plain strings"));
                out.push('\n');
            }
            Format::Csv => {
                let cells = [
                    v.at.as_str(),
                    &v.actor,
                    v.actor_id.as_deref().unwrap_or(""),
                    v.actor_name.as_deref().unwrap_or(""),
                    &v.action,
                    &v.target,
                    v.target_name.as_deref().unwrap_or(""),
                    v.from.as_deref().unwrap_or(""),
                    v.to.as_deref().unwrap_or(""),
                ];
                out.push_str(&cells.map(field).join(","));
                out.push_str("\r\n");
            }
        }
    }
    out
}

/// `text` as one CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break,
/// and led by `'` when a spreadsheet would read it as a formula.
fn field(text: &str) -> String {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let text = if formula {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn attachment(content_type: &'static str, name: &str, body: Body) -> Response {
    let disposition = format!("attachment; filename=\"{name}\"");
    (
        [
            (CONTENT_TYPE, content_type.to_owned()),
            (CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn a_field_is_quoted_when_it_must_be_and_never_reads_as_a_formula() {
        assert_eq!(field("ann"), "ann");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(field("+1"), "'+1");
        assert_eq!(field("@sum"), "'@sum");
    }
}
