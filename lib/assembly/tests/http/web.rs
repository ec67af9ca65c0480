//! The browser app served by the service: the page at `/` and at a conversation's address,
//! its hashed assets, their caching, and the Content-Security-Policy on all of it.

use crate::support::Api;

async fn get(api: &Api, path: &str) -> reqwest::Response {
    api.execute(api.http.get(format!("{}{path}", api.base)))
        .await
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test]
async fn the_page_is_served_at_the_root_and_at_a_conversation_never_cached_under_a_strict_policy() {
    let api = Api::start().await;
    for path in [
        "/",
        "/c/ses_0123456789abcdef0123456789abcdef",
        "/connections",
        "/admin",
        "/admin/members",
    ] {
        let r = get(&api, path).await;
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert_eq!(header(&r, "cache-control"), "no-cache");
        assert!(header(&r, "content-type").starts_with("text/html"));
        let csp = header(&r, "content-security-policy").to_owned();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"));
        assert_eq!(header(&r, "x-content-type-options"), "nosniff");
        let html = r.text().await.unwrap();
        assert!(
            html.contains(r#"<div id="app">"#) && !html.contains("<script>"),
            "{html}"
        );
    }
}

#[tokio::test]
async fn every_asset_the_page_names_is_served_immutable_with_its_type() {
    let api = Api::start().await;
    let html = get(&api, "/").await.text().await.unwrap();
    let named: Vec<&str> = html
        .split('"')
        .filter(|part| part.starts_with("/assets/"))
        .collect();
    assert_eq!(named.len(), 2, "{html}");
    for path in named {
        let r = get(&api, path).await;
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert_eq!(
            header(&r, "cache-control"),
            "public, max-age=31536000, immutable"
        );
        let expected = if path.ends_with(".js") {
            "text/javascript"
        } else {
            "text/css"
        };
        assert!(header(&r, "content-type").starts_with(expected), "{path}");
        assert!(!r.bytes().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn unknown_assets_and_paths_outside_the_assets_are_not_found() {
    let api = Api::start().await;
    for path in [
        "/assets/nope.js",
        "/assets/..%2Fstore.db",
        "/assets/.hidden",
        "/elsewhere",
    ] {
        let r = get(&api, path).await;
        assert_eq!(r.status().as_u16(), 404, "{path}");
        assert_ne!(
            header(&r, "cache-control"),
            "public, max-age=31536000, immutable"
        );
    }
}
