use serde_json::json;

use super::*;

const ADA: &str = "usr_ada";
const BOB: &str = "usr_bob";

fn ids(names: &[&str]) -> Vec<UserId> {
    names.iter().map(|n| UserId::parse(n).unwrap()).collect()
}

#[test]
fn a_group_body_keeps_its_name_external_id_and_members_once_each() {
    let input = group_from_json(&json!({
        "schemas": [GROUP_SCHEMA], "id": "ignored", "displayName": "Sales", "externalId": "e1",
        "members": [{ "value": ADA, "display": "ada" }, { "value": ADA }, { "value": BOB }],
    }))
    .unwrap();
    assert_eq!(input.display_name, "Sales");
    assert_eq!(input.external_id.as_deref(), Some("e1"));
    assert_eq!(input.members, ids(&[ADA, BOB]));
}

#[test]
fn a_group_body_without_a_name_or_with_an_unknown_attribute_is_refused() {
    for (body, syntax) in [
        (json!({ "members": [] }), false),
        (json!({ "displayName": " " }), false),
        (json!({ "displayName": "a\u{7}" }), false),
        (
            json!({ "displayName": "a", "members": [{ "display": "x" }] }),
            false,
        ),
        (json!({ "displayName": "a", "colour": "red" }), true),
        (
            json!({ "displayName": "a", "schemas": ["urn:example"] }),
            true,
        ),
    ] {
        match group_from_json(&body) {
            Err(ScimError::InvalidSyntax(_)) if syntax => {}
            Err(ScimError::InvalidValue(_)) if !syntax => {}
            other => panic!("{body}: {other:?}"),
        }
    }
}

#[test]
fn entra_and_okta_patches_read_as_edits() {
    let body = json!({ "schemas": [PATCH_OP_SCHEMA], "Operations": [
        { "op": "Add", "path": "members", "value": [{ "value": ADA }] },
        { "op": "Remove", "path": "members", "value": [{ "value": BOB }] },
        { "op": "remove", "path": "members[value eq \"usr_ada\"]" },
        { "op": "replace", "value": { "id": "grp_x", "displayName": "Renamed" } },
        { "op": "Replace", "path": "externalId", "value": "e2" },
        { "op": "replace", "path": "members", "value": [] },
        { "op": "remove", "path": "members" },
    ]});
    assert_eq!(
        group_edits(&body).unwrap(),
        [
            GroupEdit::Add(ids(&[ADA])),
            GroupEdit::Remove(ids(&[BOB])),
            GroupEdit::Remove(ids(&[ADA])),
            GroupEdit::Rename("Renamed".into()),
            GroupEdit::ExternalId(Some("e2".into())),
            GroupEdit::Replace(Vec::new()),
            GroupEdit::RemoveAll,
        ]
    );
}

#[test]
fn patches_groups_cannot_take_are_refused_with_their_scim_type() {
    let op = |o: serde_json::Value| json!({ "Operations": [o] });
    for (body, scim_type) in [
        (json!({ "Operations": [] }), "invalidSyntax"),
        (
            op(json!({ "op": "move", "path": "members" })),
            "invalidSyntax",
        ),
        (
            op(json!({ "op": "add", "path": "owner", "value": "x" })),
            "invalidPath",
        ),
        (
            op(json!({ "op": "add", "path": "members[value eq \"usr_a\"]", "value": [] })),
            "invalidPath",
        ),
        (
            op(json!({ "op": "remove", "path": "members[display co \"a\"]" })),
            "invalidPath",
        ),
        (
            op(json!({ "op": "remove", "path": "displayName" })),
            "mutability",
        ),
        (op(json!({ "op": "remove" })), "noTarget"),
        (
            op(json!({ "op": "add", "path": "members", "value": [{ "value": "not an id" }] })),
            "invalidValue",
        ),
    ] {
        let refused = group_edits(&body).unwrap_err();
        assert_eq!(refused.scim_type(), Some(scim_type), "{body}");
    }
}
