//! The SCIM filters this service evaluates: `<attribute> eq "<string>"` clauses joined by `and`
//! (RFC 7644 §3.4.2.2), attribute names and operators in any letter case. Anything else is an
//! `invalidFilter` error, never a silently wider result.

use super::ScimError;
use super::schema::USER_SCHEMA;

/// An attribute a filter may test, and how its values compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filterable {
    /// The attribute path as RFC 7643 names it, such as `emails.value`.
    pub path: &'static str,
    /// Whether values compare case-sensitively (RFC 7643 `caseExact`).
    pub case_exact: bool,
}

/// What user lists can be filtered on.
pub const USER_FILTERS: &[Filterable] = &[
    Filterable {
        path: "userName",
        case_exact: false,
    },
    Filterable {
        path: "externalId",
        case_exact: true,
    },
    Filterable {
        path: "emails.value",
        case_exact: false,
    },
    Filterable {
        path: "id",
        case_exact: true,
    },
];

/// What group lists can be filtered on.
pub const GROUP_FILTERS: &[Filterable] = &[
    Filterable {
        path: "displayName",
        case_exact: false,
    },
    Filterable {
        path: "externalId",
        case_exact: true,
    },
    Filterable {
        path: "id",
        case_exact: true,
    },
];

/// One `eq` test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub attribute: Filterable,
    pub value: String,
}

impl Clause {
    /// Whether `candidate`, a value of the attribute, satisfies the test.
    pub fn accepts(&self, candidate: &str) -> bool {
        if self.attribute.case_exact {
            candidate == self.value
        } else {
            candidate.to_lowercase() == self.value.to_lowercase()
        }
    }
}

/// A parsed filter: every clause must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    pub clauses: Vec<Clause>,
}

impl Filter {
    /// The value a clause on `path` requires, if the filter has one.
    pub fn value_of(&self, path: &str) -> Option<&str> {
        self.clauses
            .iter()
            .find(|c| c.attribute.path == path)
            .map(|c| c.value.as_str())
    }

    /// Whether a resource whose attribute values `values_of(path)` returns passes every clause;
    /// a multi-valued attribute passes when any value does.
    pub fn accepts(&self, values_of: impl Fn(&str) -> Vec<String>) -> bool {
        self.clauses
            .iter()
            .all(|c| values_of(c.attribute.path).iter().any(|v| c.accepts(v)))
    }
}

fn invalid(message: &str) -> ScimError {
    ScimError::InvalidFilter(message.to_owned())
}

/// Parses `text` against the attributes `allowed`.
/// Errors: `InvalidFilter` for a syntax error, another operator than `eq`, `or`, `not`,
/// grouping, value paths, a non-string value, or an attribute not in `allowed`.
pub fn parse(text: &str, allowed: &[Filterable]) -> Result<Filter, ScimError> {
    let mut rest = text.trim_start();
    let mut clauses = Vec::new();
    loop {
        let (path, after) = word(rest);
        if path.is_empty() {
            return Err(invalid("expected an attribute name"));
        }
        let attribute = lookup(path, allowed)?;
        let (op, after) = word(after.trim_start());
        if !op.eq_ignore_ascii_case("eq") {
            return Err(invalid(
                "only the eq operator is supported, with clauses joined by and",
            ));
        }
        let (value, after) = string_literal(after.trim_start())?;
        clauses.push(Clause { attribute, value });
        rest = after.trim_start();
        if rest.is_empty() {
            return Ok(Filter { clauses });
        }
        let (joiner, after) = word(rest);
        if !joiner.eq_ignore_ascii_case("and") {
            return Err(invalid("clauses can only be joined by and"));
        }
        rest = after.trim_start();
    }
}

/// The longest prefix of attribute-path characters, and what follows.
fn word(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '$' | '_' | '-')))
        .unwrap_or(s.len());
    s.split_at(end)
}

fn lookup(path: &str, allowed: &[Filterable]) -> Result<Filterable, ScimError> {
    let unqualified = match path.get(..USER_SCHEMA.len() + 1) {
        Some(prefix) if prefix.eq_ignore_ascii_case(&format!("{USER_SCHEMA}:")) => {
            &path[USER_SCHEMA.len() + 1..]
        }
        _ => path,
    };
    allowed
        .iter()
        .find(|f| f.path.eq_ignore_ascii_case(unqualified))
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|f| f.path).collect();
            invalid(&format!(
                "filtering is supported on {} only",
                names.join(", ")
            ))
        })
}

/// A JSON string literal at the start of `s`, decoded, and what follows it.
fn string_literal(s: &str) -> Result<(String, &str), ScimError> {
    if !s.starts_with('"') {
        return Err(invalid("the compared value must be a quoted string"));
    }
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => {
                let value = serde_json::from_str(&s[..=i])
                    .map_err(|_| invalid("the compared value is not a valid string"))?;
                return Ok((value, &s[i + 1..]));
            }
            _ => {}
        }
    }
    Err(invalid("the compared value has no closing quote"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_clauses_joined_by_and_parse_in_any_case() {
        let f = parse(
            r#"USERNAME Eq "Ann@x.org" AND externalId eq "a\"b" and emails.value EQ "*""#,
            USER_FILTERS,
        )
        .unwrap();
        assert_eq!(f.value_of("userName"), Some("Ann@x.org"));
        assert_eq!(f.value_of("externalId"), Some("a\"b"));
        assert_eq!(f.value_of("emails.value"), Some("*"));
    }

    #[test]
    fn a_schema_qualified_attribute_is_the_attribute() {
        let f = parse(&format!(r#"{USER_SCHEMA}:userName eq "a""#), USER_FILTERS).unwrap();
        assert_eq!(f.value_of("userName"), Some("a"));
    }

    #[test]
    fn case_exactness_follows_the_attribute() {
        let f = parse(r#"userName eq "ANN""#, USER_FILTERS).unwrap();
        assert!(f.accepts(|_| vec!["ann".into()]));
        let f = parse(r#"externalId eq "ANN""#, USER_FILTERS).unwrap();
        assert!(!f.accepts(|_| vec!["ann".into()]));
        assert!(f.accepts(|_| vec!["ANN".into()]));
    }

    #[test]
    fn anything_else_is_an_invalid_filter() {
        for bad in [
            "",
            "userName",
            r#"userName co "a""#,
            r#"userName eq "a" or userName eq "b""#,
            r#"not (userName eq "a")"#,
            r#"(userName eq "a")"#,
            r#"emails[type eq "work"].value eq "a""#,
            r#"title eq "a""#,
            "userName eq 5",
            r#"userName eq "a"#,
            r#"userName eq "a" and"#,
            "userName pr",
        ] {
            assert!(
                matches!(parse(bad, USER_FILTERS), Err(ScimError::InvalidFilter(_))),
                "{bad:?}"
            );
        }
    }
}
