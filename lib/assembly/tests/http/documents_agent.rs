//! The organisation's documents through the agent: the built-in agent searches them with the
//! `search_documents` tool as the member whose turn it is, quotes what it found and cites each
//! passage; a member who may open nothing is offered no such tool, and a member taken out of a
//! group between two questions gets none of its passages in the second answer.

use reqwest::Method;
use serde_json::{Value, json};

use crate::documents::{collection, upload};
use crate::support::{Api, User, admin};

const POLICY: &str = "# Expenses\n\n## Travel\n\nThe per diem for Lisbon is forty euros a day.\n";

/// The events of `user`'s session `session`, after its runs settled.
async fn events_of(api: &Api, user: &User, session: &str) -> Vec<Value> {
    api.settle().await;
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let reply = api.get_as(user, &path).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body["events"].as_array().unwrap().clone()
}

/// `user` asks `text` in a new session; its id.
async fn ask(api: &Api, user: &User, text: &str) -> String {
    let made = (api.post_as(user, "/api/managed-agents/session", json!({ "text": text }))).await;
    assert_eq!(made.status, 200, "{:?}", made.body);
    made.body["id"].as_str().unwrap().to_owned()
}

/// The text of the last answer in `events`.
fn last_answer(events: &[Value]) -> String {
    let answer = events.iter().rev().find(|e| e["type"] == "agent_message");
    answer.expect("an answer")["payload"]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The tools called in `events`.
fn tools_called(events: &[Value]) -> Vec<String> {
    (events.iter())
        .filter(|e| e["type"] == "tool_use")
        .map(|e| e["payload"]["tool"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A group with `members`, and a collection open to it holding the policy, indexed.
async fn closed_policy(api: &Api, members: &[&User]) -> (String, String, String) {
    let made = admin(
        api,
        Method::POST,
        "/groups",
        Some(json!({ "displayName": "Finance" })),
    )
    .await;
    let group = made.body["id"].as_str().unwrap().to_owned();
    for m in members {
        let path = format!("/groups/{group}/members/{}", m.id);
        assert_eq!(admin(api, Method::PUT, &path, None).await.status, 200);
    }
    let access = json!({ "kind": "groups", "groups": [group] });
    let c = collection(api, "Policies", access).await;
    let d = upload(api, &c, "expenses.md", POLICY.as_bytes()).await;
    api.svc.index_all().await;
    (group, c, d)
}

#[tokio::test]
async fn the_built_in_agent_quotes_a_passage_the_member_may_open_and_cites_it() {
    let api = Api::start().await;
    let member = api.new_user(&api.user.org).await;
    let (_, c, d) = closed_policy(&api, &[&member]).await;
    let session = ask(&api, &member, "What is the per diem for Lisbon?").await;
    let events = events_of(&api, &member, &session).await;
    assert_eq!(tools_called(&events), ["search_documents"]);
    let answer = last_answer(&events);
    assert!(answer.contains("forty euros"), "{answer}");
    let marker = format!("[[cite:{c}/{d}#");
    assert!(answer.contains(&marker), "no citation in {answer}");
}

#[tokio::test]
async fn a_member_who_may_open_no_collection_is_offered_no_search_and_sees_no_passage() {
    let api = Api::start().await;
    let (inside, outside) = (
        api.new_user(&api.user.org).await,
        api.new_user(&api.user.org).await,
    );
    closed_policy(&api, &[&inside]).await;
    let session = ask(&api, &outside, "What is the per diem for Lisbon?").await;
    let events = events_of(&api, &outside, &session).await;
    assert!(tools_called(&events).is_empty(), "{events:?}");
    let answer = last_answer(&events);
    assert!(!answer.contains("forty euros"), "{answer}");
}

#[tokio::test]
async fn a_member_taken_out_of_the_group_between_two_questions_gets_no_passage_in_the_second() {
    let api = Api::start().await;
    let member = api.new_user(&api.user.org).await;
    let (group, _, _) = closed_policy(&api, &[&member]).await;
    let session = ask(&api, &member, "What is the per diem for Lisbon?").await;
    let first = last_answer(&events_of(&api, &member, &session).await);
    assert!(first.contains("forty euros"), "{first}");

    let path = format!("/groups/{group}/members/{}", member.id);
    assert_eq!(admin(&api, Method::DELETE, &path, None).await.status, 200);
    let body = json!({ "sessionId": session, "text": "And the per diem for Lisbon again?" });
    let sent = api
        .post_as(&member, "/api/managed-agents/message", body)
        .await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    let events = events_of(&api, &member, &session).await;
    let second = last_answer(&events);
    assert_ne!(second, first);
    let answers: Vec<_> = (events.iter())
        .filter(|e| e["type"] == "agent_message")
        .collect();
    assert_eq!(answers.len(), 2, "{events:?}");
    assert!(!second.contains("forty euros"), "{second}");
}

#[tokio::test]
async fn the_agent_searches_a_deleted_document_no_more() {
    let api = Api::start().await;
    let c = collection(&api, "Policies", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "expenses.md", POLICY.as_bytes()).await;
    api.svc.index_all().await;
    let path = format!("/collections/{c}/documents/{d}");
    assert_eq!(admin(&api, Method::DELETE, &path, None).await.status, 200);
    let user = api.user.clone();
    let session = ask(&api, &user, "What is the per diem for Lisbon?").await;
    let answer = last_answer(&events_of(&api, &user, &session).await);
    assert!(!answer.contains("forty euros"), "{answer}");
}

#[tokio::test]
async fn the_agents_search_answers_ten_passages_unless_it_asks_for_another_number_up_to_twenty() {
    use std::sync::Arc;

    use knowledge_core::adapters::integrations::FixedIntegrations;
    use knowledge_core::documents::{
        SEARCH_TOOL, SEARCH_TOOL_DEFAULT_LIMIT, SEARCH_TOOL_MAX_LIMIT, WithDocuments,
    };
    use knowledge_core::ports::{IntegrationError, Integrations};

    let api = Api::start().await;
    let c = collection(&api, "Policies", json!({ "kind": "everyone" })).await;
    let sections: String = (1..=30)
        .map(|i| format!("## City {i}\n\nThe per diem for city number {i} is {i} euros a day.\n\n"))
        .collect();
    upload(&api, &c, "per-diems.md", sections.as_bytes()).await;
    api.svc.index_all().await;

    let tools = WithDocuments::new(
        Arc::new(FixedIntegrations::new()),
        api.svc.documents.clone(),
        api.svc.store.clone(),
    );
    let connected = (tools.connected(&api.user.org, &api.user.id).await).unwrap();
    let search = (connected.iter())
        .find(|i| i.owns(SEARCH_TOOL) == Some(true))
        .expect("the documents' search");
    let call = |input: Value| {
        let search = search.clone();
        async move {
            let never = std::pin::pin!(std::future::pending::<()>());
            search.call(SEARCH_TOOL, &input, never).await
        }
    };
    let count = |v: Value| v.as_array().map(Vec::len);

    let named_none = call(json!({ "query": "per diem euros" })).await.unwrap();
    assert_eq!(count(named_none), Some(SEARCH_TOOL_DEFAULT_LIMIT as usize));
    assert_eq!(SEARCH_TOOL_DEFAULT_LIMIT, 10);
    let most = json!({ "query": "per diem euros", "limit": SEARCH_TOOL_MAX_LIMIT });
    assert_eq!(count(call(most).await.unwrap()), Some(20));
    let over = json!({ "query": "per diem euros", "limit": SEARCH_TOOL_MAX_LIMIT + 1 });
    assert!(matches!(
        call(over).await,
        Err(IntegrationError::Invalid(_))
    ));
}
