//! Incoming groups: a POST or PUT body validated into a [`GroupInput`], and a PatchOp body
//! parsed into [`GroupEdit`]s as Entra ID and Okta send them (`members` added, removed by
//! value or by `members[value eq "…"]`, or replaced; `displayName` and `externalId` set with or
//! without a path). Everything is judged before anything is written.

use serde_json::Value;

use super::filter::{self, Filterable};
use super::schema::{GROUP_SCHEMA, PATCH_OP_SCHEMA};
use super::{ScimError, field};
use crate::domain::{GROUP_NAME_MAX_CHARS, USER_NAME_MAX_CHARS};
use crate::ids::UserId;

/// A group as a POST or PUT body gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInput {
    pub display_name: String,
    pub external_id: Option<String>,
    /// The members' ids, each once, in the order sent.
    pub members: Vec<UserId>,
}

/// One change a PATCH makes to a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEdit {
    Rename(String),
    ExternalId(Option<String>),
    Add(Vec<UserId>),
    Remove(Vec<UserId>),
    /// `remove` of `members` with no value: every member leaves.
    RemoveAll,
    /// `replace` of `members`: exactly these stay or join.
    Replace(Vec<UserId>),
}

/// Validates a Group resource from a POST or PUT body: `displayName` is required, `id`, `meta`
/// and the members' `display`, `$ref` and `type` are ignored, any other attribute is refused.
/// Errors: `InvalidSyntax` (not an object, an unknown attribute or schema), `InvalidValue` (a
/// missing or malformed `displayName`, `externalId` or member).
pub fn group_from_json(body: &Value) -> Result<GroupInput, ScimError> {
    let Value::Object(body) = body else {
        return Err(ScimError::InvalidSyntax(
            "the body must be a JSON object".into(),
        ));
    };
    let (mut display_name, mut external_id, mut members) = (None, None, Vec::new());
    for (key, value) in body {
        if value.is_null() {
            continue;
        }
        match key.to_ascii_lowercase().as_str() {
            "schemas" => check_schemas(value)?,
            "id" | "meta" => {}
            "displayname" => display_name = Some(name(value)?),
            "externalid" => external_id = Some(external(value)?),
            "members" => members = member_ids(value)?,
            _ => {
                let shown: String = key.chars().take(64).collect();
                return Err(ScimError::InvalidSyntax(format!(
                    "unknown attribute '{shown}'"
                )));
            }
        }
    }
    let display_name =
        display_name.ok_or_else(|| ScimError::InvalidValue("displayName is required".into()))?;
    Ok(GroupInput {
        display_name,
        external_id,
        members,
    })
}

/// The schema URN Entra ID adds to the groups it creates; it defines nothing kept here.
const ENTRA_GROUP_SCHEMA: &str =
    "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group";

fn check_schemas(value: &Value) -> Result<(), ScimError> {
    let known = |u: &str| {
        u.eq_ignore_ascii_case(GROUP_SCHEMA) || u.eq_ignore_ascii_case(ENTRA_GROUP_SCHEMA)
    };
    let ok =
        (value.as_array()).is_some_and(|uris| uris.iter().all(|u| u.as_str().is_some_and(known)));
    match ok {
        true => Ok(()),
        false => Err(ScimError::InvalidSyntax(
            "schemas must name the Group schema only".into(),
        )),
    }
}

/// A `displayName`: 1 to [`GROUP_NAME_MAX_CHARS`] characters, not blank, no control characters.
fn name(value: &Value) -> Result<String, ScimError> {
    match value.as_str() {
        Some(s)
            if !s.trim().is_empty()
                && s.chars().count() <= GROUP_NAME_MAX_CHARS
                && !s.chars().any(char::is_control) =>
        {
            Ok(s.to_owned())
        }
        _ => Err(ScimError::InvalidValue(format!(
            "displayName must be 1 to {GROUP_NAME_MAX_CHARS} characters, not blank, without control characters"
        ))),
    }
}

fn external(value: &Value) -> Result<String, ScimError> {
    match value.as_str() {
        Some(s) if s.chars().count() <= USER_NAME_MAX_CHARS && !s.chars().any(char::is_control) => {
            Ok(s.to_owned())
        }
        _ => Err(ScimError::InvalidValue(format!(
            "externalId must be a string of at most {USER_NAME_MAX_CHARS} characters without control characters"
        ))),
    }
}

/// The user ids of a `members` value: an array of `{"value": id}` (or one such object).
/// A value that is not a user id names no user: `InvalidValue`, as an unknown user is.
fn member_ids(value: &Value) -> Result<Vec<UserId>, ScimError> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(_) => std::slice::from_ref(value),
        _ => return Err(ScimError::InvalidValue("members must be an array".into())),
    };
    let mut ids: Vec<UserId> = Vec::with_capacity(items.len());
    for item in items {
        let id = item
            .as_object()
            .and_then(|m| field(m, "value"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ScimError::InvalidValue("each member needs a value: a user id".into())
            })?;
        let id = UserId::parse(id).map_err(|_| no_such_user())?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// A member that names no provisioned user of the organisation.
pub fn no_such_user() -> ScimError {
    ScimError::InvalidValue(
        "members names a user that is not provisioned in the organisation".into(),
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Replace,
    Remove,
}

/// Parses a PatchOp body into the edits it makes, in order.
/// Errors: `InvalidSyntax` (not a PatchOp body, an unknown op), `InvalidPath` (an attribute
/// groups do not have, a malformed filter), `InvalidValue` (a malformed value), `NoTarget` (an
/// operation a path cannot take), `Mutability` (removing `displayName`).
pub fn group_edits(body: &Value) -> Result<Vec<GroupEdit>, ScimError> {
    let syntax = |m: &str| ScimError::InvalidSyntax(m.to_owned());
    let Value::Object(body) = body else {
        return Err(syntax("the body must be a JSON object"));
    };
    if let Some(schemas) = field(body, "schemas") {
        let names_patch_op = (schemas.as_array())
            .is_some_and(|s| s.iter().any(|u| u.as_str() == Some(PATCH_OP_SCHEMA)));
        if !names_patch_op {
            return Err(syntax("schemas must name the PatchOp message schema"));
        }
    }
    let Some(Value::Array(ops)) =
        field(body, "Operations").filter(|o| o.as_array().is_some_and(|a| !a.is_empty()))
    else {
        return Err(syntax("Operations must be a non-empty array"));
    };
    let mut edits = Vec::new();
    for op in ops {
        let Value::Object(op) = op else {
            return Err(syntax("each operation must be an object"));
        };
        let kind = match field(op, "op").and_then(Value::as_str) {
            Some(o) if o.eq_ignore_ascii_case("add") => Op::Add,
            Some(o) if o.eq_ignore_ascii_case("replace") => Op::Replace,
            Some(o) if o.eq_ignore_ascii_case("remove") => Op::Remove,
            _ => return Err(syntax("op must be add, replace or remove")),
        };
        let value = field(op, "value").filter(|v| !v.is_null());
        match field(op, "path").filter(|p| !p.is_null()) {
            None => match (kind, value) {
                (Op::Remove, _) => return Err(ScimError::NoTarget("remove needs a path".into())),
                (_, Some(Value::Object(values))) => {
                    for (key, v) in values {
                        if !matches!(key.to_ascii_lowercase().as_str(), "id" | "schemas" | "meta") {
                            edits.push(edit(kind, key, Some(v))?);
                        }
                    }
                }
                _ => {
                    return Err(ScimError::InvalidValue(
                        "an operation without a path needs an object value".into(),
                    ));
                }
            },
            Some(Value::String(path)) => edits.push(edit(kind, path, value)?),
            Some(_) => return Err(ScimError::InvalidPath("path must be a string".into())),
        }
    }
    Ok(edits)
}

fn edit(kind: Op, path: &str, value: Option<&Value>) -> Result<GroupEdit, ScimError> {
    let needs = || value.ok_or_else(|| ScimError::InvalidValue(format!("{path} needs a value")));
    let trimmed = path.trim();
    let attribute = trimmed
        .strip_prefix(GROUP_SCHEMA)
        .and_then(|p| p.strip_prefix(':'))
        .unwrap_or(trimmed);
    if let Some(inner) = filtered_members(attribute) {
        let allowed = [Filterable {
            path: "value",
            case_exact: true,
        }];
        let filter = filter::parse(inner, &allowed).map_err(|_| {
            ScimError::InvalidPath("a member filter must be value eq \"<id>\"".into())
        })?;
        let id = filter.value_of("value").ok_or_else(|| {
            ScimError::InvalidPath("a member filter must be value eq \"<id>\"".into())
        })?;
        return match kind {
            Op::Remove => Ok(GroupEdit::Remove(vec![
                UserId::parse(id).map_err(|_| no_such_user())?,
            ])),
            _ => Err(ScimError::InvalidPath(
                "a filtered members path can only be removed".into(),
            )),
        };
    }
    match (attribute.to_ascii_lowercase().as_str(), kind) {
        ("displayname", Op::Remove) => Err(ScimError::Mutability(
            "displayName is required and cannot be removed".into(),
        )),
        ("displayname", _) => Ok(GroupEdit::Rename(name(needs()?)?)),
        ("externalid", Op::Remove) => Ok(GroupEdit::ExternalId(None)),
        ("externalid", _) => Ok(GroupEdit::ExternalId(Some(external(needs()?)?))),
        ("members", Op::Add) => Ok(GroupEdit::Add(member_ids(needs()?)?)),
        ("members", Op::Replace) => Ok(GroupEdit::Replace(match value {
            None => Vec::new(),
            Some(v) => member_ids(v)?,
        })),
        ("members", Op::Remove) => match value {
            None => Ok(GroupEdit::RemoveAll),
            Some(v) => Ok(GroupEdit::Remove(member_ids(v)?)),
        },
        _ => {
            let shown: String = path.chars().take(64).collect();
            Err(ScimError::InvalidPath(format!(
                "groups have no attribute '{shown}'"
            )))
        }
    }
}

/// What is inside `members[…]`, when the path is that.
fn filtered_members(path: &str) -> Option<&str> {
    let open = path.find('[')?;
    path[..open]
        .eq_ignore_ascii_case("members")
        .then(|| path[open + 1..].strip_suffix(']'))
        .flatten()
}

#[cfg(test)]
mod tests;
