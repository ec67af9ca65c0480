//! SCIM resources as JSON: users, groups, list responses, the discovery documents, and the
//! `attributes`/`excludedAttributes` projection (RFC 7644 §3.9).

use serde_json::{Map, Value, json};

use super::groups::ScimGroup;
use super::schema::{ENTERPRISE_SCHEMA, GROUP_SCHEMA, LIST_RESPONSE_SCHEMA, USER_SCHEMA};
use crate::clock::Timestamp;
use crate::domain::Member;

/// Resources a list returns when the client gives no `count`.
pub const DEFAULT_COUNT: usize = 100;
/// Resources a list returns at most, whatever `count` asks.
pub const MAX_COUNT: usize = 1000;

fn meta(
    kind: &str, location: String, created: Timestamp, modified: Timestamp, version: u64,
) -> Value {
    json!({
        "resourceType": kind,
        "created": created.to_iso8601(),
        "lastModified": modified.to_iso8601(),
        "location": location,
        "version": format!("W/\"{version}\""),
    })
}

/// A provisioned member as a SCIM User; `base` is the SCIM base URL the request came to. Every
/// member that exists is active, and its one group is its role.
pub fn user_json(m: &Member, base: &str) -> Value {
    let mut v = Map::new();
    let Some(p) = &m.profile else {
        return Value::Object(v);
    };
    let mut schemas = vec![USER_SCHEMA];
    if p.attributes.contains_key(ENTERPRISE_SCHEMA) {
        schemas.push(ENTERPRISE_SCHEMA);
    }
    v.insert("schemas".into(), json!(schemas));
    v.insert("id".into(), json!(m.user));
    if let Some(e) = &p.external_id {
        v.insert("externalId".into(), json!(e));
    }
    v.insert("userName".into(), json!(p.user_name));
    for (k, val) in &p.attributes {
        v.insert(k.clone(), val.clone());
    }
    if let Some(Value::Object(name)) = v.get_mut("name")
        && !name.contains_key("formatted")
    {
        let parts: Vec<&str> = [
            "honorificPrefix",
            "givenName",
            "middleName",
            "familyName",
            "honorificSuffix",
        ]
        .iter()
        .filter_map(|k| name.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .collect();
        if !parts.is_empty() {
            name.insert("formatted".into(), json!(parts.join(" ")));
        }
    }
    v.insert("active".into(), Value::Bool(true));
    v.insert(
        "groups".into(),
        json!([{
            "value": m.role.as_str(),
            "display": m.role.as_str(),
            "$ref": format!("{base}/Groups/{}", m.role),
            "type": "direct",
        }]),
    );
    v.insert(
        "meta".into(),
        meta(
            "User",
            format!("{base}/Users/{}", m.user),
            m.created_at,
            m.updated_at,
            m.version,
        ),
    );
    Value::Object(v)
}

/// The answer to a create: the user, with `name` holding only `formatted`, as the interface
/// shows the create response.
pub fn created_user_json(m: &Member, base: &str) -> Value {
    let mut v = user_json(m, base);
    if let Some(Value::Object(name)) = v.get_mut("name") {
        name.retain(|k, _| k == "formatted");
        if name.is_empty() {
            v.as_object_mut()
                .expect("a user is an object")
                .remove("name");
        }
    }
    v
}

/// A role or group as a SCIM Group, with `members` when they were read. A role's `meta`
/// dates are those of its newest member change; a group's are its own.
pub fn group_json(g: &ScimGroup, base: &str) -> Value {
    let members = match g {
        ScimGroup::Role { members, .. } | ScimGroup::Group { members, .. } => members.as_deref(),
    };
    let mut v = json!({
        "schemas": [GROUP_SCHEMA],
        "id": g.id(),
        "displayName": g.display_name(),
    });
    if let Some(members) = members {
        let listed: Vec<Value> = members
            .iter()
            .filter_map(|m| {
                let p = m.profile.as_ref()?;
                Some(json!({
                    "value": m.user,
                    "display": p.user_name,
                    "$ref": format!("{base}/Users/{}", m.user),
                    "type": "User",
                }))
            })
            .collect();
        v["members"] = Value::Array(listed);
    }
    let location = format!("{base}/Groups/{}", g.id());
    v["meta"] = match g {
        ScimGroup::Role { members, .. } => {
            let modified =
                (members.iter().flatten().map(|m| m.updated_at).max()).unwrap_or_default();
            json!({
                "resourceType": "Group",
                "location": location,
                "lastModified": modified.to_iso8601(),
            })
        }
        ScimGroup::Group { group, .. } => {
            if let Some(external) = &group.external_id {
                v["externalId"] = json!(external);
            }
            meta(
                "Group",
                location,
                group.created_at,
                group.updated_at,
                group.version,
            )
        }
    };
    v
}

/// Which slice of a list to return: RFC 7644 §3.4.2.4, `startIndex` 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub start_index: usize,
    pub count: usize,
}

impl Page {
    /// Every resource on one page, for the discovery lists.
    pub const ALL: Page = Page {
        start_index: 1,
        count: usize::MAX,
    };

    /// From the query's values: `startIndex` below 1 is 1, a negative `count` is 0, and `count`
    /// is capped at [`MAX_COUNT`]. Errors: a value that is not an integer.
    pub fn parse(start_index: Option<&str>, count: Option<&str>) -> Result<Self, super::ScimError> {
        let int = |name: &str, v: &str| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| super::ScimError::InvalidValue(format!("{name} must be an integer")))
        };
        let start_index = match start_index {
            Some(v) => int("startIndex", v)?.max(1) as usize,
            None => 1,
        };
        let count = match count {
            Some(v) => (int("count", v)?.max(0) as usize).min(MAX_COUNT),
            None => DEFAULT_COUNT,
        };
        Ok(Self { start_index, count })
    }

    /// The page of `all`, and a ListResponse of them rendered by `render`.
    pub fn list<T>(&self, all: &[T], render: impl Fn(&T) -> Value) -> Value {
        let resources: Vec<Value> = all
            .iter()
            .skip(self.start_index - 1)
            .take(self.count)
            .map(render)
            .collect();
        json!({
            "schemas": [LIST_RESPONSE_SCHEMA],
            "totalResults": all.len(),
            "itemsPerPage": resources.len(),
            "startIndex": self.start_index,
            "Resources": resources,
        })
    }
}

/// The attribute selection of a read: `attributes` keeps only those named (and `id`,
/// `schemas`, which are always returned), `excludedAttributes` drops those named. Names are
/// case-insensitive and may be `parent.sub` or schema-qualified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projection {
    pub attributes: Vec<String>,
    pub excluded: Vec<String>,
}

impl Projection {
    pub fn parse(attributes: Option<&str>, excluded: Option<&str>) -> Self {
        let split = |s: Option<&str>| -> Vec<String> {
            s.unwrap_or("")
                .split(',')
                .map(|a| unqualified(a.trim()).to_owned())
                .filter(|a| !a.is_empty())
                .collect()
        };
        Self {
            attributes: split(attributes),
            excluded: split(excluded),
        }
    }

    /// Whether the selection keeps the top-level attribute `name` (or a part of it), so that
    /// what it leaves out need not be read.
    pub fn wants(&self, name: &str) -> bool {
        let named = |list: &[String]| {
            list.iter()
                .any(|a| split_path(a).0.eq_ignore_ascii_case(name) && split_path(a).1.is_none())
        };
        let asked = self.attributes.is_empty()
            || self
                .attributes
                .iter()
                .any(|a| split_path(a).0.eq_ignore_ascii_case(name));
        asked && !named(&self.excluded)
    }

    /// Applies the selection to a rendered resource.
    pub fn apply(&self, resource: Value) -> Value {
        let Value::Object(mut fields) = resource else {
            return resource;
        };
        if !self.attributes.is_empty() {
            let mut kept = Map::new();
            for (k, v) in fields {
                if ["id", "schemas"].contains(&k.as_str()) {
                    kept.insert(k, v);
                    continue;
                }
                if let Some(v) = select(&k, v, &self.attributes) {
                    kept.insert(k, v);
                }
            }
            fields = kept;
        }
        for name in &self.excluded {
            let (head, sub) = split_path(name);
            if head.eq_ignore_ascii_case("id") || head.eq_ignore_ascii_case("schemas") {
                continue;
            }
            match sub {
                None => fields.retain(|k, _| !k.eq_ignore_ascii_case(head)),
                Some(sub) => {
                    if let Some((_, Value::Object(inner))) = fields
                        .iter_mut()
                        .find(|(k, _)| k.eq_ignore_ascii_case(head))
                    {
                        inner.retain(|k, _| !k.eq_ignore_ascii_case(sub));
                    }
                }
            }
        }
        Value::Object(fields)
    }
}

/// Drops the core User schema's URN prefix; the enterprise URN stays as the attribute name.
fn unqualified(name: &str) -> &str {
    for urn in [USER_SCHEMA, GROUP_SCHEMA] {
        if let Some(prefix) = name.get(..urn.len() + 1)
            && prefix.eq_ignore_ascii_case(&format!("{urn}:"))
        {
            return &name[urn.len() + 1..];
        }
    }
    name
}

/// `parent.sub` into its parts; an enterprise attribute `urn:...:User:department` is the
/// extension object's `department`.
fn split_path(name: &str) -> (&str, Option<&str>) {
    if let Some(prefix) = name.get(..ENTERPRISE_SCHEMA.len())
        && prefix.eq_ignore_ascii_case(ENTERPRISE_SCHEMA)
    {
        return match name[ENTERPRISE_SCHEMA.len()..].strip_prefix(':') {
            Some(sub) => (ENTERPRISE_SCHEMA, Some(sub)),
            None => (ENTERPRISE_SCHEMA, None),
        };
    }
    match name.split_once('.') {
        Some((head, sub)) => (head, Some(sub)),
        None => (name, None),
    }
}

/// What of attribute `key` with value `v` the requested names select.
fn select(key: &str, v: Value, names: &[String]) -> Option<Value> {
    let mut subs = Vec::new();
    for name in names {
        let (head, sub) = split_path(name);
        if head.eq_ignore_ascii_case(key) {
            match sub {
                None => return Some(v),
                Some(s) => subs.push(s),
            }
        }
    }
    if subs.is_empty() {
        return None;
    }
    let keep = |o: &Map<String, Value>| -> Map<String, Value> {
        o.iter()
            .filter(|(k, _)| subs.iter().any(|s| s.eq_ignore_ascii_case(k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    match v {
        Value::Object(o) => Some(Value::Object(keep(&o))),
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|i| i.as_object().map(|o| Value::Object(keep(o))))
                .collect(),
        )),
        _ => None,
    }
}

/// `/ServiceProviderConfig` (RFC 7643 §5).
pub fn service_provider_config(base: &str, docs_url: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "documentationUri": docs_url,
        "patch": { "supported": true },
        "bulk": { "supported": false, "maxOperations": 0, "maxPayloadSize": 0 },
        "filter": { "supported": true, "maxResults": MAX_COUNT },
        "changePassword": { "supported": false },
        "sort": { "supported": false },
        "etag": { "supported": false },
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "The organisation's SCIM token, generated by an administrator, in an Authorization: Bearer header.",
            "specUri": "https://www.rfc-editor.org/rfc/rfc6750",
            "documentationUri": docs_url,
            "primary": true,
        }],
        "meta": {
            "resourceType": "ServiceProviderConfig",
            "location": format!("{base}/ServiceProviderConfig"),
        },
    })
}

/// `/ResourceTypes` (RFC 7643 §6).
pub fn resource_types(base: &str) -> Vec<Value> {
    vec![
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "User",
            "name": "User",
            "endpoint": "/Users",
            "description": "A member of the organisation.",
            "schema": USER_SCHEMA,
            "schemaExtensions": [{ "schema": ENTERPRISE_SCHEMA, "required": false }],
            "meta": { "resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User") },
        }),
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "Group",
            "name": "Group",
            "endpoint": "/Groups",
            "description": "A role of the organisation; read-only.",
            "schema": GROUP_SCHEMA,
            "schemaExtensions": [],
            "meta": { "resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/Group") },
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_slice_from_a_one_based_start_and_report_the_total() {
        let all: Vec<u32> = (1..=5).collect();
        let page = Page::parse(Some("2"), Some("2")).unwrap();
        let v = page.list(&all, |n| json!(n));
        assert_eq!(v["Resources"], json!([2, 3]));
        assert_eq!(
            (v["totalResults"].as_u64(), v["itemsPerPage"].as_u64()),
            (Some(5), Some(2))
        );
        let v = Page::parse(Some("0"), Some("-3"))
            .unwrap()
            .list(&all, |n| json!(n));
        assert_eq!(
            (v["startIndex"].as_u64(), v["Resources"].clone()),
            (Some(1), json!([]))
        );
        let v = Page::parse(Some("9"), None)
            .unwrap()
            .list(&all, |n| json!(n));
        assert_eq!(v["Resources"], json!([]));
        assert!(Page::parse(Some("x"), None).is_err());
    }

    #[test]
    fn projection_keeps_always_returned_attributes() {
        let r = json!({ "id": "1", "schemas": [], "userName": "a", "name": { "givenName": "A", "familyName": "B" }, "title": "t" });
        let p = Projection::parse(
            Some("NAME.givenName,urn:ietf:params:scim:schemas:core:2.0:User:userName"),
            None,
        );
        assert_eq!(
            p.apply(r.clone()),
            json!({ "id": "1", "schemas": [], "userName": "a", "name": { "givenName": "A" } })
        );
        let p = Projection::parse(None, Some("title,name.familyName,id"));
        assert_eq!(
            p.apply(r),
            json!({ "id": "1", "schemas": [], "userName": "a", "name": { "givenName": "A" } })
        );
    }
}
