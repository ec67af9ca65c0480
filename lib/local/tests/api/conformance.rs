//! The storage port's contract, on whichever store `KNOWLEDGE_TEST_STORE` selects: the embedded
//! SQLite store, or `DynamoStore` on a DynamoDB stand-in. `scripts/test` runs it on both.

use std::collections::BTreeSet;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, Awaiting, Event, IntegrationAuth, IntegrationConfig, Member,
    MemberData, MemberDataKind, NewEvent, Org, OrgStatus, Plan, Profile, Role, Session,
    TurnProgress, Usage,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Charge, Store, StoreError};
use knowledge_local::LocalStore;

use crate::support::{mark_deleting, open_store, seed_session};

struct Fixture {
    store: LocalStore,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    Fixture {
        store: open_store(dir.path()).await,
        _dir: dir,
    }
}

fn new_key() -> SessionKey {
    SessionKey {
        user: UserId::generate(),
        org: OrgId::generate(),
        session: SessionId::generate(),
    }
}

const NOW: Timestamp = Timestamp(1_795_000_000_000);

async fn texts(store: &dyn Store, key: &SessionKey) -> Vec<String> {
    store
        .list_events(key, 0, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.payload["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Appends one user message `text` to the session as it stands, retrying on conflicts.
async fn append(store: &dyn Store, key: &SessionKey, text: &str) {
    loop {
        let mut s = store.get_session(key).await.unwrap().unwrap();
        let expected = s.version;
        s.version += 1;
        let placed = s.place(NOW, vec![NewEvent::user_message(text)]);
        match store.commit_session(&s, expected, &placed, None).await {
            Ok(()) => return,
            Err(StoreError::Conflict) => continue,
            Err(e) => panic!("append failed: {e}"),
        }
    }
}

/// The sessions listed for `key`'s user and organisation, newest first.
async fn listed(store: &dyn Store, key: &SessionKey) -> Vec<SessionId> {
    let sessions = store.list_sessions(&key.user, &key.org, 50).await.unwrap();
    sessions.into_iter().map(|s| s.id).collect()
}

/// How many of the concurrent writes landed; every other one must have lost on `Conflict`.
async fn landed(tasks: Vec<tokio::task::JoinHandle<Result<(), StoreError>>>) -> usize {
    let mut landed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => landed += 1,
            Err(StoreError::Conflict) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    landed
}

#[tokio::test]
async fn a_session_reads_back_exactly_as_it_was_written() {
    let f = fixture().await;
    let key = new_key();
    let mut session = Session {
        key: key.clone(),
        title: "Ünïcode title".into(),
        created_at: NOW,
        updated_at: NOW,
        cancelled_at: Some(Timestamp(NOW.millis() - 5)),
        run_id: Some(RunId::generate()),
        deleting: false,
        pending: vec![1, 2],
        turn: Some(TurnProgress {
            step: 3,
            agent_calls: 2,
            from_seq: 2,
            awaiting: Awaiting::Tools(vec![3, 4]),
        }),
        next_seq: 1,
        version: 1,
    };
    let mut events = session.place(NOW, vec![NewEvent::user_message("hello")]);
    events.extend(session.place(
        NOW,
        vec![NewEvent::tool_use(
            "search",
            &serde_json::json!({ "query": "a \"quoted\" term" }),
        )],
    ));
    f.store.create_session(&session, &events).await.unwrap();
    assert_eq!(f.store.get_session(&key).await.unwrap(), Some(session));
    assert_eq!(f.store.list_events(&key, 0, 100).await.unwrap(), events);
}

#[tokio::test]
async fn creating_a_session_whose_key_is_taken_is_refused_and_changes_nothing() {
    let f = fixture().await;
    let key = new_key();
    let original = seed_session(&*f.store, &key, NOW, 2).await;
    let mut again = original.clone();
    again.title = "impostor".into();
    let events = vec![Event {
        seq: 1,
        kind: knowledge_core::domain::EventKind::UserMessage,
        payload: serde_json::json!({ "text": "overwritten" }),
        occurred_at: NOW,
    }];
    let refused = f.store.create_session(&again, &events).await;
    assert!(
        matches!(refused, Err(StoreError::AlreadyExists)),
        "{refused:?}"
    );
    assert_eq!(f.store.get_session(&key).await.unwrap(), Some(original));
    assert_eq!(texts(&*f.store, &key).await, ["m0", "m1"]);
}

#[tokio::test]
async fn events_follow_a_cursor_across_pages_in_order_exactly_once() {
    let f = fixture().await;
    let key = new_key();
    seed_session(&*f.store, &key, NOW, 230).await;
    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut after = 0;
    loop {
        let page = f.store.list_events(&key, after, 100).await.unwrap();
        pages.push(page.len());
        let Some(last) = page.last() else { break };
        after = last.seq;
        seen.extend(page.iter().map(|e| e.seq));
    }
    assert_eq!(pages, [100, 100, 30, 0]);
    assert_eq!(seen, (1..=230).collect::<Vec<u64>>());
    let middle: Vec<u64> = f
        .store
        .list_events(&key, 57, 10)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(middle, (58..=67).collect::<Vec<u64>>());
}

#[tokio::test]
async fn another_user_or_organisation_cannot_read_change_or_delete_the_session() {
    let f = fixture().await;
    let key = new_key();
    let mine = seed_session(&*f.store, &key, NOW, 3).await;
    let other_user = SessionKey {
        user: UserId::generate(),
        ..key.clone()
    };
    let other_org = SessionKey {
        org: OrgId::generate(),
        ..key.clone()
    };
    for other in [&other_user, &other_org] {
        assert_eq!(f.store.get_session(other).await.unwrap(), None);
        assert!(f.store.list_events(other, 0, 100).await.unwrap().is_empty());
        let mut forged = mine.clone();
        forged.key = other.clone();
        forged.version += 1;
        let placed = forged.place(NOW, vec![NewEvent::user_message("forged")]);
        let refused = f
            .store
            .commit_session(&forged, mine.version, &placed, None)
            .await;
        assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
        assert!(!f.store.delete_session(other).await.unwrap());
        let listed = f
            .store
            .list_sessions(&other.user, &other.org, 50)
            .await
            .unwrap();
        assert!(listed.is_empty(), "{listed:?}");
    }
    assert_eq!(f.store.get_session(&key).await.unwrap(), Some(mine));
    assert_eq!(texts(&*f.store, &key).await, ["m0", "m1", "m2"]);
}

#[tokio::test]
async fn of_concurrent_commits_at_one_version_exactly_one_lands() {
    let f = fixture().await;
    let key = new_key();
    let base = seed_session(&*f.store, &key, NOW, 1).await;
    let store = f.store.shared();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (store, mut s) = (store.clone(), base.clone());
            tokio::spawn(async move {
                s.version += 1;
                let placed = s.place(NOW, vec![NewEvent::user_message(&format!("w{i}"))]);
                store.commit_session(&s, base.version, &placed, None).await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let stored = f.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!((stored.version, stored.next_seq), (base.version + 1, 3));
    assert_eq!(f.store.list_events(&key, 0, 100).await.unwrap().len(), 2);
}

#[tokio::test]
async fn concurrent_appenders_that_retry_on_conflict_leave_a_gap_free_log() {
    let f = fixture().await;
    let key = new_key();
    seed_session(&*f.store, &key, NOW, 1).await;
    let store = f.store.shared();
    let tasks: Vec<_> = (0..6)
        .map(|w| {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move {
                for i in 0..5 {
                    append(&*store, &key, &format!("w{w}-{i}")).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let events = f.store.list_events(&key, 0, 1000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=31).collect::<Vec<u64>>());
    let texts: BTreeSet<String> = texts(&*f.store, &key).await.into_iter().collect();
    let expected: BTreeSet<String> = std::iter::once("m0".to_owned())
        .chain((0..6).flat_map(|w| (0..5).map(move |i| format!("w{w}-{i}"))))
        .collect();
    assert_eq!(texts, expected);
}

#[tokio::test]
async fn of_concurrent_run_claims_exactly_one_wins() {
    let f = fixture().await;
    let key = new_key();
    seed_session(&*f.store, &key, NOW, 1).await;
    let store = f.store.shared();
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move {
                loop {
                    let mut s = store.get_session(&key).await.unwrap().unwrap();
                    if s.run_id.is_some() {
                        return None;
                    }
                    let run = RunId::generate();
                    let expected = s.version;
                    s.version += 1;
                    s.run_id = Some(run.clone());
                    match store.commit_session(&s, expected, &[], None).await {
                        Ok(()) => return Some(run),
                        Err(StoreError::Conflict) => continue,
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        winners.extend(t.await.unwrap());
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let stored = f.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(stored.run_id.as_ref(), winners.first());
}

#[tokio::test]
async fn delete_removes_the_session_and_every_event_of_a_long_log_and_nothing_else() {
    let f = fixture().await;
    let key = new_key();
    let neighbour = SessionKey {
        session: SessionId::generate(),
        ..key.clone()
    };
    // 260 events: several pages of the delete's query, and eleven write batches of 25.
    seed_session(&*f.store, &key, NOW, 260).await;
    seed_session(&*f.store, &neighbour, NOW, 2).await;
    assert_eq!(f.store.rows_for(&key).await.unwrap(), (1, 260));

    assert!(f.store.delete_session(&key).await.unwrap());
    assert_eq!(f.store.rows_for(&key).await.unwrap(), (0, 0));
    assert_eq!(f.store.get_session(&key).await.unwrap(), None);
    assert!(f.store.list_events(&key, 0, 100).await.unwrap().is_empty());
    assert_eq!(
        listed(&*f.store, &key).await,
        std::slice::from_ref(&neighbour.session)
    );
    assert_eq!(f.store.rows_for(&neighbour).await.unwrap(), (1, 2));
    assert!(!f.store.delete_session(&key).await.unwrap());
}

#[tokio::test]
async fn a_session_being_deleted_is_never_listed_and_is_found_until_its_removal_finishes() {
    let f = fixture().await;
    let key = new_key();
    let kept = SessionKey {
        session: SessionId::generate(),
        ..key.clone()
    };
    seed_session(&*f.store, &key, NOW, 3).await;
    seed_session(&*f.store, &kept, NOW, 1).await;
    assert!(f.store.deleting_sessions(100).await.unwrap().is_empty());
    // The first half of a delete, and then the process dies.
    mark_deleting(&*f.store, &key).await;

    assert_eq!(
        listed(&*f.store, &key).await,
        std::slice::from_ref(&kept.session)
    );
    assert_eq!(
        f.store.deleting_sessions(100).await.unwrap(),
        std::slice::from_ref(&key)
    );
    assert_eq!(f.store.rows_for(&key).await.unwrap(), (1, 3));

    // Finishing it removes everything, and it is no longer among the deletes to finish.
    assert!(f.store.delete_session(&key).await.unwrap());
    assert_eq!(f.store.rows_for(&key).await.unwrap(), (0, 0));
    assert!(f.store.deleting_sessions(100).await.unwrap().is_empty());
    assert_eq!(f.store.rows_for(&kept).await.unwrap(), (1, 1));
}

#[tokio::test]
async fn a_commit_to_a_deleted_session_is_gone_and_writes_nothing() {
    let f = fixture().await;
    let key = new_key();
    let mut s = seed_session(&*f.store, &key, NOW, 1).await;
    assert!(f.store.delete_session(&key).await.unwrap());
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::status_idle()]);
    let charge = Charge {
        month: NOW.month(),
        micros: 10,
    };
    let refused = f
        .store
        .commit_session(&s, expected, &placed, Some(&charge))
        .await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    assert_eq!(f.store.rows_for(&key).await.unwrap(), (0, 0));
    let usage = f.store.get_usage(&key.org, &NOW.month()).await.unwrap();
    assert_eq!(usage, Usage::default());
}

#[tokio::test]
async fn sessions_list_newest_first_within_one_user_and_organisation() {
    let f = fixture().await;
    let key = new_key();
    let at = |offset: i64| Timestamp(NOW.millis() + offset);
    let mut ids = Vec::new();
    for offset in [1_000, 3_000, 2_000] {
        let k = SessionKey {
            session: SessionId::generate(),
            ..key.clone()
        };
        seed_session(&*f.store, &k, at(offset), 1).await;
        ids.push(k.session);
    }
    // The same session id space under another organisation and another user.
    seed_session(
        &*f.store,
        &SessionKey {
            org: OrgId::generate(),
            ..key.clone()
        },
        at(9_000),
        1,
    )
    .await;
    seed_session(
        &*f.store,
        &SessionKey {
            user: UserId::generate(),
            ..key.clone()
        },
        at(9_000),
        1,
    )
    .await;
    let listed = |limit| {
        let store = f.store.shared();
        let key = key.clone();
        async move {
            store
                .list_sessions(&key.user, &key.org, limit)
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed(50).await,
        [ids[1].clone(), ids[2].clone(), ids[0].clone()]
    );
    assert_eq!(listed(2).await, [ids[1].clone(), ids[2].clone()]);

    // An update moves a session to the top.
    let oldest = SessionKey {
        session: ids[0].clone(),
        ..key.clone()
    };
    let mut s = f.store.get_session(&oldest).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    let placed = s.place(at(5_000), vec![NewEvent::user_message("again")]);
    f.store
        .commit_session(&s, expected, &placed, None)
        .await
        .unwrap();
    assert_eq!(listed(50).await[0], ids[0]);
}

#[tokio::test]
async fn a_rate_window_is_replaced_only_at_the_version_it_was_read_at() {
    let f = fixture().await;
    let window = format!("message#{}", UserId::generate());
    assert_eq!(f.store.get_rate_window(&window).await.unwrap().version, 0);
    let hits = [Timestamp(NOW.millis() - 10), NOW];
    let expires = Timestamp(NOW.millis() + 60_000);
    f.store
        .put_rate_window(&window, &hits, 0, expires)
        .await
        .unwrap();
    let read = f.store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.as_slice(), read.version), (&hits[..], 1));
    for stale in [0, 2] {
        let refused = f
            .store
            .put_rate_window(&window, &[NOW], stale, expires)
            .await;
        assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    }

    let store = f.store.shared();
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (store, window) = (store.clone(), window.clone());
            tokio::spawn(async move {
                store
                    .put_rate_window(&window, &[Timestamp(NOW.millis() + i)], 1, expires)
                    .await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let read = f.store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.len(), read.version), (1, 2));
}

#[tokio::test]
async fn concurrent_queries_never_pass_the_monthly_quota_together() {
    let f = fixture().await;
    let org = OrgId::generate();
    let month = NOW.month();
    let store = f.store.shared();
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let (store, org, month) = (store.clone(), org.clone(), month.clone());
            tokio::spawn(async move { store.consume_query(&org, &month, Some(5), None).await })
        })
        .collect();
    let (mut admitted, mut refused) = (0, 0);
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Ok(u) => {
                assert!(u.queries <= 5, "{u:?}");
                admitted += 1
            }
            Err(r) => {
                assert_eq!(r.0.queries, 5);
                refused += 1
            }
        }
    }
    assert_eq!((admitted, refused), (5, 7));
    assert_eq!(f.store.get_usage(&org, &month).await.unwrap().queries, 5);
    // A zero quota refuses a month that has no usage yet.
    let empty = f.store.consume_query(&org, "2020-01", Some(0), None).await;
    assert_eq!(
        empty.unwrap(),
        Err(knowledge_core::ports::UsageRefused(Usage::default()))
    );
}

#[tokio::test]
async fn spend_charged_with_a_commit_counts_against_the_cost_cap() {
    let f = fixture().await;
    let key = new_key();
    let month = NOW.month();
    let counted = f
        .store
        .consume_query(&key.org, &month, None, Some(1_000))
        .await
        .unwrap();
    assert_eq!(
        counted,
        Ok(Usage {
            queries: 1,
            cost_micros: 0
        })
    );
    let mut s = seed_session(&*f.store, &key, NOW, 1).await;
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::agent_message("answer")]);
    let charge = Charge {
        month: month.clone(),
        micros: 1_500,
    };
    f.store
        .commit_session(&s, expected, &placed, Some(&charge))
        .await
        .unwrap();
    let spent = Usage {
        queries: 1,
        cost_micros: 1_500,
    };
    assert_eq!(f.store.get_usage(&key.org, &month).await.unwrap(), spent);
    let refused = f
        .store
        .consume_query(&key.org, &month, None, Some(1_000))
        .await
        .unwrap();
    assert_eq!(refused, Err(knowledge_core::ports::UsageRefused(spent)));
    assert_eq!(
        f.store.get_usage(&key.org, "1999-12").await.unwrap(),
        Usage::default()
    );
}

/// An audit entry a millisecond after the previous one, so the log's order is defined.
fn audit(org: &OrgId, action: AuditAction, target: &str) -> AuditEntry {
    static TICK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    let tick = TICK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    AuditEntry::new(org, NOW.plus_millis(tick), Actor::Scim, action, target)
}

fn provisioned(org: &OrgId, user_name: &str) -> Member {
    let mut m = Member::new(org.clone(), UserId::generate(), Role::Viewer, NOW);
    m.profile = Some(Profile {
        user_name: user_name.into(),
        external_id: Some("ext".into()),
        attributes: serde_json::Map::from_iter([("title".to_owned(), "Engineer".into())]),
    });
    m
}

async fn business_org(store: &dyn Store) -> Org {
    let org = Org {
        id: OrgId::generate(),
        name: "Acme".into(),
        plan: Plan::Business,
        status: OrgStatus::Suspended,
        sso_enabled: true,
        monthly_query_quota: Some(100),
        cost_cap_micros: None,
        created_at: NOW,
        scim_token_sha256: None,
    };
    store.put_org(&org).await.unwrap();
    org
}

#[tokio::test]
async fn organisations_and_memberships_read_back_and_are_removed_once() {
    let f = fixture().await;
    let org = business_org(&*f.store).await;
    assert_eq!(f.store.get_org(&org.id).await.unwrap(), Some(org.clone()));
    assert_eq!(f.store.get_org(&OrgId::generate()).await.unwrap(), None);

    let member = Member::new(org.id.clone(), UserId::generate(), Role::Admin, NOW);
    let added = audit(&org.id, AuditAction::MemberAdded, member.user.as_str());
    f.store.create_member(&member, &added).await.unwrap();
    assert!(matches!(
        f.store.create_member(&member, &added).await,
        Err(StoreError::AlreadyExists)
    ));
    let other_org = OrgId::generate();
    assert_eq!(
        f.store.get_member(&other_org, &member.user).await.unwrap(),
        None
    );
    assert_eq!(
        f.store.get_member(&org.id, &member.user).await.unwrap(),
        Some(member.clone())
    );
    let removed = audit(&org.id, AuditAction::MemberRemoved, member.user.as_str());
    assert!(
        f.store
            .remove_member(&org.id, &member.user, &removed)
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .remove_member(&org.id, &member.user, &removed)
            .await
            .unwrap()
    );
    assert_eq!(
        f.store.get_member(&org.id, &member.user).await.unwrap(),
        None
    );
    let actions: Vec<AuditAction> = f
        .store
        .list_audit(&org.id, 10)
        .await
        .unwrap()
        .iter()
        .map(|a| a.action)
        .collect();
    assert_eq!(
        actions,
        [AuditAction::MemberRemoved, AuditAction::MemberAdded]
    );
}

#[tokio::test]
async fn the_scim_token_hash_survives_settings_changes_and_is_replaced_by_a_new_one() {
    let f = fixture().await;
    let mut org = business_org(&*f.store).await;
    let generated = audit(&org.id, AuditAction::ScimTokenGenerated, org.id.as_str());
    f.store
        .set_scim_token(&org.id, "aa", &generated)
        .await
        .unwrap();
    org.monthly_query_quota = None;
    f.store.put_org(&org).await.unwrap();
    let read = f.store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(read.scim_token_sha256.as_deref(), Some("aa"));
    assert_eq!(read.monthly_query_quota, None);
    let again = audit(&org.id, AuditAction::ScimTokenGenerated, org.id.as_str());
    f.store.set_scim_token(&org.id, "bb", &again).await.unwrap();
    let read = f.store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(read.scim_token_sha256.as_deref(), Some("bb"));
    assert!(matches!(
        f.store
            .set_scim_token(&OrgId::generate(), "cc", &again)
            .await,
        Err(StoreError::Gone)
    ));
    assert_eq!(f.store.list_audit(&org.id, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_user_name_is_claimed_once_per_organisation_in_any_case_and_moves_with_updates() {
    let f = fixture().await;
    let (org, other) = (OrgId::generate(), OrgId::generate());
    let ann = provisioned(&org, "Ann@Example.org");
    let created = || audit(&org, AuditAction::UserProvisioned, "new");
    f.store.create_member(&ann, &created()).await.unwrap();
    assert!(matches!(
        f.store
            .create_member(&provisioned(&org, "ann@example.ORG"), &created())
            .await,
        Err(StoreError::AlreadyExists)
    ));
    // Another organisation has its own names.
    f.store
        .create_member(&provisioned(&other, "ann@example.org"), &created())
        .await
        .unwrap();
    let found = f
        .store
        .find_member_by_user_name(&org, "ann@example.org")
        .await
        .unwrap();
    assert_eq!(found, Some(ann.clone()));

    let bob = provisioned(&org, "bob@example.org");
    f.store.create_member(&bob, &created()).await.unwrap();
    let listed: Vec<UserId> = f
        .store
        .list_members(&org)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.user)
        .collect();
    let mut expected = vec![ann.user.clone(), bob.user.clone()];
    expected.sort();
    assert_eq!(listed, expected);

    // Renaming Ann frees her old name and claims the new one; taking Bob's is refused.
    let updated = || audit(&org, AuditAction::UserUpdated, "changed");
    let mut renamed = ann.clone();
    renamed.version += 1;
    renamed.profile.as_mut().unwrap().user_name = "ann.lee@example.org".into();
    f.store
        .update_member(&ann, &renamed, &updated())
        .await
        .unwrap();
    assert_eq!(
        f.store
            .find_member_by_user_name(&org, "ann@example.org")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        f.store
            .find_member_by_user_name(&org, "ann.lee@example.org")
            .await
            .unwrap()
            .map(|m| m.user),
        Some(ann.user.clone())
    );
    let mut taking = renamed.clone();
    taking.version += 1;
    taking.profile.as_mut().unwrap().user_name = "BOB@example.org".into();
    assert!(matches!(
        f.store.update_member(&renamed, &taking, &updated()).await,
        Err(StoreError::AlreadyExists)
    ));
    // A stale version conflicts; a removed member is gone.
    assert!(matches!(
        f.store.update_member(&ann, &renamed, &updated()).await,
        Err(StoreError::Conflict)
    ));
    let removed = audit(&org, AuditAction::UserDeleted, bob.user.as_str());
    f.store
        .remove_member(&org, &bob.user, &removed)
        .await
        .unwrap();
    let mut stale = bob.clone();
    stale.version += 1;
    assert!(matches!(
        f.store.update_member(&bob, &stale, &updated()).await,
        Err(StoreError::Gone)
    ));
    // Bob's name is free again.
    f.store
        .create_member(&provisioned(&org, "bob@example.org"), &created())
        .await
        .unwrap();
}

#[tokio::test]
async fn concurrent_creates_of_one_user_name_claim_it_once() {
    let f = fixture().await;
    let org = OrgId::generate();
    let attempts: Vec<_> = (0..8)
        .map(|_| {
            let store = f.store.shared();
            let member = provisioned(&org, "same@example.org");
            // Each with its own audit entry, so only the name can collide.
            let created = audit(&org, AuditAction::UserProvisioned, member.user.as_str());
            tokio::spawn(async move { store.create_member(&member, &created).await })
        })
        .collect();
    let mut won = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(()) => won += 1,
            Err(StoreError::AlreadyExists | StoreError::Conflict) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(f.store.list_members(&org).await.unwrap().len(), 1);
}

#[tokio::test]
async fn removing_a_member_removes_their_data_in_the_same_step() {
    let f = fixture().await;
    let org = OrgId::generate();
    let ann = provisioned(&org, "ann@example.org");
    let created = audit(&org, AuditAction::UserProvisioned, ann.user.as_str());
    f.store.create_member(&ann, &created).await.unwrap();
    let stranger = UserId::generate();
    let token = MemberData {
        kind: MemberDataKind::IntegrationToken,
        name: "crm".into(),
        value: "sealed:abc".into(),
    };
    let memory = MemberData {
        kind: MemberDataKind::AgentMemory,
        name: "notes".into(),
        value: "prefers short answers".into(),
    };
    assert!(matches!(
        f.store.put_member_data(&org, &stranger, &token).await,
        Err(StoreError::Gone)
    ));
    for d in [&token, &memory] {
        f.store.put_member_data(&org, &ann.user, d).await.unwrap();
    }
    let mut held = f.store.list_member_data(&org, &ann.user).await.unwrap();
    held.sort_by_key(|d| d.kind);
    assert_eq!(held, [token.clone(), memory.clone()]);
    // Writing data moves the member's version, so a removal prepared before it retries.
    let now = f.store.get_member(&org, &ann.user).await.unwrap().unwrap();
    assert_eq!(now.version, ann.version + 2);

    let removed = audit(&org, AuditAction::UserDeactivated, ann.user.as_str());
    assert!(
        f.store
            .remove_member(&org, &ann.user, &removed)
            .await
            .unwrap()
    );
    assert_eq!(f.store.list_member_data(&org, &ann.user).await.unwrap(), []);
    assert_eq!(f.store.get_member(&org, &ann.user).await.unwrap(), None);
    assert_eq!(
        f.store
            .find_member_by_user_name(&org, "ann@example.org")
            .await
            .unwrap(),
        None
    );
    let log = f.store.list_audit(&org, 10).await.unwrap();
    assert_eq!(
        log.iter().map(|a| a.action).collect::<Vec<_>>(),
        [AuditAction::UserDeactivated, AuditAction::UserProvisioned]
    );
}

fn mcp(name: &str, url: &str, auth: IntegrationAuth) -> IntegrationConfig {
    IntegrationConfig {
        name: name.into(),
        url: url.into(),
        auth,
        created_at: NOW,
    }
}

#[tokio::test]
async fn integrations_are_listed_by_name_replaced_by_name_and_removed_once_with_their_audit() {
    let f = fixture().await;
    let org = business_org(&*f.store).await;
    let other = business_org(&*f.store).await;
    let audit = |action, target: &str| AuditEntry::new(&org.id, NOW, Actor::Admin, action, target);
    let connect = AuditAction::IntegrationConnected;
    let wiki = mcp("wiki", "https://wiki.example/mcp", IntegrationAuth::PerUser);
    let crm = mcp("crm", "http://127.0.0.1:9/mcp", IntegrationAuth::None);
    f.store
        .put_integration(&org.id, &wiki, &audit(connect, "wiki"))
        .await
        .unwrap();
    f.store
        .put_integration(&org.id, &crm, &audit(connect, "crm"))
        .await
        .unwrap();
    assert_eq!(
        f.store.list_integrations(&org.id).await.unwrap(),
        vec![crm.clone(), wiki.clone()]
    );
    assert!(
        f.store
            .list_integrations(&other.id)
            .await
            .unwrap()
            .is_empty()
    );

    let moved = mcp("wiki", "https://wiki2.example/mcp", IntegrationAuth::None);
    f.store
        .put_integration(&org.id, &moved, &audit(connect, "wiki"))
        .await
        .unwrap();
    assert_eq!(
        f.store.list_integrations(&org.id).await.unwrap(),
        vec![crm.clone(), moved]
    );

    let disconnect = AuditAction::IntegrationDisconnected;
    assert!(
        f.store
            .remove_integration(&org.id, "wiki", &audit(disconnect, "wiki"))
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .remove_integration(&org.id, "wiki", &audit(disconnect, "wiki"))
            .await
            .unwrap()
    );
    assert_eq!(f.store.list_integrations(&org.id).await.unwrap(), vec![crm]);
    let actions: Vec<AuditAction> = f
        .store
        .list_audit(&org.id, 10)
        .await
        .unwrap()
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions.iter().filter(|a| **a == connect).count(), 3);
    assert_eq!(actions.iter().filter(|a| **a == disconnect).count(), 1);
}
