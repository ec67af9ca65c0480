//! Cases of each member's monthly allowance: counted with the organisation's quota in the
//! gate's own transaction, refused without taking a slot, exact under concurrency, charged
//! with the answer's spend, and a member's own allowance kept on their record.

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, MemberCaps, Usage};
use knowledge_core::ids::{SessionKey, UserId};
use knowledge_core::ports::{Gate, QueryCount, StoreError};

use crate::limits::{answer_charged, opening, update};
use crate::{NOW, Tested, audit, member_with_session, new_key};

/// One question by `key`'s member through a fresh rate window of its own, so that only the
/// usage limits can refuse it: on `day` of this month, under the organisation's `quota`.
pub(crate) async fn ask_on(
    store: &dyn Tested, key: &SessionKey, day: u8, quota: Option<u64>, member: MemberCaps,
) -> Result<(), StoreError> {
    let month = NOW.month();
    let window = format!("create#{}", key.session);
    let (session, events) = opening(key);
    let gate = Gate {
        rate: update(&window, &[NOW], 0),
        query: Some(QueryCount {
            month: &month,
            day,
            quota,
            cap_micros: None,
            member,
        }),
    };
    store.create_session(&session, &events, Some(&gate)).await
}

/// [`ask_on`] today.
async fn ask(
    store: &dyn Tested, key: &SessionKey, quota: Option<u64>, member: MemberCaps,
) -> Result<(), StoreError> {
    ask_on(store, key, NOW.day(), quota, member).await
}

/// How many of `tasks` asked successfully; each checked its own refusal.
async fn answered(tasks: Vec<tokio::task::JoinHandle<Result<(), StoreError>>>) -> usize {
    let mut answered = 0;
    for t in tasks {
        answered += usize::from(t.await.unwrap().is_ok());
    }
    answered
}

fn questions(n: u64) -> MemberCaps {
    MemberCaps {
        queries: Some(n),
        cost_micros: None,
    }
}

pub async fn a_member_at_their_allowance_is_refused_without_a_slot_and_others_still_ask(
    store: Arc<dyn Tested>,
) {
    let ann = new_key();
    let bob = SessionKey {
        org: ann.org.clone(),
        ..new_key()
    };
    let month = NOW.month();
    for _ in 0..2 {
        let key = SessionKey {
            session: new_key().session,
            ..ann.clone()
        };
        ask(&*store, &key, None, questions(2)).await.unwrap();
    }
    let third = SessionKey {
        session: new_key().session,
        ..ann.clone()
    };
    let refused = ask(&*store, &third, None, questions(2)).await;
    let at_cap = Usage {
        queries: 2,
        cost_micros: 0,
    };
    assert!(
        matches!(refused, Err(StoreError::MemberLimit(u)) if u == at_cap),
        "{refused:?}"
    );
    // Nothing of the refused question stays: no session, no event, no slot, no count.
    assert_eq!(store.rows_for(&third).await.unwrap(), (0, 0));
    let window = format!("create#{}", third.session);
    assert_eq!(store.get_rate_window(&window).await.unwrap().version, 0);
    assert_eq!(store.get_usage(&ann.org, &month).await.unwrap().queries, 2);

    // Another member of the organisation still asks; each is counted on their own.
    ask(&*store, &bob, None, questions(2)).await.unwrap();
    assert_eq!(store.get_usage(&ann.org, &month).await.unwrap().queries, 3);
    let mut each = crate::member_months(&*store, &ann.org, &month).await;
    each.sort_by_key(|(_, u)| u.usage.queries);
    let one = Usage {
        queries: 1,
        cost_micros: 0,
    };
    let counters: Vec<_> = each.iter().map(|(u, m)| (u.clone(), m.usage)).collect();
    assert_eq!(
        counters,
        [(bob.user.clone(), one), (ann.user.clone(), at_cap)]
    );
    assert!(
        crate::member_months(&*store, &ann.org, "1999-12")
            .await
            .is_empty(),
        "another month holds nothing"
    );
    // A zero allowance refuses a member who never asked.
    let carol = SessionKey {
        org: ann.org.clone(),
        ..new_key()
    };
    let refused = ask(&*store, &carol, None, questions(0)).await;
    assert!(matches!(refused, Err(StoreError::MemberLimit(u)) if u == Usage::default()));
}

pub async fn one_members_concurrent_questions_never_pass_their_allowance(store: Arc<dyn Tested>) {
    // Twelve questions at once by one member, as from several tabs.
    let member = new_key();
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let store = store.clone();
            let key = SessionKey {
                session: new_key().session,
                ..member.clone()
            };
            tokio::spawn(async move {
                let asked = ask(&*store, &key, None, questions(5)).await;
                let rows = store.rows_for(&key).await.unwrap();
                match asked {
                    Ok(()) => assert_eq!(rows, (1, 1)),
                    Err(StoreError::MemberLimit(u)) => {
                        assert_eq!((u.queries, rows), (5, (0, 0)));
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
                asked
            })
        })
        .collect();
    assert_eq!(answered(tasks).await, 5);
    let month = NOW.month();
    let each = crate::member_months(&*store, &member.org, &month).await;
    assert_eq!(each.len(), 1);
    assert_eq!(each[0].1.usage.queries, 5);
    assert_eq!(
        store.get_usage(&member.org, &month).await.unwrap().queries,
        5
    );
}

pub async fn members_racing_for_the_organisations_quota_never_pass_it_or_their_own(
    store: Arc<dyn Tested>,
) {
    // Four members, three questions each at once; the organisation allows 8, each member 2.
    let org = new_key().org;
    let members: Vec<UserId> = (0..4).map(|_| UserId::generate()).collect();
    let tasks: Vec<_> = members
        .iter()
        .flat_map(|user| std::iter::repeat_n(user.clone(), 3))
        .map(|user| {
            let store = store.clone();
            let key = SessionKey {
                org: org.clone(),
                user,
                ..new_key()
            };
            tokio::spawn(async move {
                let asked = ask(&*store, &key, Some(8), questions(2)).await;
                match &asked {
                    Ok(()) | Err(StoreError::MemberLimit(_) | StoreError::UsageLimit(_)) => {}
                    Err(e) => panic!("unexpected {e}"),
                }
                asked
            })
        })
        .collect();
    // Each member's allowance binds first: 4 × 2 = 8, the organisation's quota exactly.
    assert_eq!(answered(tasks).await, 8);
    let month = NOW.month();
    assert_eq!(store.get_usage(&org, &month).await.unwrap().queries, 8);
    let each = crate::member_months(&*store, &org, &month).await;
    assert_eq!(each.len(), 4);
    assert!(each.iter().all(|(_, u)| u.usage.queries == 2), "{each:?}");
    // One more member is refused by the organisation's quota, which is reported first.
    let late = SessionKey {
        org: org.clone(),
        ..new_key()
    };
    let refused = ask(&*store, &late, Some(8), questions(2)).await;
    assert!(matches!(refused, Err(StoreError::UsageLimit(u)) if u.queries == 8));
}

pub async fn spend_charged_with_an_answer_counts_against_the_members_allowance(
    store: Arc<dyn Tested>,
) {
    let key = member_with_session(&*store, 1).await;
    let month = NOW.month();
    let allowance = MemberCaps {
        queries: None,
        cost_micros: Some(1_000),
    };
    let mut s = store.get_session(&key).await.unwrap().unwrap();
    answer_charged(&*store, &mut s, &month, 1_500).await;
    let spent = Usage {
        queries: 0,
        cost_micros: 1_500,
    };
    let each = crate::member_months(&*store, &key.org, &month).await;
    assert_eq!(each.len(), 1);
    assert_eq!((&each[0].0, each[0].1.usage), (&key.user, spent));
    assert_eq!(store.get_usage(&key.org, &month).await.unwrap(), spent);

    // The member's next question is refused by their spending allowance.
    let next = SessionKey {
        session: new_key().session,
        ..key.clone()
    };
    let refused = ask(&*store, &next, None, allowance).await;
    assert!(
        matches!(refused, Err(StoreError::MemberLimit(u)) if u == spent),
        "{refused:?}"
    );
    assert_eq!(store.rows_for(&next).await.unwrap(), (0, 0));
}

pub async fn a_members_own_allowance_reads_back_and_is_given_back(store: Arc<dyn Tested>) {
    let key = member_with_session(&*store, 0).await;
    let member = store
        .get_member(&key.org, &key.user)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(member.caps, None);
    let mut next = member.clone();
    next.caps = Some(questions(4));
    next.version += 1;
    let set = audit(&key.org, AuditAction::MemberCapsChanged, key.user.as_str());
    store.update_member(&member, &next, &set).await.unwrap();
    let read = store
        .get_member(&key.org, &key.user)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.caps, Some(questions(4)));

    let mut back = read.clone();
    back.caps = None;
    back.version += 1;
    let unset = audit(&key.org, AuditAction::MemberCapsChanged, key.user.as_str());
    store.update_member(&read, &back, &unset).await.unwrap();
    let read = store
        .get_member(&key.org, &key.user)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((read.caps, read.version), (None, back.version));
}
