//! How the admin exports write their rows: CSV fields (RFC 4180, never read as a formula), an
//! audit entry as a CSV row or a JSON line, and a member's month as CSV rows by day or model.

use std::fmt::Write as _;

use knowledge_core::admin::MemberMonth;
use knowledge_core::domain::{AuditEntry, micros_to_usd};

use super::wire::AuditEntryView;

/// The audit export's two forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    JsonLines,
}

impl Format {
    /// `csv` (also when empty or absent) or `jsonl`; `None` for anything else.
    pub fn parse(raw: Option<&str>) -> Option<Self> {
        match raw {
            None | Some("" | "csv") => Some(Self::Csv),
            Some("jsonl") => Some(Self::JsonLines),
            Some(_) => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::JsonLines => "application/x-ndjson",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::JsonLines => "jsonl",
        }
    }

    /// What the file starts with: the CSV header row, or nothing.
    pub fn head(self) -> &'static str {
        match self {
            Self::Csv => "at,actor,actor_id,actor_name,action,target,target_name,from,to\r\n",
            Self::JsonLines => "",
        }
    }

    /// `entries` in this form, one line each.
    pub fn render(self, entries: &[AuditEntry]) -> String {
        let mut out = String::new();
        for e in entries {
            let v = AuditEntryView::from(e);
            match self {
                Self::JsonLines => {
                    out.push_str(&serde_json::to_string(&v).expect("plain strings"));
                    out.push('\n');
                }
                Self::Csv => {
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
}

/// The header of the usage export by day.
pub const BY_DAY_HEAD: &str =
    "date,user_id,user_name,display_name,questions,input_tokens,output_tokens,usd\r\n";
/// The header of the usage export by model.
pub const BY_MODEL_HEAD: &str =
    "month,user_id,user_name,display_name,model,calls,input_tokens,output_tokens,usd\r\n";

/// `row`'s month as CSV rows, one a day (`by_model` false) or one a model. Usage counted
/// before days and models were (their sum short of the month's counters) gets a row of its
/// own: dated by the month alone, or with no model.
pub fn usage_rows(out: &mut String, month: &str, row: &MemberMonth, by_model: bool) {
    let profile = row.member.as_ref().and_then(|m| m.profile.as_ref());
    let user_name = profile.map_or("", |p| p.user_name.as_str());
    let display_name = profile.and_then(|p| p.display_name()).unwrap_or("");
    let who = [row.user.as_str(), user_name, display_name]
        .map(field)
        .join(",");
    let total = row.usage.usage;
    if by_model {
        let mut spent = 0;
        for (model, m) in row.usage.models_by_cost() {
            spent += m.cost_micros;
            let (calls, i, o, usd) = (m.calls, m.input_tokens, m.output_tokens, m.cost_micros);
            let (model, usd) = (field(model), micros_to_usd(usd));
            let _ = write!(out, "{month},{who},{model},{calls},{i},{o},{usd:.6}\r\n");
        }
        let rest = total.cost_micros.saturating_sub(spent);
        if rest > 0 {
            let _ = write!(out, "{month},{who},,0,0,0,{:.6}\r\n", micros_to_usd(rest));
        }
    } else {
        let (mut asked, mut spent) = (0, 0);
        for (day, d) in &row.usage.days {
            (asked, spent) = (asked + d.questions, spent + d.cost_micros);
            let (n, i, o, usd) = (d.questions, d.input_tokens, d.output_tokens, d.cost_micros);
            let usd = micros_to_usd(usd);
            let _ = write!(out, "{month}-{day:02},{who},{n},{i},{o},{usd:.6}\r\n");
        }
        let rest = (
            total.queries.saturating_sub(asked),
            total.cost_micros.saturating_sub(spent),
        );
        if rest != (0, 0) {
            let usd = micros_to_usd(rest.1);
            let _ = write!(out, "{month},{who},{},0,0,{usd:.6}\r\n", rest.0);
        }
    }
}

/// `text` as one CSV field (RFC 4180): quoted when it holds a comma, a semicolon (a separator
/// in some locales' spreadsheets), a quote or a line break, and led by `'` when a
/// spreadsheet would read it as a formula.
pub fn field(text: &str) -> String {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let text = if formula {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', ';', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use knowledge_core::domain::{DayUsage, MonthUsage, Usage};
    use knowledge_core::ids::UserId;

    use super::*;

    #[test]
    fn a_field_is_quoted_when_it_must_be_and_never_reads_as_a_formula() {
        assert_eq!(field("ann"), "ann");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("a;=1"), "\"a;=1\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(field("+1"), "'+1");
        assert_eq!(field("@sum"), "'@sum");
    }

    #[test]
    fn usage_counted_before_days_were_gets_a_row_of_its_own() {
        let user = UserId::generate();
        let mut usage = MonthUsage {
            usage: Usage {
                queries: 5,
                cost_micros: 3_000_000,
            },
            ..MonthUsage::default()
        };
        usage.days.insert(
            26,
            DayUsage {
                questions: 2,
                cost_micros: 1_000_000,
                ..DayUsage::default()
            },
        );
        let row = MemberMonth {
            user: user.clone(),
            member: None,
            usage,
        };
        let mut out = String::new();
        usage_rows(&mut out, "2026-11", &row, false);
        let want =
            format!("2026-11-26,{user},,,2,0,0,1.000000\r\n2026-11,{user},,,3,0,0,2.000000\r\n");
        assert_eq!(out, want);
        let mut out = String::new();
        usage_rows(&mut out, "2026-11", &row, true);
        assert_eq!(out, format!("2026-11,{user},,,,0,0,0,3.000000\r\n"));
    }
}
