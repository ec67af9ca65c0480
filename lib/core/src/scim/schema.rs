//! The SCIM schemas this service serves (the core User of RFC 7643 §4.1 with the enterprise
//! extension of §4.3, and Group) as data. `/Schemas` is rendered from it and incoming users are
//! validated against it (`validate`), so what is published is what is enforced.

use serde_json::{Value, json};

use super::ScimError;

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
        "The role the user holds in the organisation, as a group; the groups they are in are read from /Groups.",
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

const GROUP_NAME: Attribute = {
    let mut a = string(
        "displayName",
        "The name of the group, unique in the organisation (compared case-insensitively); admin and viewer are the roles' names.",
    );
    a.required = true;
    a.unique = true;
    a
};

/// The Group schema's attributes. The roles are listed as groups too, and read-only.
pub const GROUP_ATTRIBUTES: &[Attribute] = &[
    GROUP_NAME,
    multi(complex(
        "members",
        "The group's members: provisioned users of the organisation.",
        &[
            string("value", "The id of the member."),
            read_only(reference("$ref", "The URI of the member.", &["User"])),
            read_only(string("display", "The member's userName.")),
            read_only(canonical(string("type", "The kind of member."), &["User"])),
        ],
    )),
];

/// Finds an attribute by name, case-insensitively (RFC 7643 §2.1).
pub fn find<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|a| a.name.eq_ignore_ascii_case(name))
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
        (GROUP_SCHEMA, "Group", "Group", GROUP_ATTRIBUTES),
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
