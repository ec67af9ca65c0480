//! The organisation's integrations: listed by name, replaced by name and removed once with
//! their audit entries; and the admin's rules for their tools, changed a tool at a time.

use std::sync::Arc;

use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, IntegrationAuth, IntegrationConfig, ToolPolicy, ToolRule,
};
use knowledge_core::ports::StoreError;

use crate::directory::audit_actions;
use crate::{NOW, Tested, business_org};

fn mcp(name: &str, url: &str, auth: IntegrationAuth) -> IntegrationConfig {
    IntegrationConfig {
        name: name.into(),
        url: url.into(),
        auth,
        created_at: NOW,
        oauth: None,
        org_grant_sealed: None,
        tool_rules: Default::default(),
    }
}

pub async fn integrations_are_listed_by_name_replaced_by_name_and_removed_once_with_their_audit(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let other = business_org(&*store).await;
    let audit = |action, target: &str| AuditEntry::new(&org.id, NOW, Actor::Admin, action, target);
    let connect = AuditAction::IntegrationConnected;
    let wiki = mcp("wiki", "https://wiki.example/mcp", IntegrationAuth::PerUser);
    let crm = mcp("crm", "http://127.0.0.1:9/mcp", IntegrationAuth::None);
    store
        .put_integration(&org.id, &wiki, &audit(connect, "wiki"))
        .await
        .unwrap();
    store
        .put_integration(&org.id, &crm, &audit(connect, "crm"))
        .await
        .unwrap();
    assert_eq!(
        store.list_integrations(&org.id).await.unwrap(),
        vec![crm.clone(), wiki.clone()]
    );
    assert!(store.list_integrations(&other.id).await.unwrap().is_empty());

    let moved = mcp("wiki", "https://wiki2.example/mcp", IntegrationAuth::None);
    store
        .put_integration(&org.id, &moved, &audit(connect, "wiki"))
        .await
        .unwrap();
    assert_eq!(
        store.list_integrations(&org.id).await.unwrap(),
        vec![crm.clone(), moved]
    );

    let disconnect = AuditAction::IntegrationDisconnected;
    assert!(
        store
            .remove_integration(&org.id, "wiki", &audit(disconnect, "wiki"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .remove_integration(&org.id, "wiki", &audit(disconnect, "wiki"))
            .await
            .unwrap()
    );
    assert_eq!(store.list_integrations(&org.id).await.unwrap(), vec![crm]);
    let actions = audit_actions(&*store, &org.id, 10).await;
    assert_eq!(actions.iter().filter(|a| **a == connect).count(), 3);
    assert_eq!(actions.iter().filter(|a| **a == disconnect).count(), 1);
}

pub async fn a_tools_rule_changes_alone_stays_through_setting_changes_and_leaves_with_its_integration(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let audit = |action, target: &str| AuditEntry::new(&org.id, NOW, Actor::Admin, action, target);
    let (connect, changed) = (
        AuditAction::IntegrationConnected,
        AuditAction::ToolPolicyChanged,
    );
    let wiki = mcp("wiki", "https://wiki.example/mcp", IntegrationAuth::None);
    store
        .put_integration(&org.id, &wiki, &audit(connect, "wiki"))
        .await
        .unwrap();
    let rules = || async {
        store.list_integrations(&org.id).await.unwrap()[0]
            .tool_rules
            .clone()
    };
    assert!(rules().await.is_empty());
    let block = ToolRule {
        policy: ToolPolicy::Block,
        member_may_always_allow: false,
    };
    let ask = ToolRule {
        policy: ToolPolicy::Ask,
        member_may_always_allow: true,
    };
    let set = |tool: &'static str, rule| {
        let entry = audit(changed, "wiki");
        let store = store.clone();
        let org = org.id.clone();
        async move { store.set_tool_rule(&org, "wiki", tool, rule, &entry).await }
    };
    // Concurrent changes of two tools both land.
    let (a, b) = tokio::join!(
        set("wiki_delete_page", Some(block)),
        set("wiki_edit", Some(ask))
    );
    a.unwrap();
    b.unwrap();
    let expected = [
        ("wiki_delete_page".to_owned(), block),
        ("wiki_edit".to_owned(), ask),
    ];
    assert_eq!(rules().await, expected.clone().into());
    // The settings replaced: the rules stay.
    let moved = mcp("wiki", "https://wiki2.example/mcp", IntegrationAuth::None);
    store
        .put_integration(&org.id, &moved, &audit(connect, "wiki"))
        .await
        .unwrap();
    let listed = store.list_integrations(&org.id).await.unwrap();
    assert_eq!(listed[0].url, "https://wiki2.example/mcp");
    assert_eq!(listed[0].tool_rules, expected.into());
    // Cleared, a tool takes its default again; clearing twice changes nothing.
    set("wiki_edit", None).await.unwrap();
    set("wiki_edit", None).await.unwrap();
    let left = [("wiki_delete_page".to_owned(), block)];
    assert_eq!(rules().await, left.into());
    // No such integration: nothing is written.
    let before = audit_actions(&*store, &org.id, 20).await.len();
    let gone = store
        .set_tool_rule(&org.id, "crm", "crm_x", Some(ask), &audit(changed, "crm"))
        .await;
    assert!(matches!(gone, Err(StoreError::Gone)), "{gone:?}");
    assert_eq!(audit_actions(&*store, &org.id, 20).await.len(), before);
    // Disconnected and connected again: its rules went with it.
    let disconnect = AuditAction::IntegrationDisconnected;
    store
        .remove_integration(&org.id, "wiki", &audit(disconnect, "wiki"))
        .await
        .unwrap();
    store
        .put_integration(&org.id, &wiki, &audit(connect, "wiki"))
        .await
        .unwrap();
    assert!(rules().await.is_empty());
    let actions = audit_actions(&*store, &org.id, 20).await;
    assert_eq!(actions.iter().filter(|a| **a == changed).count(), 4);
}
