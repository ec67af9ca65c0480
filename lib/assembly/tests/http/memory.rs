//! The agent's memory with the real provider adapters against the scripted fake provider:
//! a note saved in one conversation reaches the next conversation's system prompt, and is
//! gone from it once forgotten; nothing is read or offered while memory is off, for the
//! member or the organisation; saves past the bounds are refused in words the model reads;
//! and the same person in another organisation sees none of it.

use knowledge_core::domain::{Actor, AuditEntry, Plan, Role};
use knowledge_core::domain::{
    AuditAction, MEMORY_ENTRY_CHARS, MEMORY_ITEM, MemberDataKind, Memory,
};
use knowledge_core::ids::OrgId;
use knowledge_core::memory::{FORGET_TOOL, SAVE_TOOL};
use knowledge_providers::fake::{Fake, Reply, Seen, Wire};
use serde_json::{Value, json};

use crate::providers::{calls, no_integrations, service};
use crate::support::{Api, User, kinds};

/// The system prompt and the declared tools of the provider call `seen`.
fn prompt_and_tools<W: Wire>(seen: &Seen) -> (String, Vec<String>) {
    (
        W::system_and_question(&seen.body).0,
        W::declared_tools(&seen.body),
    )
}

/// The member's memory as stored.
async fn stored(api: &Api, user: &User) -> Memory {
    let stored = (api.svc.store)
        .get_member_data(
            &user.org,
            &user.id,
            MemberDataKind::AgentMemory,
            MEMORY_ITEM,
        )
        .await
        .unwrap();
    stored.map_or_else(Memory::default, |m| Memory::parse(&m).unwrap())
}

/// Asks `question` in a new session of `user` and waits for its turn to end; the session and
/// its events.
async fn ask(api: &Api, user: &User, question: &str) -> (String, Vec<Value>) {
    let r = api
        .post_as(
            user,
            "/api/managed-agents/session",
            json!({ "text": question }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let session = r.body["id"].as_str().unwrap().to_owned();
    api.settle().await;
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let t = api.get_as(user, &path).await;
    assert_eq!(t.status, 200, "{}", t.body);
    (session, t.body["events"].as_array().unwrap().clone())
}

/// The agent saves `text`, then answers.
fn saves<W: Wire>(fake: &Fake, text: &str) {
    fake.script(Reply::json(
        200,
        W::tool_call("c1", SAVE_TOOL, json!({ "text": text })),
    ))
    .script(Reply::json(200, W::answer("Noted.")));
}

async fn a_note_saved_in_one_conversation_reaches_the_next_ones_system_prompt<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    saves::<W>(&fake, "I prefer metric units.");
    let question = "Please remember that I prefer metric units.";
    let (session, events) = ask(&api, &api.user, question).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "tool_use",
            "tool_result",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(events[1]["payload"]["tool"], SAVE_TOOL, "{}", events[1]);
    assert_eq!(events[2]["payload"]["output"], json!({ "saved": "m1" }));
    let (first_prompt, tools) = prompt_and_tools::<W>(&calls::<W>(&fake)[0]);
    assert!(tools.iter().any(|t| t == SAVE_TOOL) && tools.iter().any(|t| t == FORGET_TOOL));
    assert!(!first_prompt.contains("metric"), "{first_prompt}");

    fake.script(Reply::json(200, W::answer("12 km.")));
    ask(&api, &api.user, "How far is it?").await;
    let (prompt, _) = prompt_and_tools::<W>(&calls::<W>(&fake)[2]);
    assert!(prompt.contains("[m1] I prefer metric units."), "{prompt}");
    let memory = stored(&api, &api.user).await;
    let saved_in = memory.entries[0].session.as_ref().map(|s| s.to_string());
    assert_eq!(
        saved_in,
        Some(session),
        "the note links to its conversation"
    );
}

async fn a_forgotten_note_no_longer_reaches_the_prompt<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    saves::<W>(&fake, "Works on billing.");
    ask(&api, &api.user, "Remember I work on billing.").await;
    fake.script(Reply::json(
        200,
        W::tool_call("c2", FORGET_TOOL, json!({ "id": "m1" })),
    ))
    .script(Reply::json(200, W::answer("Forgotten.")));
    let (_, events) = ask(&api, &api.user, "Forget that I work on billing.").await;
    assert_eq!(events[2]["payload"]["output"], json!({ "forgotten": "m1" }));
    fake.script(Reply::json(200, W::answer("Hello.")));
    ask(&api, &api.user, "Hello").await;
    let seen = calls::<W>(&fake);
    let (while_kept, _) = prompt_and_tools::<W>(&seen[2]);
    assert!(while_kept.contains("Works on billing."), "{while_kept}");
    let (after, _) = prompt_and_tools::<W>(seen.last().unwrap());
    assert!(!after.contains("billing"), "{after}");
    assert!(stored(&api, &api.user).await.entries.is_empty());
}

/// Sets the member's own switch as their Memory page does, keeping the notes.
async fn switch_member(api: &Api, user: &User, on: bool) {
    let store = api.svc.store.as_ref();
    knowledge_core::memory::change(store, &user.org, &user.id, |m| m.off = !on)
        .await
        .unwrap();
}

async fn with_memory_off_nothing_is_read_and_the_tools_are_not_offered<W: Wire>() {
    // An integration is connected, so the agent may call tools while memory is off.
    let (api, fake) = service::<W>(crate::support::docs()).await;
    saves::<W>(&fake, "Likes short answers.");
    ask(&api, &api.user, "Remember I like short answers.").await;
    let user = &api.user;
    // The member switches memory off: the note is kept, but neither read nor offered.
    let store = &api.svc.store;
    switch_member(&api, user, false).await;
    fake.script(Reply::json(200, W::answer("Hi.")));
    ask(&api, user, "Hi").await;
    let (prompt, tools) = prompt_and_tools::<W>(calls::<W>(&fake).last().unwrap());
    assert!(!prompt.contains("short answers"), "{prompt}");
    assert!(!tools.iter().any(|t| t.starts_with("memory_")), "{tools:?}");
    // A forget the model makes up anyway (say, prompted by a tool's output) changes nothing.
    let forget = W::tool_call("c9", FORGET_TOOL, json!({ "id": "m1" }));
    fake.script(Reply::json(200, forget))
        .script(Reply::json(200, W::answer("Done.")));
    let (_, events) = ask(&api, user, "Forget everything about me").await;
    let refused = events[2]["payload"]["output"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(refused.contains("switched off"), "{}", events[2]);
    assert_eq!(
        stored(&api, user).await.entries.len(),
        1,
        "the note is kept"
    );
    // On again for the member, off for the organisation: the same.
    switch_member(&api, user, true).await;
    let audit = AuditEntry::new(
        &user.org,
        api.clock_now(),
        Actor::Admin,
        AuditAction::OrgMemoryChanged,
        user.org.as_str(),
    );
    store.set_memory(&user.org, false, &audit).await.unwrap();
    fake.script(Reply::json(200, W::answer("Hi.")));
    ask(&api, user, "Hi again").await;
    let (prompt, tools) = prompt_and_tools::<W>(calls::<W>(&fake).last().unwrap());
    assert!(!prompt.contains("short answers"), "{prompt}");
    assert!(!tools.iter().any(|t| t.starts_with("memory_")), "{tools:?}");
    assert_eq!(
        stored(&api, user).await.entries.len(),
        1,
        "the note is kept"
    );
}

async fn saves_past_the_bounds_are_refused_with_a_result_the_model_reads<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    saves::<W>(&fake, &"x".repeat(MEMORY_ENTRY_CHARS + 1));
    let (_, events) = ask(&api, &api.user, "Remember this long thing.").await;
    let error = events[2]["payload"]["output"]["error"].as_str().unwrap();
    assert!(error.contains("at most 500"), "{error}");
    assert!(stored(&api, &api.user).await.entries.is_empty());
    // The refusal reaches the model with the tool's result.
    let sent = serde_json::to_string(&calls::<W>(&fake)[1].body).unwrap();
    assert!(sent.contains("at most 500"), "{sent}");
}

async fn the_same_person_in_another_organisation_sees_none_of_it<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    saves::<W>(&fake, "My manager is Dee.");
    ask(&api, &api.user, "Remember my manager is Dee.").await;
    let other = OrgId::generate();
    let operator = api.admin();
    operator
        .create_org(Some(other.clone()), "Other", Plan::Pro)
        .await
        .unwrap();
    operator
        .add_member(&other, Some(api.user.id.clone()), Role::Viewer)
        .await
        .unwrap();
    let there = User {
        cookie: api.cookie(&api.user.id, &other),
        id: api.user.id.clone(),
        org: other,
    };
    fake.script(Reply::json(200, W::answer("I do not know.")));
    ask(&api, &there, "Who is my manager?").await;
    let (prompt, _) = prompt_and_tools::<W>(calls::<W>(&fake).last().unwrap());
    assert!(!prompt.contains("Dee"), "{prompt}");
    assert!(stored(&api, &there).await.entries.is_empty());
}

knowledge_providers::for_each_provider!(
    a_note_saved_in_one_conversation_reaches_the_next_ones_system_prompt,
    a_forgotten_note_no_longer_reaches_the_prompt,
    with_memory_off_nothing_is_read_and_the_tools_are_not_offered,
    saves_past_the_bounds_are_refused_with_a_result_the_model_reads,
    the_same_person_in_another_organisation_sees_none_of_it,
);

/// Saves `texts` into `user`'s memory as the tool would, each from its own event.
async fn remembered(api: &Api, user: &User, texts: &[&str]) {
    let session = knowledge_core::ids::SessionId::generate();
    let now = api.clock_now();
    for (seq, text) in (1..).zip(texts) {
        let from = knowledge_core::domain::SavedFrom {
            session: &session,
            seq,
        };
        knowledge_core::memory::change(api.svc.store.as_ref(), &user.org, &user.id, |m| {
            m.save(text, now, from).map(|_| ())
        })
        .await
        .unwrap()
        .1
        .unwrap();
    }
}

/// A request with the app's Origin and `user`'s cookie.
async fn send(
    api: &Api, user: &User, method: reqwest::Method, path: &str, body: Option<Value>,
) -> crate::support::Reply {
    let mut req = (api.http)
        .request(method, format!("{}{path}", api.base))
        .header("cookie", &user.cookie)
        .header("origin", &api.origin);
    if let Some(body) = body {
        req = req.json(&body);
    }
    api.send(req).await
}

#[tokio::test]
async fn a_member_reads_forgets_switches_and_exports_their_own_memory_and_no_one_elses() {
    use reqwest::Method;
    let api = Api::start().await;
    let me = api.user.clone();
    remembered(
        &api,
        &me,
        &["Prefers metric units", "Works on billing", "Likes tables"],
    )
    .await;
    let other = api.new_user(&me.org).await;
    remembered(&api, &other, &["Someone else's note"]).await;

    let page = api.get("/api/memory").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let texts: Vec<&str> = page.body["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Prefers metric units", "Works on billing", "Likes tables"]
    );
    assert_eq!(
        (
            page.body["enabled"].clone(),
            page.body["organisationEnabled"].clone()
        ),
        (json!(true), json!(true))
    );
    assert_eq!(page.body["maxNotes"], 100);

    // Forgetting one: it is gone; an unknown id is 404 and changes nothing.
    let r = send(&api, &me, Method::DELETE, "/api/memory/notes/m2", None).await;
    assert_eq!((r.status, r.body.clone()), (200, json!({ "forgotten": 1 })));
    let r = send(&api, &me, Method::DELETE, "/api/memory/notes/m2", None).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(stored(&api, &me).await.entries.len(), 2);
    // The switch: bad input is 400 and changes nothing; off keeps the notes.
    let r = send(
        &api,
        &me,
        Method::PUT,
        "/api/memory",
        Some(json!({ "enabled": "no" })),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(!stored(&api, &me).await.off);
    let r = send(
        &api,
        &me,
        Method::PUT,
        "/api/memory",
        Some(json!({ "enabled": false })),
    )
    .await;
    assert_eq!((r.status, r.body["enabled"].clone()), (200, json!(false)));
    assert!(stored(&api, &me).await.off);
    // The export is everything, as a file.
    let export = (api.http)
        .get(format!("{}/api/memory/export", api.base))
        .header("cookie", &me.cookie);
    let response = api.execute(export).await;
    assert_eq!(response.status(), 200);
    let disposition = response.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(disposition, "attachment; filename=\"memory.json\"");
    let exported: Value = response.json().await.unwrap();
    assert_eq!(exported["notes"].as_array().unwrap().len(), 2);
    assert!(!exported.to_string().contains("Someone else"));
    // Forgetting all; the other member's note stays.
    let r = send(&api, &me, Method::DELETE, "/api/memory/notes", None).await;
    assert_eq!((r.status, r.body.clone()), (200, json!({ "forgotten": 2 })));
    assert!(stored(&api, &me).await.entries.is_empty());
    assert_eq!(stored(&api, &other).await.entries.len(), 1);
    // Without the app's Origin, a change is refused.
    let r = api
        .send(
            (api.http)
                .delete(format!("{}/api/memory/notes", api.base))
                .header("cookie", &other.cookie),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(stored(&api, &other).await.entries.len(), 1);
}

#[tokio::test]
async fn an_admin_switches_memory_for_the_organisation_audited_and_reads_no_notes() {
    use reqwest::Method;
    let api = Api::start().await;
    remembered(&api, &api.user, &["Private note"]).await;
    let r = send(&api, &api.user, Method::GET, "/api/admin/memory", None).await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({ "enabled": true }))
    );
    let r = send(
        &api,
        &api.user,
        Method::PUT,
        "/api/admin/memory",
        Some(json!({ "enabled": false })),
    )
    .await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({ "enabled": false }))
    );
    assert!(!r.body.to_string().contains("Private"));
    let page = api.get("/api/memory").await;
    assert_eq!(page.body["organisationEnabled"], false);
    let log = send(
        &api,
        &api.user,
        Method::GET,
        "/api/admin/audit?action=org.memory_changed",
        None,
    )
    .await;
    let entry = &log.body["entries"][0];
    assert_eq!(
        (entry["to"].clone(), entry["actorId"].clone()),
        (json!("off"), json!(api.user.id.to_string()))
    );
    // A viewer may not.
    let viewer = api.new_user(&api.user.org).await;
    let r = send(
        &api,
        &viewer,
        Method::PUT,
        "/api/admin/memory",
        Some(json!({ "enabled": true })),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        api.get("/api/memory").await.body["organisationEnabled"],
        false
    );
}
