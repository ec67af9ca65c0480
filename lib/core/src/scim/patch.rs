//! SCIM PATCH (RFC 7644 §3.5.2) as Entra ID and Okta send it: operations `add`, `replace` and
//! `remove` in any letter case; paths such as `active`, `name.givenName`,
//! `emails[type eq "work"].value` and the enterprise extension's URN-qualified names; and, with
//! no path, a value object whose keys may themselves be such paths (`"name.givenName"`).
//!
//! Operations edit the user as a JSON document; the result is validated as a whole, exactly like
//! a PUT body, so a PATCH can never store what a PUT could not.

use serde_json::{Map, Value};

use super::filter::{self, Filter, Filterable};
use super::schema::{
    self, Attribute, ENTERPRISE_ATTRIBUTES, ENTERPRISE_SCHEMA, Mutability, USER_ATTRIBUTES,
    USER_SCHEMA, check_multi_count,
};
use super::validate::{self, UserInput};
use super::{ScimError, field};
use crate::domain::Profile;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Replace,
    Remove,
}

/// Where an operation's path points.
struct Target {
    /// Inside the enterprise extension rather than the core attributes.
    extension: bool,
    /// `None` for `externalId`, which no schema lists (it is a common attribute).
    attribute: Option<&'static Attribute>,
    name: &'static str,
    filter: Option<Filter>,
    sub: Option<&'static Attribute>,
}

/// The document a PATCH edits: the stored profile as a User resource's attributes.
fn document(profile: &Profile) -> Map<String, Value> {
    let mut doc = profile.attributes.clone();
    doc.insert("userName".into(), Value::String(profile.user_name.clone()));
    if let Some(e) = &profile.external_id {
        doc.insert("externalId".into(), Value::String(e.clone()));
    }
    doc.insert("active".into(), Value::Bool(true));
    doc
}

/// Applies a PatchOp request body to `profile` and validates the result.
/// Errors: `InvalidSyntax` (not a PatchOp body, unknown op), `InvalidPath` (unknown attribute or
/// malformed path), `NoTarget` (remove without a path, replace of a missing value),
/// `Mutability` (a read-only attribute), and whatever validation of the result finds.
pub fn apply(profile: &Profile, body: &Value) -> Result<UserInput, ScimError> {
    let operations = operations(body)?;
    let mut doc = document(profile);
    for op in operations {
        apply_one(&mut doc, op)?;
    }
    validate::user_from_json(&Value::Object(doc))
}

fn operations(body: &Value) -> Result<&[Value], ScimError> {
    let syntax = |m: &str| ScimError::InvalidSyntax(m.to_owned());
    let Value::Object(body) = body else {
        return Err(syntax("the body must be a JSON object"));
    };
    if let Some(schemas) = field(body, "schemas") {
        let names_patch_op = schemas.as_array().is_some_and(|s| {
            s.iter()
                .any(|u| u.as_str() == Some(schema::PATCH_OP_SCHEMA))
        });
        if !names_patch_op {
            return Err(syntax("schemas must name the PatchOp message schema"));
        }
    }
    match field(body, "Operations") {
        Some(Value::Array(ops)) if !ops.is_empty() => Ok(ops),
        _ => Err(syntax("Operations must be a non-empty array")),
    }
}

fn apply_one(doc: &mut Map<String, Value>, op: &Value) -> Result<(), ScimError> {
    let Value::Object(op) = op else {
        return Err(ScimError::InvalidSyntax(
            "each operation must be an object".into(),
        ));
    };
    let kind = match field(op, "op").and_then(Value::as_str) {
        Some(o) if o.eq_ignore_ascii_case("add") => Op::Add,
        Some(o) if o.eq_ignore_ascii_case("replace") => Op::Replace,
        Some(o) if o.eq_ignore_ascii_case("remove") => Op::Remove,
        _ => {
            return Err(ScimError::InvalidSyntax(
                "op must be add, replace or remove".into(),
            ));
        }
    };
    let value = field(op, "value").cloned();
    match field(op, "path") {
        None | Some(Value::Null) => match (kind, value) {
            (Op::Remove, _) => Err(ScimError::NoTarget("remove needs a path".into())),
            (_, Some(Value::Object(values))) => {
                for (key, v) in values {
                    if key.eq_ignore_ascii_case(ENTERPRISE_SCHEMA) && v.is_object() {
                        for (sub, v) in v.as_object().into_iter().flatten() {
                            let path = format!("{ENTERPRISE_SCHEMA}:{sub}");
                            edit(doc, kind, &target(&path)?, Some(v.clone()))?;
                        }
                    } else if !key.eq_ignore_ascii_case("schemas") {
                        edit(doc, kind, &target(&key)?, Some(v))?;
                    }
                }
                Ok(())
            }
            _ => Err(ScimError::InvalidValue(
                "an operation without a path needs an object value".into(),
            )),
        },
        Some(Value::String(path)) => edit(doc, kind, &target(path)?, value),
        Some(_) => Err(ScimError::InvalidPath("path must be a string".into())),
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    s.get(..prefix.len())
        .filter(|p| p.eq_ignore_ascii_case(prefix))
        .map(|_| &s[prefix.len()..])
}

/// Parses a path: `[schema URN ":"] attribute ["[" filter "]"] ["." sub-attribute]`.
fn target(path: &str) -> Result<Target, ScimError> {
    let bad = |m: &str| ScimError::InvalidPath(m.to_owned());
    if path.eq_ignore_ascii_case(ENTERPRISE_SCHEMA) {
        return Ok(Target {
            extension: false,
            attribute: Some(&schema::ENTERPRISE_EXTENSION),
            name: ENTERPRISE_SCHEMA,
            filter: None,
            sub: None,
        });
    }
    let (extension, rest) = if let Some(r) = strip_prefix_ci(path, &format!("{ENTERPRISE_SCHEMA}:"))
    {
        (true, r)
    } else if let Some(r) = strip_prefix_ci(path, &format!("{USER_SCHEMA}:")) {
        (false, r)
    } else {
        (false, path)
    };
    let (head, filter_text, sub_name) = match rest.find('[') {
        Some(open) => {
            let close = rest
                .rfind(']')
                .filter(|&c| c > open)
                .ok_or_else(|| bad("a value filter must end with ]"))?;
            let after = &rest[close + 1..];
            let sub = match after {
                "" => None,
                s => Some(
                    s.strip_prefix('.')
                        .ok_or_else(|| bad("only .subAttribute may follow a value filter"))?,
                ),
            };
            (&rest[..open], Some(&rest[open + 1..close]), sub)
        }
        None => match rest.split_once('.') {
            Some((head, sub)) => (head, None, Some(sub)),
            None => (rest, None, None),
        },
    };
    if !extension && head.eq_ignore_ascii_case("externalId") && filter_text.is_none() {
        return match sub_name {
            None => Ok(Target {
                extension,
                attribute: None,
                name: "externalId",
                filter: None,
                sub: None,
            }),
            Some(_) => Err(bad("externalId has no sub-attributes")),
        };
    }
    if ["id", "meta", "schemas"]
        .iter()
        .any(|n| head.eq_ignore_ascii_case(n))
    {
        return Err(ScimError::Mutability(format!("{head} cannot be changed")));
    }
    let attrs = if extension {
        ENTERPRISE_ATTRIBUTES
    } else {
        USER_ATTRIBUTES
    };
    let attribute = schema::find(attrs, head).ok_or_else(|| {
        let shown: String = head.chars().take(64).collect();
        bad(&format!("no attribute '{shown}'"))
    })?;
    if attribute.mutability == Mutability::ReadOnly {
        return Err(ScimError::Mutability(format!(
            "{} is read-only",
            attribute.name
        )));
    }
    let sub = match sub_name {
        None => None,
        Some(s) => Some(
            schema::find(attribute.sub, s)
                .ok_or_else(|| bad(&format!("{} has no such sub-attribute", attribute.name)))?,
        ),
    };
    let filter = match filter_text {
        None => None,
        Some(f) if attribute.multi => {
            let allowed: Vec<Filterable> = attribute
                .sub
                .iter()
                .map(|a| Filterable {
                    path: a.name,
                    case_exact: a.case_exact,
                })
                .collect();
            Some(filter::parse(f, &allowed).map_err(|e| bad(&e.to_string()))?)
        }
        Some(_) => return Err(bad("only multi-valued attributes take a value filter")),
    };
    if sub.is_some() && filter.is_none() && attribute.multi {
        return Err(bad(
            "a sub-attribute of a multi-valued attribute needs a value filter",
        ));
    }
    Ok(Target {
        extension,
        attribute: Some(attribute),
        name: attribute.name,
        filter,
        sub,
    })
}

/// Whether a multi-valued element passes a value filter; booleans compare as `true`/`false`.
fn element_matches(filter: &Filter, element: &Value) -> bool {
    filter.accepts(|path| {
        element
            .as_object()
            .and_then(|o| field(o, path))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .into_iter()
            .collect()
    })
}

fn edit(
    doc: &mut Map<String, Value>, op: Op, t: &Target, value: Option<Value>,
) -> Result<(), ScimError> {
    let container = if t.extension {
        let ext = doc
            .entry(ENTERPRISE_SCHEMA.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !ext.is_object() {
            *ext = Value::Object(Map::new());
        }
        ext.as_object_mut().expect("made an object above")
    } else {
        doc
    };
    // Stored names are canonical; a client's spelling of the same name is replaced.
    let existing_key = container
        .keys()
        .find(|k| k.eq_ignore_ascii_case(t.name))
        .cloned();
    if let Some(k) = existing_key.filter(|k| k != t.name)
        && let Some(v) = container.remove(&k)
    {
        container.insert(t.name.to_owned(), v);
    }
    let multi = t.attribute.is_some_and(|a| a.multi);
    if op == Op::Remove {
        return remove(container, t, value.as_ref());
    }
    let value = value
        .filter(|v| !v.is_null())
        .ok_or_else(|| ScimError::InvalidValue(format!("{} needs a value", t.name)))?;
    match (&t.filter, t.sub) {
        (None, None) if multi => {
            let new: Vec<Value> = match value {
                Value::Array(items) => items,
                single => vec![single],
            };
            // Bounded before any comparison: the duplicate check below then compares at most
            // MULTI_VALUE_MAX values with at most twice as many. (Removing values needs no
            // bound on the stored ones: it compares each with at most MULTI_VALUE_MAX given.)
            check_multi_count(t.name, new.len())?;
            let slot = container
                .entry(t.name.to_owned())
                .or_insert_with(|| Value::Array(vec![]));
            match (op, slot) {
                (Op::Add, Value::Array(items)) => {
                    check_multi_count(t.name, items.len())?;
                    for v in new {
                        if !items.contains(&v) {
                            items.push(v);
                        }
                    }
                    check_multi_count(t.name, items.len())?;
                }
                (_, slot) => *slot = Value::Array(new),
            }
        }
        (None, None) => match (container.get_mut(t.name), value) {
            (Some(Value::Object(current)), Value::Object(new)) => merge(current, new),
            (_, value) => {
                container.insert(t.name.to_owned(), value);
            }
        },
        (None, Some(sub)) => {
            let slot = container
                .entry(t.name.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            slot.as_object_mut()
                .expect("made an object above")
                .insert(sub.name.to_owned(), value);
        }
        (Some(filter), sub) => {
            let slot = container
                .entry(t.name.to_owned())
                .or_insert_with(|| Value::Array(vec![]));
            if !slot.is_array() {
                *slot = Value::Array(vec![]);
            }
            let items = slot.as_array_mut().expect("made an array above");
            let mut matched = false;
            for item in items.iter_mut().filter(|i| element_matches(filter, i)) {
                matched = true;
                set_in_element(item, sub, value.clone())?;
            }
            if !matched {
                if op == Op::Replace && sub.is_none() {
                    return Err(ScimError::NoTarget(format!(
                        "no value of {} matches the filter",
                        t.name
                    )));
                }
                // Entra ID sets `emails[type eq "work"].value` on users that have no work
                // address yet: the filter's equalities describe the element to create.
                let mut element = Map::new();
                for clause in &filter.clauses {
                    element.insert(
                        clause.attribute.path.to_owned(),
                        Value::String(clause.value.clone()),
                    );
                }
                let mut element = Value::Object(element);
                set_in_element(&mut element, sub, value)?;
                check_multi_count(t.name, items.len() + 1)?;
                items.push(element);
            }
        }
    }
    Ok(())
}

fn set_in_element(
    element: &mut Value, sub: Option<&Attribute>, value: Value,
) -> Result<(), ScimError> {
    let Value::Object(fields) = element else {
        return Err(ScimError::InvalidValue(
            "a filtered value must be an object".into(),
        ));
    };
    match (sub, value) {
        (Some(sub), value) => {
            fields.insert(sub.name.to_owned(), value);
        }
        (None, Value::Object(new)) => merge(fields, new),
        (None, _) => {
            return Err(ScimError::InvalidValue(
                "a filtered value is replaced by an object".into(),
            ));
        }
    }
    Ok(())
}

/// Sets each of `new`'s sub-attributes on `current`, leaving the others (RFC 7644 §3.5.2.3).
fn merge(current: &mut Map<String, Value>, new: Map<String, Value>) {
    for (k, v) in new {
        let existing = current.keys().find(|c| c.eq_ignore_ascii_case(&k)).cloned();
        if let Some(e) = existing {
            current.remove(&e);
        }
        current.insert(k, v);
    }
}

fn remove(
    container: &mut Map<String, Value>, t: &Target, value: Option<&Value>,
) -> Result<(), ScimError> {
    match (&t.filter, t.sub) {
        (None, None) => {
            // With a value, a multi-valued attribute loses just the values given.
            match (container.get_mut(t.name), value) {
                (Some(Value::Array(items)), Some(v)) if !v.is_null() => {
                    let gone: Vec<&Value> = match v {
                        Value::Array(vs) => vs.iter().collect(),
                        single => vec![single],
                    };
                    check_multi_count(t.name, gone.len())?;
                    items.retain(|i| {
                        !gone.iter().any(|g| {
                            *g == i
                                || (g.get("value").is_some() && g.get("value") == i.get("value"))
                        })
                    });
                }
                _ => {
                    container.remove(t.name);
                }
            }
        }
        (None, Some(sub)) => {
            if let Some(Value::Object(fields)) = container.get_mut(t.name) {
                fields.retain(|k, _| !k.eq_ignore_ascii_case(sub.name));
            }
        }
        (Some(filter), sub) => {
            if let Some(Value::Array(items)) = container.get_mut(t.name) {
                match sub {
                    None => items.retain(|i| !element_matches(filter, i)),
                    Some(sub) => {
                        for item in items.iter_mut().filter(|i| element_matches(filter, i)) {
                            if let Value::Object(fields) = item {
                                fields.retain(|k, _| !k.eq_ignore_ascii_case(sub.name));
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
