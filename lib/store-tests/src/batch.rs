//! Cases of [`BatchStore`](knowledge_core::ports::BatchStore): the records a request reads
//! together before it writes.

use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{MEMORY_ITEM, MemberDataKind, Usage};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Charge, EventsAfter, RateUpdate, Reads, Snapshot, TokenUsage};

use crate::{NOW, Tested, member_with_session};

pub async fn a_batch_reads_every_record_asked_for_as_its_own_getter_does(store: Arc<dyn Tested>) {
    let key = member_with_session(&*store, 3).await;
    let session = store.get_session(&key).await.unwrap().unwrap();
    let month = NOW.month();
    let mut charged = session.clone();
    charged.version += 1;
    let charge = Charge {
        month: month.clone(),
        day: NOW.day(),
        model: "model-a".to_owned(),
        tokens: TokenUsage::default(),
        micros: 42,
    };
    store
        .commit_session(&charged, session.version, &[], Some(&charge), None)
        .await
        .unwrap();
    let window = format!("message#{}", key.user);
    let hits = [NOW];
    store
        .put_rate_window(RateUpdate {
            key: &window,
            hits: &hits,
            expected_version: 0,
            expires_at: Timestamp(NOW.0 + 60_000),
        })
        .await
        .unwrap();
    let memory = r#"{"entries":[]}"#;
    let kind = MemberDataKind::AgentMemory;
    store
        .swap_member_data(&key.org, &key.user, kind, MEMORY_ITEM, None, Some(memory))
        .await
        .unwrap();

    let everything = Reads {
        org_record: true,
        memory: true,
        usage_month: Some(&month),
        rate_window: Some(&window),
        session: Some(&key.session),
        events: Some(EventsAfter { after: 1, limit: 1 }),
        ..Reads::member(&key.org, &key.user)
    };
    let read = store.read_batch(&everything).await.unwrap();
    assert_eq!(
        read,
        Snapshot {
            member: store.get_member(&key.org, &key.user).await.unwrap(),
            org: store.get_org(&key.org).await.unwrap(),
            usage: Usage {
                queries: 0,
                cost_micros: 42
            },
            member_usage: Usage {
                queries: 0,
                cost_micros: 42
            },
            rate_window: store.get_rate_window(&window).await.unwrap(),
            session: store.get_session(&key).await.unwrap(),
            draft: None,
            events: store.list_events(&key, 1, 1).await.unwrap(),
            memory: Some(memory.to_owned()),
        }
    );
    assert_eq!(read.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2]);
    assert!(read.member.is_some() && read.org.is_some() && read.session.is_some());
    assert_eq!(read.session.map(|s| s.version), Some(charged.version));

    // What is not asked for is not read; the membership always is.
    let alone = store
        .read_batch(&Reads::member(&key.org, &key.user))
        .await
        .unwrap();
    assert_eq!(
        alone,
        Snapshot {
            member: read.member.clone(),
            ..Snapshot::default()
        }
    );
}

pub async fn a_batch_reads_nothing_of_another_user_or_organisation(store: Arc<dyn Tested>) {
    let key = member_with_session(&*store, 1).await;
    let month = NOW.month();
    let other_org = OrgId::generate();
    for (user, in_org) in [
        (UserId::generate(), &key.org),
        (key.user.clone(), &other_org),
    ] {
        let reads = Reads {
            org_record: true,
            usage_month: Some(&month),
            session: Some(&key.session),
            events: Some(EventsAfter {
                after: 0,
                limit: 10,
            }),
            ..Reads::member(in_org, &user)
        };
        let read = store.read_batch(&reads).await.unwrap();
        assert_eq!(read.member, None);
        assert!(
            read.events.is_empty(),
            "{user} in {in_org} read another's events"
        );
        assert_eq!(
            read.session, None,
            "{user} in {in_org} read another's session"
        );
        assert_eq!(read.org.is_some(), in_org == &key.org);
    }
}
