//! The OpenAPI document the code declares. It is committed as `docs/openapi.json`, derived
//! with the rest by `cargo xtask derive` (xtask/tests/derived.rs fails when it is stale).

use std::collections::BTreeSet;

use knowledge_assembly::functions::document_json;

#[test]
fn the_document_is_openapi_3_1_with_unique_operation_ids_and_every_path_parameter_declared() {
    let doc: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_default();
            assert!(
                ids.insert(id.to_owned()),
                "{method} {path}: operationId {id:?} repeated"
            );
            for name in path.split('{').skip(1).filter_map(|p| p.split('}').next()) {
                let declared = op["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|p| p["in"] == "path" && p["name"] == name);
                assert!(
                    declared,
                    "{method} {path}: path parameter {name} is not declared"
                );
            }
            assert!(
                op["responses"].as_object().is_some_and(|r| !r.is_empty()),
                "{method} {path}: no responses"
            );
        }
    }
    // The interface's operations are all there.
    for (method, path) in [
        ("post", "/api/managed-agents/session"),
        ("delete", "/api/managed-agents/session"),
        ("post", "/api/managed-agents/message"),
        ("get", "/api/managed-agents/transcript"),
        ("get", "/api/managed-agents/sessions"),
        ("post", "/api/managed-agents/cancel"),
        ("post", "/api/auth/switch-org"),
        ("get", "/api/scim/v2/Users"),
        ("patch", "/api/scim/v2/Users/{id}"),
        ("get", "/api/openapi.json"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} is missing"
        );
    }
}
