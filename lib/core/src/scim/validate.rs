//! The validation of incoming users against the schemas ([`super::schema`]): a POST or PUT
//! body, or the result of a PATCH, becomes the profile to store, or is refused with the SCIM
//! error RFC 7644 names.

use serde_json::{Map, Value, json};

use super::ScimError;
use super::schema::{
    Attribute, ENTERPRISE_ATTRIBUTES, ENTERPRISE_SCHEMA, Mutability, STRING_MAX_CHARS, Type,
    USER_ATTRIBUTES, USER_SCHEMA, check_multi_count, find,
};
use crate::domain::{Profile, USER_NAME_MAX_CHARS};

/// A user as a client sent it: the profile to store and the `active` flag.
#[derive(Debug, Clone, PartialEq)]
pub struct UserInput {
    pub profile: Profile,
    pub active: bool,
}

/// Validates a User resource from a POST or PUT body (or the result of a PATCH). Attribute names
/// are matched case-insensitively and stored under their canonical names; `null` means absent;
/// read-only attributes (`id`, `meta`, `groups`) are ignored as RFC 7644 §3.3 says; `password`
/// is discarded. Booleans may also be the strings `"true"`/`"false"` in any case, as Entra ID
/// sends them.
/// Errors: `InvalidSyntax` for a body that is not an object or has an unknown attribute or
/// schema; `InvalidValue` for a missing `userName` or a value of the wrong type or size.
pub fn user_from_json(body: &Value) -> Result<UserInput, ScimError> {
    let Value::Object(body) = body else {
        return Err(ScimError::InvalidSyntax(
            "the body must be a JSON object".into(),
        ));
    };
    let mut user_name = None;
    let mut external_id = None;
    let mut active = true;
    let mut attributes = Map::new();
    for (key, value) in body {
        if value.is_null() {
            continue;
        }
        if key.eq_ignore_ascii_case("schemas") {
            check_schemas(value)?;
        } else if key.eq_ignore_ascii_case("id") || key.eq_ignore_ascii_case("meta") {
            // Assigned by the service.
        } else if key.eq_ignore_ascii_case("externalId") {
            external_id = Some(identifier("externalId", value)?);
        } else if key.eq_ignore_ascii_case(ENTERPRISE_SCHEMA) {
            let extension = complex_value(ENTERPRISE_SCHEMA, ENTERPRISE_ATTRIBUTES, value)?;
            if !extension.is_empty() {
                attributes.insert(ENTERPRISE_SCHEMA.to_owned(), Value::Object(extension));
            }
        } else {
            let Some(a) = find(USER_ATTRIBUTES, key) else {
                return Err(unknown_attribute(key));
            };
            match a.name {
                "userName" => user_name = Some(identifier("userName", value)?),
                "active" => active = boolean("active", value)?,
                _ if a.mutability != Mutability::ReadWrite => {}
                _ => {
                    if let Some(v) = attribute_value(a, value)? {
                        attributes.insert(a.name.to_owned(), v);
                    }
                }
            }
        }
    }
    let user_name = user_name
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| ScimError::InvalidValue("userName is required".into()))?;
    if user_name.chars().count() > USER_NAME_MAX_CHARS {
        return Err(ScimError::InvalidValue(format!(
            "userName is longer than {USER_NAME_MAX_CHARS} characters"
        )));
    }
    Ok(UserInput {
        profile: Profile {
            user_name,
            external_id,
            attributes,
        },
        active,
    })
}

fn unknown_attribute(name: &str) -> ScimError {
    let shown: String = name.chars().take(64).collect();
    ScimError::InvalidSyntax(format!("unknown attribute '{shown}'"))
}

fn check_schemas(value: &Value) -> Result<(), ScimError> {
    let Value::Array(uris) = value else {
        return Err(ScimError::InvalidSyntax(
            "schemas must be an array of URIs".into(),
        ));
    };
    for uri in uris {
        match uri.as_str() {
            Some(u)
                if u.eq_ignore_ascii_case(USER_SCHEMA)
                    || u.eq_ignore_ascii_case(ENTERPRISE_SCHEMA) => {}
            Some(_) => {
                return Err(ScimError::InvalidSyntax(
                    "schemas names a schema this service does not serve".into(),
                ));
            }
            None => {
                return Err(ScimError::InvalidSyntax(
                    "schemas must be an array of URIs".into(),
                ));
            }
        }
    }
    Ok(())
}

/// A string that identifies: non-empty, no control characters, bounded.
fn identifier(name: &str, value: &Value) -> Result<String, ScimError> {
    let s = text(name, value)?;
    if s.chars().any(char::is_control) {
        return Err(ScimError::InvalidValue(format!(
            "{name} must not contain control characters"
        )));
    }
    Ok(s)
}

fn text(name: &str, value: &Value) -> Result<String, ScimError> {
    match value {
        Value::String(s) if s.chars().count() <= STRING_MAX_CHARS => Ok(s.clone()),
        Value::String(_) => Err(ScimError::InvalidValue(format!(
            "{name} is longer than {STRING_MAX_CHARS} characters"
        ))),
        _ => Err(ScimError::InvalidValue(format!("{name} must be a string"))),
    }
}

/// A boolean, or the strings `"true"` and `"false"` in any letter case.
pub fn boolean(name: &str, value: &Value) -> Result<bool, ScimError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(ScimError::InvalidValue(format!("{name} must be a boolean"))),
    }
}

/// The validated value of attribute `a`, or `None` when it holds nothing.
fn attribute_value(a: &Attribute, value: &Value) -> Result<Option<Value>, ScimError> {
    if value.is_null() {
        return Ok(None);
    }
    if a.multi {
        let items: &[Value] = match value {
            Value::Array(items) => items,
            single => std::slice::from_ref(single),
        };
        check_multi_count(a.name, items.len())?;
        let mut out = Vec::new();
        for item in items {
            if let Some(v) = single_value(a, item)? {
                out.push(v);
            }
        }
        if a.kind == Type::Complex {
            let primaries = out
                .iter()
                .filter(|v| v.get("primary") == Some(&Value::Bool(true)))
                .count();
            if primaries > 1 {
                return Err(ScimError::InvalidValue(format!(
                    "at most one of {} may be primary",
                    a.name
                )));
            }
        }
        return Ok((!out.is_empty()).then_some(Value::Array(out)));
    }
    if value.is_array() {
        return Err(ScimError::InvalidValue(format!(
            "{} takes a single value",
            a.name
        )));
    }
    single_value(a, value)
}

fn single_value(a: &Attribute, value: &Value) -> Result<Option<Value>, ScimError> {
    Ok(match a.kind {
        _ if value.is_null() => None,
        Type::String | Type::Reference => Some(Value::String(text(a.name, value)?)),
        Type::Boolean => Some(Value::Bool(boolean(a.name, value)?)),
        Type::Complex => {
            // A bare string for a complex attribute with a `value`, as Entra ID sends
            // `manager`, is that value.
            let wrapped;
            let value = match value {
                Value::String(_) if find(a.sub, "value").is_some() => {
                    wrapped = json!({ "value": value });
                    &wrapped
                }
                v => v,
            };
            let map = complex_value(a.name, a.sub, value)?;
            (!map.is_empty()).then_some(Value::Object(map))
        }
    })
}

fn complex_value(
    name: &str, sub: &[Attribute], value: &Value,
) -> Result<Map<String, Value>, ScimError> {
    let Value::Object(fields) = value else {
        return Err(ScimError::InvalidValue(format!(
            "{} must be an object",
            short(name)
        )));
    };
    let mut out = Map::new();
    for (key, v) in fields {
        // An extension object may repeat its own schema URN.
        if name == ENTERPRISE_SCHEMA && key.eq_ignore_ascii_case("schemas") {
            continue;
        }
        let Some(a) = find(sub, key) else {
            return Err(unknown_attribute(&format!("{}.{key}", short(name))));
        };
        if a.mutability != Mutability::ReadWrite {
            continue;
        }
        if let Some(v) = attribute_value(a, v)? {
            out.insert(a.name.to_owned(), v);
        }
    }
    Ok(out)
}

/// The last part of a URN-qualified name, for messages.
fn short(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_matched_in_any_case_and_stored_canonically() {
        let input = user_from_json(&json!({
            "schemas": [USER_SCHEMA],
            "USERNAME": "Ann@Example.org",
            "Name": { "GivenName": "Ann" },
            "emails": [{ "Value": "ann@example.org", "primary": "True" }],
            "active": "False",
        }))
        .unwrap();
        assert_eq!(input.profile.user_name, "Ann@Example.org");
        assert_eq!(
            input.profile.attributes["name"],
            json!({ "givenName": "Ann" })
        );
        assert_eq!(
            input.profile.attributes["emails"],
            json!([{ "value": "ann@example.org", "primary": true }])
        );
        assert!(!input.active);
    }

    #[test]
    fn unknown_attributes_and_schemas_are_refused() {
        for body in [
            json!({ "userName": "a", "shoeSize": 9 }),
            json!({ "userName": "a", "name": { "nick": "x" } }),
            json!({ "userName": "a", "schemas": ["urn:example:other"] }),
        ] {
            assert!(
                matches!(user_from_json(&body), Err(ScimError::InvalidSyntax(_))),
                "{body}"
            );
        }
    }

    #[test]
    fn read_only_and_write_only_attributes_are_not_kept() {
        let input = user_from_json(&json!({
            "userName": "a", "id": "x", "groups": [{ "value": "admin" }], "password": "secret",
        }))
        .unwrap();
        assert!(input.profile.attributes.is_empty());
    }

    #[test]
    fn the_extension_object_may_name_its_schema() {
        let input = user_from_json(&json!({
            "userName": "a",
            ENTERPRISE_SCHEMA: { "schemas": [ENTERPRISE_SCHEMA], "division": "EU" },
        }))
        .unwrap();
        assert_eq!(
            input.profile.attributes[ENTERPRISE_SCHEMA],
            json!({ "division": "EU" })
        );
    }

    #[test]
    fn a_bare_manager_id_is_its_value() {
        let input = user_from_json(&json!({
            "userName": "a", ENTERPRISE_SCHEMA: { "manager": "usr_b" },
        }))
        .unwrap();
        assert_eq!(
            input.profile.attributes[ENTERPRISE_SCHEMA],
            json!({ "manager": { "value": "usr_b" } })
        );
    }

    #[test]
    fn bad_values_are_refused() {
        for body in [
            json!({}),
            json!({ "userName": "  " }),
            json!({ "userName": "a\r\nb" }),
            json!({ "userName": 7 }),
            json!({ "userName": "a", "active": "yes" }),
            json!({ "userName": "a", "emails": [{ "value": "x", "primary": true }, { "value": "y", "primary": true }] }),
            json!({ "userName": "x".repeat(USER_NAME_MAX_CHARS + 1) }),
        ] {
            assert!(
                matches!(user_from_json(&body), Err(ScimError::InvalidValue(_))),
                "{body}"
            );
        }
    }
}
