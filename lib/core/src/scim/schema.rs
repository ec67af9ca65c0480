//! The SCIM schemas this service serves (the core User of RFC 7643 §4.1 with the enterprise
//! extension of §4.3, and Group) as data, and the validation of incoming users against them.
//! `/Schemas` is rendered from the same data, so what is published is what is enforced.

use serde_json::{Map, Value, json};

use super::ScimError;
use crate::domain::{Profile, USER_NAME_MAX_CHARS};

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const ENTERPRISE_SCHEMA: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const PATCH_OP_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const LIST_RESPONSE_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// Longest string value accepted in any attribute, in characters.
pub const STRING_MAX_CHARS: usize = 2048;

/// Most values a multi-valued attribute (`emails`, `phoneNumbers`, `addresses`, ...) holds; a
/// request that would give it more is refused with 400 `invalidValue`. Identity providers send
/// a handful; the bound keeps the work of one request small, whatever its size.
pub const MULTI_VALUE_MAX: usize = 100;

/// Refuses `count` values for the multi-valued attribute `name` past [`MULTI_VALUE_MAX`].
pub fn check_multi_count(name: &str, count: usize) -> Result<(), ScimError> {
    if count > MULTI_VALUE_MAX {
        return Err(ScimError::InvalidValue(format!(
            "{name} holds at most {MULTI_VALUE_MAX} values"
        )));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    Boolean,
    Complex,
    Reference,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutability {
    ReadOnly,
    ReadWrite,
    WriteOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returned {
    Always,
    Default,
    Never,
}

/// One attribute of a schema, with the characteristics RFC 7643 §2 and §7 define.
#[derive(Debug, Clone, Copy)]
pub struct Attribute {
    pub name: &'static str,
    pub kind: Type,
    pub multi: bool,
    pub required: bool,
    pub case_exact: bool,
    pub mutability: Mutability,
    pub returned: Returned,
    /// `uniqueness: server` when true, `none` otherwise.
    pub unique: bool,
    pub description: &'static str,
    pub canonical: &'static [&'static str],
    pub reference_types: &'static [&'static str],
    pub sub: &'static [Attribute],
}

const fn attr(name: &'static str, kind: Type, description: &'static str) -> Attribute {
    Attribute {
        name,
        kind,
        multi: false,
        required: false,
        case_exact: false,
        mutability: Mutability::ReadWrite,
        returned: Returned::Default,
        unique: false,
        description,
        canonical: &[],
        reference_types: &[],
        sub: &[],
    }
}

const fn string(name: &'static str, description: &'static str) -> Attribute {
    attr(name, Type::String, description)
}

const fn complex(
    name: &'static str, description: &'static str, sub: &'static [Attribute],
) -> Attribute {
    let mut a = attr(name, Type::Complex, description);
    a.sub = sub;
    a
}

const fn multi(mut a: Attribute) -> Attribute {
    a.multi = true;
    a
}

const fn read_only(mut a: Attribute) -> Attribute {
    a.mutability = Mutability::ReadOnly;
    a
}

const fn canonical(mut a: Attribute, values: &'static [&'static str]) -> Attribute {
    a.canonical = values;
    a
}

const fn reference(
    name: &'static str, description: &'static str, types: &'static [&'static str],
) -> Attribute {
    let mut a = attr(name, Type::Reference, description);
    a.reference_types = types;
    a
}

const KINDS: &[&str] = &["work", "home", "other"];

const PRIMARY: Attribute = attr(
    "primary",
    Type::Boolean,
    "Whether this is the preferred value; at most one value is primary.",
);

const USER_NAME: Attribute = {
    let mut a = string(
        "userName",
        "Unique identifier of the user in the organisation, usually the e-mail address; compared case-insensitively.",
    );
    a.required = true;
    a.unique = true;
    a
};

const ACTIVE: Attribute = attr(
    "active",
    Type::Boolean,
    "Always true: setting it to false removes the member from the organisation.",
);

const PASSWORD: Attribute = {
    let mut a = string(
        "password",
        "Accepted and discarded: members sign in through the organisation's SSO.",
    );
    a.mutability = Mutability::WriteOnly;
    a.returned = Returned::Never;
    a
};

/// The core User schema's attributes this service keeps.
pub const USER_ATTRIBUTES: &[Attribute] = &[
    USER_NAME,
    complex(
        "name",
        "The components of the user's name.",
        &[
            string("formatted", "The full name, formatted for display."),
            string("familyName", "The family name."),
            string("givenName", "The given name."),
            string("middleName", "The middle name."),
            string("honorificPrefix", "The honorific prefix, such as Ms."),
            string("honorificSuffix", "The honorific suffix, such as III."),
        ],
    ),
    string("displayName", "The name shown for the user."),
    string("nickName", "The casual name of the user."),
    reference(
        "profileUrl",
        "A URL of the user's online profile.",
        &["external"],
    ),
    string("title", "The user's title, such as Vice President."),
    string("userType", "The relation of the user to the organisation."),
    string(
        "preferredLanguage",
        "The user's preferred language, such as en-US.",
    ),
    string("locale", "The user's default location, such as en-US."),
    string("timezone", "The user's time zone, such as Europe/Paris."),
    ACTIVE,
    PASSWORD,
    multi(complex(
        "emails",
        "E-mail addresses of the user.",
        &[
            string("value", "The e-mail address."),
            string("display", "A label for display."),
            canonical(string("type", "The kind of address."), KINDS),
            PRIMARY,
        ],
    )),
    multi(complex(
        "phoneNumbers",
        "Phone numbers of the user.",
        &[
            string("value", "The phone number."),
            string("display", "A label for display."),
            canonical(
                string("type", "The kind of number."),
                &["work", "home", "mobile", "fax", "pager", "other"],
            ),
            PRIMARY,
        ],
    )),
    multi(complex(
        "addresses",
        "Physical mailing addresses of the user.",
        &[
            string("formatted", "The full address, formatted for display."),
            string("streetAddress", "The street address."),
            string("locality", "The city or locality."),
            string("region", "The state or region."),
            string("postalCode", "The postal code."),
            string("country", "The country, as an ISO 3166-1 alpha-2 code."),
            canonical(string("type", "The kind of address."), KINDS),
            PRIMARY,
        ],
    )),
    multi(complex(
        "roles",
        "Roles of the user as the identity provider names them; kept, not interpreted (the service's own role is the user's group).",
        &[
            string("value", "The role."),
            string("display", "A label for display."),
            string("type", "The kind of role."),
            PRIMARY,
        ],
    )),
    read_only(multi(complex(
        "groups",
        "The groups of the user: the role they hold in the organisation.",
        &[
            read_only(string("value", "The id of the group.")),
            read_only(reference("$ref", "The URI of the group.", &["Group"])),
            read_only(string("display", "The name of the group.")),
            read_only(canonical(
                string("type", "How the user is in the group."),
                &["direct"],
            )),
        ],
    ))),
];

/// The enterprise extension's attributes.
pub const ENTERPRISE_ATTRIBUTES: &[Attribute] = &[
    string("employeeNumber", "The employee number."),
    string("costCenter", "The cost center."),
    string("organization", "The organisation."),
    string("division", "The division."),
    string("department", "The department."),
    complex(
        "manager",
        "The user's manager.",
        &[
            string("value", "The id of the manager."),
            reference("$ref", "The URI of the manager.", &["User"]),
            read_only(string("displayName", "The manager's display name.")),
        ],
    ),
];

/// The enterprise extension as one complex attribute of a user, as a PATCH path may name it.
pub const ENTERPRISE_EXTENSION: Attribute = complex(
    ENTERPRISE_SCHEMA,
    "The enterprise extension.",
    ENTERPRISE_ATTRIBUTES,
);

/// The Group schema's attributes; groups are read-only here.
pub const GROUP_ATTRIBUTES: &[Attribute] = &[
    read_only(string("displayName", "The name of the group: a role.")),
    read_only(multi(complex(
        "members",
        "The members holding the role.",
        &[
            read_only(string("value", "The id of the member.")),
            read_only(reference("$ref", "The URI of the member.", &["User"])),
            read_only(string("display", "The member's userName.")),
            read_only(canonical(string("type", "The kind of member."), &["User"])),
        ],
    ))),
];

/// Finds an attribute by name, case-insensitively (RFC 7643 §2.1).
pub fn find<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|a| a.name.eq_ignore_ascii_case(name))
}

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

fn attribute_json(a: &Attribute) -> Value {
    let mut v = json!({
        "name": a.name,
        "type": match a.kind {
            Type::String => "string",
            Type::Boolean => "boolean",
            Type::Complex => "complex",
            Type::Reference => "reference",
        },
        "multiValued": a.multi,
        "description": a.description,
        "required": a.required,
        "mutability": match a.mutability {
            Mutability::ReadOnly => "readOnly",
            Mutability::ReadWrite => "readWrite",
            Mutability::WriteOnly => "writeOnly",
        },
        "returned": match a.returned {
            Returned::Always => "always",
            Returned::Default => "default",
            Returned::Never => "never",
        },
        "uniqueness": if a.unique { "server" } else { "none" },
    });
    if matches!(a.kind, Type::String | Type::Reference) {
        v["caseExact"] = Value::Bool(a.case_exact);
    }
    if !a.canonical.is_empty() {
        v["canonicalValues"] = json!(a.canonical);
    }
    if !a.reference_types.is_empty() {
        v["referenceTypes"] = json!(a.reference_types);
    }
    if !a.sub.is_empty() {
        v["subAttributes"] = a.sub.iter().map(attribute_json).collect();
    }
    v
}

/// The `/Schemas` resources, rendered from the definitions above; `base` is the SCIM base URL.
pub fn schemas_json(base: &str) -> Vec<Value> {
    [
        (USER_SCHEMA, "User", "User Account", USER_ATTRIBUTES),
        (
            ENTERPRISE_SCHEMA,
            "EnterpriseUser",
            "Enterprise User",
            ENTERPRISE_ATTRIBUTES,
        ),
        (GROUP_SCHEMA, "Group", "Group: a role", GROUP_ATTRIBUTES),
    ]
    .into_iter()
    .map(|(id, name, description, attrs)| {
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
            "id": id,
            "name": name,
            "description": description,
            "attributes": attrs.iter().map(attribute_json).collect::<Vec<_>>(),
            "meta": { "resourceType": "Schema", "location": format!("{base}/Schemas/{id}") },
        })
    })
    .collect()
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
