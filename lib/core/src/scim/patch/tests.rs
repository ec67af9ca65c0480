//! The PATCH operations' tests: paths with filters, extensions, removals, the bound on values
//! and the refusals with their `scimType`.

use super::*;
use serde_json::json;

fn profile() -> Profile {
    validate::user_from_json(&json!({
        "userName": "ann@x.org",
        "externalId": "ext-1",
        "name": { "givenName": "Ann", "familyName": "Lee" },
        "emails": [{ "value": "ann@x.org", "type": "work", "primary": true }],
    }))
    .unwrap()
    .profile
}

fn patch(ops: Value) -> Result<UserInput, ScimError> {
    apply(
        &profile(),
        &json!({ "schemas": [schema::PATCH_OP_SCHEMA], "Operations": ops }),
    )
}

#[test]
fn entra_style_operations_apply() {
    let out = patch(json!([
        { "op": "Replace", "path": "name.givenName", "value": "Anna" },
        { "op": "Replace", "path": "emails[type eq \"work\"].value", "value": "anna@x.org" },
        { "op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "Sales" },
        { "op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager", "value": "usr_boss" },
        { "op": "Replace", "path": "active", "value": "False" },
    ]))
    .unwrap();
    let a = &out.profile.attributes;
    assert_eq!(a["name"]["givenName"], "Anna");
    assert_eq!(a["name"]["familyName"], "Lee");
    assert_eq!(a["emails"][0]["value"], "anna@x.org");
    assert_eq!(a["emails"][0]["primary"], true);
    assert_eq!(
        a[ENTERPRISE_SCHEMA],
        json!({ "department": "Sales", "manager": { "value": "usr_boss" } })
    );
    assert!(!out.active);
}

#[test]
fn a_value_object_without_path_may_use_dotted_keys() {
    let out = patch(json!([{ "op": "replace", "value": {
        "name.familyName": "Li", "displayName": "Ann Li", "externalId": "ext-2", "active": true,
    } }]))
    .unwrap();
    assert_eq!(out.profile.attributes["name"]["familyName"], "Li");
    assert_eq!(out.profile.attributes["name"]["givenName"], "Ann");
    assert_eq!(out.profile.attributes["displayName"], "Ann Li");
    assert_eq!(out.profile.external_id.as_deref(), Some("ext-2"));
    assert!(out.active);
}

#[test]
fn a_filter_matching_nothing_creates_the_element_on_add_and_replace_of_a_sub_attribute() {
    let out = patch(json!([
        { "op": "add", "path": "phoneNumbers[type eq \"mobile\"].value", "value": "+1 555" },
    ]))
    .unwrap();
    assert_eq!(
        out.profile.attributes["phoneNumbers"],
        json!([{ "type": "mobile", "value": "+1 555" }])
    );
}

#[test]
fn the_extension_as_a_whole_is_a_path() {
    let out = patch(json!([
        { "op": "add", "path": ENTERPRISE_SCHEMA, "value": { "department": "Sales", "division": "EU" } },
        { "op": "replace", "path": ENTERPRISE_SCHEMA, "value": { "division": "US" } },
    ]))
    .unwrap();
    assert_eq!(
        out.profile.attributes[ENTERPRISE_SCHEMA],
        json!({ "department": "Sales", "division": "US" })
    );
    let out = apply(
        &out.profile,
        &json!({ "Operations": [{ "op": "remove", "path": ENTERPRISE_SCHEMA }] }),
    )
    .unwrap();
    assert!(!out.profile.attributes.contains_key(ENTERPRISE_SCHEMA));
}

#[test]
fn remove_takes_attributes_sub_attributes_and_filtered_values() {
    let out = patch(json!([
        { "op": "remove", "path": "name.familyName" },
        { "op": "remove", "path": "emails[type eq \"work\"]" },
        { "op": "remove", "path": "externalId" },
    ]))
    .unwrap();
    assert_eq!(
        out.profile.attributes["name"],
        json!({ "givenName": "Ann" })
    );
    assert!(!out.profile.attributes.contains_key("emails"));
    assert_eq!(out.profile.external_id, None);
}

fn emails(n: usize) -> Value {
    (0..n)
        .map(|i| json!({"value": format!("u{i}@example.org"), "type": "work"}))
        .collect()
}

#[test]
fn adding_more_values_than_a_multi_valued_attribute_holds_is_refused() {
    // Sixteen thousand addresses once stalled the server checking each against the others.
    for n in [schema::MULTI_VALUE_MAX + 1, 16_000] {
        let refused = patch(json!([{"op": "add", "path": "emails", "value": emails(n)}]));
        assert!(
            matches!(refused, Err(ScimError::InvalidValue(ref m)) if m.contains("at most 100")),
            "{n}: {refused:?}"
        );
    }
    let replaced = patch(json!([{"op": "replace", "path": "emails", "value": emails(101)}]));
    assert!(matches!(replaced, Err(ScimError::InvalidValue(_))));
    let removed = patch(json!([{"op": "remove", "path": "emails", "value": emails(101)}]));
    assert!(matches!(removed, Err(ScimError::InvalidValue(_))));
}

#[test]
fn values_up_to_the_maximum_are_added_once_each() {
    let mut twice = emails(50).as_array().unwrap().clone();
    twice.extend(emails(50).as_array().unwrap().iter().cloned());
    let out = patch(json!([{"op": "add", "path": "emails", "value": twice}])).unwrap();
    // The profile has one address already, which the new ones do not repeat.
    assert_eq!(
        out.profile.attributes["emails"].as_array().unwrap().len(),
        51
    );
    let full = patch(json!([{"op": "add", "path": "emails", "value": emails(99)}])).unwrap();
    assert_eq!(
        full.profile.attributes["emails"].as_array().unwrap().len(),
        100
    );
    let over = patch(json!([
        {"op": "add", "path": "emails", "value": emails(99)},
        {"op": "add", "path": "emails", "value": [{"value": "one-more@example.org"}]}
    ]));
    assert!(matches!(over, Err(ScimError::InvalidValue(_))), "{over:?}");
}

#[test]
fn filtered_adds_stop_creating_values_at_the_maximum() {
    let ops: Vec<Value> = (0..=schema::MULTI_VALUE_MAX)
        .map(|i| json!({"op": "add", "path": format!("phoneNumbers[type eq \"t{i}\"].value"), "value": "1"}))
        .collect();
    let refused = patch(Value::Array(ops));
    assert!(
        matches!(refused, Err(ScimError::InvalidValue(_))),
        "{refused:?}"
    );
}

#[test]
fn bad_operations_are_refused_with_their_scim_type() {
    let cases = [
        (
            json!([{ "op": "move", "path": "title", "value": "x" }]),
            "invalidSyntax",
        ),
        (json!([{ "op": "remove" }]), "noTarget"),
        (
            json!([{ "op": "add", "path": "shoeSize", "value": 9 }]),
            "invalidPath",
        ),
        (
            json!([{ "op": "replace", "path": "id", "value": "x" }]),
            "mutability",
        ),
        (
            json!([{ "op": "replace", "path": "groups", "value": [] }]),
            "mutability",
        ),
        (
            json!([{ "op": "remove", "path": "userName" }]),
            "invalidValue",
        ),
        (
            json!([{ "op": "replace", "path": "active", "value": "maybe" }]),
            "invalidValue",
        ),
        (json!([]), "invalidSyntax"),
    ];
    for (ops, scim_type) in cases {
        let err = patch(ops.clone()).unwrap_err();
        assert_eq!(err.scim_type(), Some(scim_type), "{ops}");
    }
}
