//! Cases of the agent's memory in the stores: the member data item that holds it, swapped only
//! from the value read, read in a batch, removed with the member; and the organisation's
//! switch, kept through its other settings.

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, MEMORY_ITEM, MemberDataKind};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Reads, StoreError};

use crate::{Tested, audit, business_org, member_with_session};

const KIND: MemberDataKind = MemberDataKind::AgentMemory;

pub async fn a_memory_moves_only_from_the_value_it_was_read_at_and_leaves_with_the_member(
    store: Arc<dyn Tested>,
) {
    let key = member_with_session(&*store, 1).await;
    let (org, user) = (&key.org, &key.user);
    let get = || store.get_member_data(org, user, KIND, MEMORY_ITEM);
    assert_eq!(get().await.unwrap(), None);
    store
        .swap_member_data(org, user, KIND, MEMORY_ITEM, None, Some("one"))
        .await
        .unwrap();
    assert_eq!(get().await.unwrap().as_deref(), Some("one"));
    // A writer that read nothing, or an older value, is refused and changes nothing.
    for stale in [None, Some("zero")] {
        let refused = store
            .swap_member_data(org, user, KIND, MEMORY_ITEM, stale, Some("lost"))
            .await;
        assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    }
    store
        .swap_member_data(org, user, KIND, MEMORY_ITEM, Some("one"), Some("two"))
        .await
        .unwrap();
    assert_eq!(get().await.unwrap().as_deref(), Some("two"));
    // Another member, and the same person in another organisation, see none of it.
    let other = UserId::generate();
    let none = store.get_member_data(org, &other, KIND, MEMORY_ITEM).await;
    assert_eq!(none.unwrap(), None);
    let elsewhere = store
        .get_member_data(&OrgId::generate(), user, KIND, MEMORY_ITEM)
        .await;
    assert_eq!(elsewhere.unwrap(), None);
    // Creating one for someone who is not a member is refused.
    let gone = store
        .swap_member_data(org, &other, KIND, MEMORY_ITEM, None, Some("x"))
        .await;
    assert!(matches!(gone, Err(StoreError::Gone)), "{gone:?}");
    // The batch read returns it when asked; removing the member removes it.
    let reads = Reads {
        memory: true,
        ..Reads::member(org, user)
    };
    let read = store.read_batch(&reads).await.unwrap();
    assert_eq!(read.memory.as_deref(), Some("two"));
    let removed = audit(org, AuditAction::UserDeleted, user.as_str());
    assert!(store.remove_member(org, user, &removed).await.unwrap());
    assert_eq!(get().await.unwrap(), None);
    assert_eq!(store.read_batch(&reads).await.unwrap().memory, None);
}

pub async fn of_concurrent_swaps_from_one_memory_exactly_one_lands(store: Arc<dyn Tested>) {
    let key = member_with_session(&*store, 1).await;
    let (org, user) = (key.org.clone(), key.user.clone());
    store
        .swap_member_data(&org, &user, KIND, MEMORY_ITEM, None, Some("base"))
        .await
        .unwrap();
    let writers = (0..8).map(|i| {
        let (store, org, user) = (store.clone(), org.clone(), user.clone());
        tokio::spawn(async move {
            let next = format!("from {i}");
            store
                .swap_member_data(&org, &user, KIND, MEMORY_ITEM, Some("base"), Some(&next))
                .await
                .map(|()| next)
        })
    });
    let mut landed = Vec::new();
    for writer in writers {
        match writer.await.unwrap() {
            Ok(next) => landed.push(next),
            Err(StoreError::Conflict) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(landed.len(), 1, "{landed:?}");
    let stored = store.get_member_data(&org, &user, KIND, MEMORY_ITEM).await;
    assert_eq!(stored.unwrap(), landed.pop());
}

pub async fn the_memory_switch_is_audited_and_keeps_the_other_settings(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    assert!(!store.get_org(&org.id).await.unwrap().unwrap().memory_off);
    let off = audit(&org.id, AuditAction::OrgMemoryChanged, org.id.as_str()).became("off");
    store.set_memory(&org.id, false, &off).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert!(read.memory_off);
    assert_eq!(
        (read.name.as_str(), read.plan, read.monthly_query_quota),
        (org.name.as_str(), org.plan, org.monthly_query_quota)
    );
    // Another setting changed afterwards leaves the switch as it is.
    let limits = audit(&org.id, AuditAction::OrgLimitsChanged, org.id.as_str());
    let three = knowledge_core::ports::OrgLimits {
        quota: Some(3),
        ..Default::default()
    };
    store.set_limits(&org.id, &three, &limits).await.unwrap();
    assert!(store.get_org(&org.id).await.unwrap().unwrap().memory_off);
    let on = audit(&org.id, AuditAction::OrgMemoryChanged, org.id.as_str()).became("on");
    store.set_memory(&org.id, true, &on).await.unwrap();
    assert!(!store.get_org(&org.id).await.unwrap().unwrap().memory_off);
    let log = store.list_audit(&org.id, None, 10).await.unwrap();
    assert_eq!(log[0], on);
    assert_eq!(log[2], off);
    let gone = store.set_memory(&OrgId::generate(), true, &on).await;
    assert!(matches!(gone, Err(StoreError::Gone)));
}
