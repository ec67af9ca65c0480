//! The admin API's groups over the real server: made, listed, renamed and deleted, members
//! added and removed once each and listed a page at a time, names refused as SCIM refuses
//! them, a group the identity provider pushed left read-only, another organisation's groups
//! out of sight, viewers refused, and every change in the audit log.

use knowledge_core::domain::Role;
use knowledge_core::ids::{GroupId, OrgId};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, Reply, User, admin, admin_as as call};

/// A new member of `org` with `role`, signed in.
async fn member_of(api: &Api, org: &OrgId, role: Role) -> User {
    let user = api.new_user(org).await;
    if role == Role::Admin {
        (api.admin())
            .add_member(org, Some(user.id.clone()), Role::Admin)
            .await
            .unwrap();
    }
    user
}

/// Makes a group named `name` as the default admin; returns its id.
async fn create(api: &Api, name: &str) -> String {
    let r = admin(
        api,
        Method::POST,
        "/groups",
        Some(json!({ "displayName": name })),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["id"].as_str().unwrap().to_owned()
}

/// The groups' names as listed, in order.
async fn names(api: &Api) -> Vec<String> {
    let r = admin(api, Method::GET, "/groups", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let groups = r.body["groups"].as_array().unwrap();
    groups
        .iter()
        .map(|g| g["displayName"].as_str().unwrap().to_owned())
        .collect()
}

/// The user ids of a page of the group's members.
fn user_ids(r: &Reply) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.body);
    let members = r.body["members"].as_array().unwrap();
    members
        .iter()
        .map(|m| m["userId"].as_str().unwrap().to_owned())
        .collect()
}

/// Every write to group `id` (member `user`), with a body each accepts.
fn writes(id: &str, user: &str) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (
            Method::PATCH,
            format!("/groups/{id}"),
            Some(json!({ "displayName": "Renamed" })),
        ),
        (Method::DELETE, format!("/groups/{id}"), None),
        (Method::PUT, format!("/groups/{id}/members/{user}"), None),
        (Method::DELETE, format!("/groups/{id}/members/{user}"), None),
    ]
}

#[tokio::test]
async fn an_admin_creates_lists_renames_and_deletes_a_group() {
    let api = Api::start().await;
    let r = admin(
        &api,
        Method::POST,
        "/groups",
        Some(json!({ "displayName": "  Sales " })),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert!(GroupId::parse(&id).is_ok(), "{id}");
    assert_eq!(r.body["displayName"], "Sales");
    assert_eq!(r.body["source"], "admin");
    assert!(r.body.get("externalId").is_none(), "{}", r.body);
    assert_eq!(r.body["createdAt"], r.body["updatedAt"]);
    create(&api, "finance").await;
    assert_eq!(
        names(&api).await,
        ["finance", "Sales"],
        "by name, in any case"
    );

    let path = format!("/groups/{id}");
    let r = admin(
        &api,
        Method::PATCH,
        &path,
        Some(json!({ "displayName": "Sales EMEA" })),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["id"].as_str(), r.body["displayName"].as_str()),
        (Some(id.as_str()), Some("Sales EMEA"))
    );
    assert_eq!(names(&api).await, ["finance", "Sales EMEA"]);

    let r = admin(&api, Method::DELETE, &path, None).await;
    assert_eq!((r.status, &r.body), (200, &json!({ "ok": true })));
    assert_eq!(names(&api).await, ["finance"]);
    let r = admin(&api, Method::DELETE, &path, None).await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "deleted once");
    let r = admin(
        &api,
        Method::PATCH,
        &path,
        Some(json!({ "displayName": "Back" })),
    )
    .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn a_name_another_group_has_in_any_case_or_a_roles_name_is_refused_as_taken() {
    let api = Api::start().await;
    create(&api, "Finance").await;
    let legal = create(&api, "Legal").await;
    for name in ["FINANCE", " finance ", "Admin", "viewer", "VIEWER"] {
        let r = admin(
            &api,
            Method::POST,
            "/groups",
            Some(json!({ "displayName": name })),
        )
        .await;
        assert_eq!((r.status, r.code()), (409, "group_name_taken"), "{name}");
    }
    for name in ["finance", "admin"] {
        let r = admin(
            &api,
            Method::PATCH,
            &format!("/groups/{legal}"),
            Some(json!({ "displayName": name })),
        )
        .await;
        assert_eq!((r.status, r.code()), (409, "group_name_taken"), "{name}");
    }
    // A name that is no name is a bad request, and a body without one too.
    for body in [
        json!({ "displayName": "  " }),
        json!({ "displayName": "a\nb" }),
        json!({ "displayName": "x".repeat(257) }),
        json!({ "name": "Ops" }),
        json!({ "displayName": 7 }),
    ] {
        let r = admin(&api, Method::POST, "/groups", Some(body.clone())).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    // Its own name again, in another case, is a rename.
    let r = admin(
        &api,
        Method::PATCH,
        &format!("/groups/{legal}"),
        Some(json!({ "displayName": "LEGAL" })),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&api).await, ["Finance", "LEGAL"]);
}

#[tokio::test]
async fn a_group_pushed_over_scim_is_listed_with_its_members_and_every_write_to_it_is_refused() {
    let api = Api::start().await;
    let org = api.user.org.clone();
    api.set_sso(&org, true).await;
    let token = api.admin().generate_scim_token(&org).await.unwrap();
    let scim = |path: &str, body: Value| {
        (api.http)
            .post(format!("{}/api/scim/v2{path}", api.base))
            .bearer_auth(&token)
            .header("content-type", "application/scim+json")
            .body(body.to_string())
    };
    let core = "urn:ietf:params:scim:schemas:core:2.0:User";
    let user = scim(
        "/Users",
        json!({ "schemas": [core], "userName": "ann@x.org", "active": true }),
    );
    let r = api.send(user).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let ann = r.body["id"].as_str().unwrap().to_owned();
    let group = json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "displayName": "Engineering",
        "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
        "members": [{ "value": ann }],
    });
    let r = api.send(scim("/Groups", group)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();

    let listed = admin(&api, Method::GET, "/groups", None).await;
    let pushed = &listed.body["groups"][0];
    assert_eq!(pushed["id"], id.as_str());
    assert_eq!(pushed["source"], "scim");
    assert_eq!(pushed["externalId"], "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159");
    let path = format!("/groups/{id}/members");
    let members = admin(&api, Method::GET, &path, None).await;
    assert_eq!(user_ids(&members), [ann.as_str()]);
    assert_eq!(members.body["members"][0]["userName"], "ann@x.org");

    let viewer = api.new_user(&org).await;
    for someone in [&ann, viewer.id.as_str()] {
        for (method, path, body) in writes(&id, someone) {
            let r = admin(&api, method.clone(), &path, body).await;
            assert_eq!(
                (r.status, r.code()),
                (409, "group_pushed_by_scim"),
                "{method} {path}"
            );
        }
    }
    assert_eq!(
        admin(&api, Method::GET, "/groups", None).await.body,
        listed.body
    );
    assert_eq!(
        user_ids(&admin(&api, Method::GET, &path, None).await),
        [ann.as_str()]
    );
}

#[tokio::test]
async fn members_are_added_and_removed_once_each_and_listed_a_page_at_a_time() {
    let api = Api::start().await;
    let id = create(&api, "Support").await;
    let org = api.user.org.clone();
    let mut users = Vec::new();
    for _ in 0..3 {
        users.push(member_of(&api, &org, Role::Viewer).await.id.to_string());
    }
    users.sort();
    for user in &users {
        let path = format!("/groups/{id}/members/{user}");
        let r = admin(&api, Method::PUT, &path, None).await;
        assert_eq!(
            (r.status, &r.body),
            (200, &json!({ "ok": true, "added": true }))
        );
    }
    let again = format!("/groups/{id}/members/{}", users[0]);
    let r = admin(&api, Method::PUT, &again, None).await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!({ "ok": true, "added": false }))
    );

    let list = format!("/groups/{id}/members");
    let all = admin(&api, Method::GET, &list, None).await;
    assert_eq!(user_ids(&all), users);
    assert_eq!(all.body["members"][0]["role"], "viewer");
    assert!(all.body["next"].is_null(), "{}", all.body);
    let first = admin(&api, Method::GET, &format!("{list}?limit=2"), None).await;
    assert_eq!(user_ids(&first), users[..2]);
    let next = first.body["next"].as_str().unwrap();
    assert_eq!(next, users[1]);
    let rest = admin(
        &api,
        Method::GET,
        &format!("{list}?after={next}&limit=2"),
        None,
    )
    .await;
    assert_eq!(user_ids(&rest), users[2..]);
    assert!(rest.body["next"].is_null(), "{}", rest.body);
    for bad in ["?limit=0", "?limit=101", "?after=not%20an%20id"] {
        let r = admin(&api, Method::GET, &format!("{list}{bad}"), None).await;
        assert_eq!(r.status, 400, "{bad}");
    }

    let r = admin(&api, Method::DELETE, &again, None).await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!({ "ok": true, "removed": true }))
    );
    let r = admin(&api, Method::DELETE, &again, None).await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!({ "ok": true, "removed": false }))
    );
    let left = admin(&api, Method::GET, &list, None).await;
    assert_eq!(user_ids(&left), users[1..]);
    // A member removed from the organisation leaves its groups.
    let gone = knowledge_core::ids::UserId::parse(&users[1]).unwrap();
    api.admin().remove_member(&org, &gone).await.unwrap();
    let left = admin(&api, Method::GET, &list, None).await;
    assert_eq!(user_ids(&left), users[2..]);
    let r = admin(
        &api,
        Method::PUT,
        &format!("/groups/{id}/members/{gone}"),
        None,
    )
    .await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "no such member");
}

#[tokio::test]
async fn a_member_in_as_many_groups_as_allowed_is_refused_one_more() {
    let api = Api::start().await;
    let user = api.new_user(&api.user.org).await.id;
    let allowed = knowledge_core::domain::GROUPS_PER_MEMBER;
    for n in 0..allowed {
        let id = create(&api, &format!("Group {n}")).await;
        let r = admin(
            &api,
            Method::PUT,
            &format!("/groups/{id}/members/{user}"),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let id = create(&api, "One too many").await;
    let path = format!("/groups/{id}/members/{user}");
    let r = admin(&api, Method::PUT, &path, None).await;
    assert_eq!((r.status, r.code()), (409, "too_many_groups"), "{}", r.body);
    let members = admin(&api, Method::GET, &format!("/groups/{id}/members"), None).await;
    assert!(user_ids(&members).is_empty());
}

#[tokio::test]
async fn an_unknown_group_or_another_organisations_is_not_found_and_left_as_it_was() {
    let api = Api::start().await;
    let mine = create(&api, "Mine").await;
    let other = OrgId::generate();
    let their_admin = member_of(&api, &other, Role::Admin).await;
    let stranger = member_of(&api, &other, Role::Viewer).await;
    let r = call(
        &api,
        &their_admin,
        Method::POST,
        "/groups",
        Some(json!({ "displayName": "Theirs" })),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let theirs = r.body["id"].as_str().unwrap().to_owned();
    let add = format!("/groups/{theirs}/members/{}", stranger.id);
    assert_eq!(
        call(&api, &their_admin, Method::PUT, &add, None)
            .await
            .status,
        200
    );

    let unknown = GroupId::generate().to_string();
    for id in [&unknown, &theirs] {
        let r = admin(&api, Method::GET, &format!("/groups/{id}/members"), None).await;
        assert_eq!((r.status, r.code()), (404, "not_found"), "{id}");
        for (method, path, body) in writes(id, stranger.id.as_str()) {
            let r = admin(&api, method.clone(), &path, body).await;
            assert_eq!((r.status, r.code()), (404, "not_found"), "{method} {path}");
        }
    }
    // Their member cannot join my group either; a malformed id is a bad request.
    let r = admin(
        &api,
        Method::PUT,
        &format!("/groups/{mine}/members/{}", stranger.id),
        None,
    )
    .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    for path in [
        "/groups/admin/members",
        "/groups/grp_x/members",
        "/groups/Mine/members",
    ] {
        let r = admin(&api, Method::GET, path, None).await;
        assert_eq!((r.status, r.code()), (400, "invalid_field"), "{path}");
    }
    let r = admin(&api, Method::DELETE, "/groups/not-a-group", None).await;
    assert_eq!(r.status, 400);
    assert_eq!(names(&api).await, ["Mine"]);

    let r = call(&api, &their_admin, Method::GET, "/groups", None).await;
    assert_eq!(r.body["groups"][0]["displayName"], "Theirs");
    let r = call(
        &api,
        &their_admin,
        Method::GET,
        &format!("/groups/{theirs}/members"),
        None,
    )
    .await;
    assert_eq!(user_ids(&r), [stranger.id.as_str()]);
}

#[tokio::test]
async fn a_viewer_is_refused_every_group_route_and_changes_nothing() {
    let api = Api::start().await;
    let id = create(&api, "Ops").await;
    let viewer = api.new_user(&api.user.org).await;
    let mut routes = writes(&id, viewer.id.as_str());
    routes.extend([
        (Method::GET, "/groups".to_owned(), None),
        (
            Method::POST,
            "/groups".to_owned(),
            Some(json!({ "displayName": "Mine now" })),
        ),
        (Method::GET, format!("/groups/{id}/members"), None),
    ]);
    for (method, path, body) in routes {
        let r = call(&api, &viewer, method.clone(), &path, body).await;
        assert_eq!((r.status, r.code()), (403, "admin_only"), "{method} {path}");
    }
    assert_eq!(names(&api).await, ["Ops"]);
    let r = admin(&api, Method::GET, &format!("/groups/{id}/members"), None).await;
    assert!(user_ids(&r).is_empty());
}

#[tokio::test]
async fn every_change_to_a_group_is_in_the_audit_log_once_with_who_made_it() {
    let api = Api::start().await;
    let id = create(&api, "Audit me").await;
    let user = api.new_user(&api.user.org).await.id;
    let member = format!("/groups/{id}/members/{user}");
    let group = format!("/groups/{id}");
    let rename = json!({ "displayName": "Audited" });
    for (method, path, body) in [
        (Method::PUT, &member, None),
        (Method::PUT, &member, None),
        (Method::PATCH, &group, Some(rename.clone())),
        (Method::PATCH, &group, Some(rename)),
        (Method::DELETE, &member, None),
        (Method::DELETE, &member, None),
        (Method::DELETE, &group, None),
    ] {
        let r = admin(&api, method.clone(), path, body).await;
        assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
    }
    let log = admin(&api, Method::GET, "/audit?limit=100", None).await;
    assert_eq!(log.status, 200);
    let entries: Vec<&Value> = log.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("group."))
        .collect();
    let seen: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    let (id, user) = (id.as_str(), user.as_str());
    assert_eq!(
        seen,
        [
            ("group.deleted", id),
            ("group.member_removed", user),
            ("group.renamed", id),
            ("group.member_added", user),
            ("group.created", id),
        ],
        "newest first, and a change that changed nothing is not recorded"
    );
    for e in entries {
        assert_eq!(e["actor"], "admin");
        assert_eq!(e["actorId"], api.user.id.as_str());
    }
}
