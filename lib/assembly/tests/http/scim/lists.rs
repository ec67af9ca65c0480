//! Lists of users: filters, pages, and a filter that is not supported.

use std::collections::BTreeSet;

use serde_json::json;

use super::okta::okta_create_body;
use super::{Scim, assert_scim_error};

#[tokio::test]
async fn lists_filter_by_user_name_external_id_email_and_id_joined_by_and() {
    let s = Scim::start().await;
    let r = s.post(okta_create_body("ann@x.org")).await;
    let ann = r.body["id"].as_str().unwrap().to_owned();
    s.provision("bob@x.org").await;
    let cases = [
        ("userName eq \"ANN@x.org\"", 1),
        ("USERNAME EQ \"ann@x.org\"", 1),
        ("externalId eq \"00ujl29u0le5T6Aj10h7\"", 1),
        ("externalId eq \"00UJL29U0LE5T6AJ10H7\"", 0),
        ("emails.value eq \"Ann@X.org\"", 1),
        (&format!("id eq \"{ann}\""), 1),
        (
            "userName eq \"ann@x.org\" and externalId eq \"00ujl29u0le5T6Aj10h7\"",
            1,
        ),
        (
            "userName eq \"bob@x.org\" and externalId eq \"00ujl29u0le5T6Aj10h7\"",
            0,
        ),
        ("userName eq \"*\"", 0),
    ];
    for (filter, expected) in cases {
        let q: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
        let r = s.get(&format!("/Users?filter={q}")).await;
        assert_eq!(r.status, 200, "{filter}: {}", r.body);
        assert_eq!(r.body["totalResults"], expected, "{filter}");
        if expected == 1 {
            assert_eq!(r.body["Resources"][0]["id"], ann.as_str(), "{filter}");
        }
    }
}

#[tokio::test]
async fn lists_page_with_start_index_and_count_in_a_stable_order() {
    let s = Scim::start().await;
    let mut ids = BTreeSet::new();
    for i in 0..7 {
        ids.insert(s.provision(&format!("user{i}@x.org")).await);
    }
    let mut seen = Vec::new();
    let mut start = 1;
    loop {
        let r = s.get(&format!("/Users?startIndex={start}&count=3")).await;
        assert_eq!(r.body["totalResults"], 7);
        assert_eq!(r.body["startIndex"], start);
        let page = r.body["Resources"].as_array().unwrap().clone();
        assert_eq!(r.body["itemsPerPage"], page.len());
        if page.is_empty() {
            break;
        }
        seen.extend(page.iter().map(|u| u["id"].as_str().unwrap().to_owned()));
        start += 3;
    }
    assert_eq!(seen.len(), 7);
    assert_eq!(seen.iter().cloned().collect::<BTreeSet<_>>(), ids);
    let again = s.get("/Users?startIndex=1&count=100").await;
    let order: Vec<&str> = again.body["Resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, seen, "the same order every time");
    let r = s.get("/Users?count=0").await;
    assert_eq!(
        (r.body["totalResults"].clone(), r.body["Resources"].clone()),
        (json!(7), json!([]))
    );
}

#[tokio::test]
async fn an_unsupported_filter_is_an_invalid_filter_error_not_a_full_list() {
    let s = Scim::start().await;
    s.provision("ann@x.org").await;
    for filter in [
        "userName co \"ann\"",
        "userName sw \"a\"",
        "title eq \"x\"",
        "userName eq \"a\" or userName eq \"b\"",
        "userName pr",
        "emails[type eq \"work\"].value eq \"a\"",
        "userName eq \"unterminated",
    ] {
        let q: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
        let r = s.get(&format!("/Users?filter={q}")).await;
        assert_scim_error(&r, 400, Some("invalidFilter"));
    }
}
