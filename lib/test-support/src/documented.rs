//! Every answer the HTTP tests get is one the OpenAPI document lists: their transports (in
//! process and over a socket) check each status against the documented responses of the
//! operation it reached, so an error a handler can answer and the document leaves out fails
//! whichever test meets it. The document is the committed `docs/openapi.json`, which a test
//! keeps equal to what the code builds.

use std::sync::OnceLock;

use serde_json::Value;

/// The committed document.
fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        let text = std::fs::read_to_string(&path).expect("docs/openapi.json is readable");
        serde_json::from_str(&text).expect("docs/openapi.json is JSON")
    })
}

/// Whether the path template `template` (`/api/admin/members/{id}`) matches `path`.
pub fn matches(template: &str, path: &str) -> bool {
    let (mut t, mut p) = (template.split('/'), path.split('/'));
    loop {
        match (t.next(), p.next()) {
            (None, None) => return true,
            (Some(t), Some(p)) if t.starts_with('{') && t.ends_with('}') => {
                if p.is_empty() {
                    return false;
                }
            }
            (Some(t), Some(p)) if t == p => {}
            _ => return false,
        }
    }
}

/// The documented operation `method` `path` reaches, with its path template; `None` when the
/// document has none (an unknown route, a method the route does not take, the app's files).
fn operation<'a>(method: &str, path: &str) -> Option<(&'a str, &'a Value)> {
    let paths = document()["paths"].as_object().expect("paths");
    let method = method.to_ascii_lowercase();
    // A literal path before a template that also matches it (`/members/me`, `/members/{id}`).
    let found = paths
        .get_key_value(path)
        .or_else(|| paths.iter().find(|(template, _)| matches(template, path)))?;
    Some((found.0.as_str(), found.1.get(&method)?))
}

/// Panics when `method` `path` answered `status` and the operation it reached does not list
/// that status among its responses.
pub fn check(method: &str, path: &str, status: u16) {
    let Some((template, operation)) = operation(method, path) else {
        return;
    };
    let responses = operation["responses"].as_object().expect("responses");
    let listed = responses.contains_key(&status.to_string()) || responses.contains_key("default");
    assert!(
        listed,
        "{method} {template} answered {status}, which its documented responses ({}) do not \
         list: add it to the route's responses",
        responses.keys().cloned().collect::<Vec<_>>().join(", ")
    );
}
