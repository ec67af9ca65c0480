//! The discovery endpoints, and the base URL as identity providers type it.

use serde_json::json;

use super::{CORE, ENTERPRISE, Scim};

#[tokio::test]
async fn discovery_endpoints_describe_what_is_served_under_both_prefixes() {
    let s = Scim::start().await;
    for prefix in ["/api/scim", "/api/scim/v2"] {
        let get = |path: &str| {
            s.api
                .http
                .get(format!("{}{prefix}{path}", s.api.base))
                .bearer_auth(&s.token)
        };
        let config = s.api.send(get("/ServiceProviderConfig")).await;
        assert_eq!(config.status, 200);
        assert_eq!(
            config.headers["content-type"],
            "application/scim+json; charset=utf-8"
        );
        assert_eq!(config.body["patch"]["supported"], true);
        assert_eq!(config.body["bulk"]["supported"], false);
        assert_eq!(config.body["filter"]["supported"], true);
        let types = s.api.send(get("/ResourceTypes")).await;
        let names: Vec<&str> = types.body["Resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["User", "Group"]);
        let schemas = s.api.send(get("/Schemas")).await;
        let ids: Vec<&str> = schemas.body["Resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                CORE,
                ENTERPRISE,
                "urn:ietf:params:scim:schemas:core:2.0:Group"
            ]
        );
        let user = s.api.send(get(&format!("/Schemas/{CORE}"))).await;
        let user_name = user.body["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "userName")
            .unwrap()
            .clone();
        assert_eq!(
            (
                user_name["required"].clone(),
                user_name["uniqueness"].clone()
            ),
            (json!(true), json!("server"))
        );
        assert_eq!(
            s.api.send(get("/ResourceTypes/User")).await.body["endpoint"],
            "/Users"
        );
    }
}

#[tokio::test]
async fn the_base_url_and_trailing_slashes_are_accepted_as_typed() {
    let s = Scim::start().await;
    s.provision("ann@x.org").await;
    for path in ["/api/scim/v2", "/api/scim/v2/", "/api/scim"] {
        let r = s
            .api
            .send(
                s.api
                    .http
                    .get(format!("{}{path}", s.api.base))
                    .bearer_auth(&s.token),
            )
            .await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(r.body["patch"]["supported"], true, "{path}");
    }
    let r = s
        .get("/Users/?filter=userName+eq+%22ann%40x.org%22&aadOptscim062020")
        .await;
    assert_eq!(r.body["totalResults"], 1);
    assert_eq!(s.get("/Groups/").await.body["totalResults"], 2);
}
