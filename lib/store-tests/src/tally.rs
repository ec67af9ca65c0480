//! Cases of a member's month by day and by model: questions counted on their day by the gate,
//! each charged call's tokens and spend on its day and model by the commit, in the same
//! transactions as the month's counters, and read back by the member and by the listing.

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, DayUsage, Member, MemberCaps, ModelUsage, Role, Usage};
use knowledge_core::ids::SessionKey;
use knowledge_core::ports::{Charge, StoreError, TokenUsage};

use crate::caps::ask_on;
use crate::{NOW, Tested, audit, member_with_session, new_key};

/// A call to `model` on `day`, charged with an answer committed to `key`'s session.
async fn call(
    store: &dyn Tested, key: &SessionKey, day: u8, model: &str, tokens: (u64, u64), micros: u64,
) {
    let mut s = store.get_session(key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    let charge = Charge {
        month: NOW.month(),
        day,
        model: model.to_owned(),
        tokens: TokenUsage {
            input: tokens.0,
            output: tokens.1,
        },
        micros,
    };
    store
        .commit_session(&s, expected, &[], Some(&charge), None)
        .await
        .unwrap();
}

fn another(key: &SessionKey) -> SessionKey {
    SessionKey {
        session: new_key().session,
        ..key.clone()
    }
}

pub async fn questions_and_calls_are_counted_by_day_and_by_model_and_read_back(
    store: Arc<dyn Tested>,
) {
    let ann = new_key();
    let bob = SessionKey {
        org: ann.org.clone(),
        ..new_key()
    };
    let month = NOW.month();
    let unlimited = MemberCaps::UNLIMITED;
    ask_on(&*store, &ann, 3, None, unlimited).await.unwrap();
    ask_on(&*store, &another(&ann), 3, None, unlimited)
        .await
        .unwrap();
    ask_on(&*store, &another(&ann), 17, None, unlimited)
        .await
        .unwrap();
    ask_on(&*store, &bob, 17, None, unlimited).await.unwrap();
    // A model's name may hold the separator the store uses.
    let (a, b) = ("gpt-4o-mini", "anthropic.claude:1");
    call(&*store, &ann, 3, a, (100, 20), 700).await;
    call(&*store, &ann, 3, a, (50, 10), 300).await;
    call(&*store, &ann, 17, b, (7, 3), 2_000).await;
    call(&*store, &bob, 17, a, (1, 1), 5).await;

    let mine = store
        .get_member_usage(&ann.org, &ann.user, &month)
        .await
        .unwrap();
    let spent = Usage {
        queries: 3,
        cost_micros: 3_000,
    };
    assert_eq!(mine.usage, spent);
    let day3 = DayUsage {
        questions: 2,
        input_tokens: 150,
        output_tokens: 30,
        cost_micros: 1_000,
    };
    let day17 = DayUsage {
        questions: 1,
        input_tokens: 7,
        output_tokens: 3,
        cost_micros: 2_000,
    };
    assert_eq!(
        mine.days.clone().into_iter().collect::<Vec<_>>(),
        [(3, day3), (17, day17)]
    );
    let by_model = ModelUsage {
        calls: 2,
        input_tokens: 150,
        output_tokens: 30,
        cost_micros: 1_000,
    };
    assert_eq!(mine.models.get(a), Some(&by_model));
    assert_eq!(
        mine.models.get(b).map(|m| (m.calls, m.cost_micros)),
        Some((1, 2_000))
    );
    assert_eq!(mine.models.len(), 2);

    // The listing holds the same months; the organisation's counters are their sum.
    let mut each = crate::member_months(&*store, &ann.org, &month).await;
    each.sort_by_key(|(_, m)| m.usage.queries);
    assert_eq!(each.len(), 2);
    assert_eq!(each[0].0, bob.user);
    assert_eq!(each[0].1.days.get(&17).map(|d| d.questions), Some(1));
    assert_eq!(each[1].0, ann.user);
    assert_eq!(each[1].1, mine);
    let org = store.get_usage(&ann.org, &month).await.unwrap();
    assert_eq!(
        org,
        Usage {
            queries: 4,
            cost_micros: 3_005
        }
    );

    // Nobody else's month, nor another month, holds any of it.
    let stranger = new_key();
    let none = store
        .get_member_usage(&stranger.org, &ann.user, &month)
        .await
        .unwrap();
    assert_eq!(none, Default::default());
    let other_month = store
        .get_member_usage(&ann.org, &ann.user, "1999-12")
        .await
        .unwrap();
    assert_eq!(other_month, Default::default());
}

pub async fn a_refused_question_counts_on_no_day(store: Arc<dyn Tested>) {
    let key = new_key();
    let one = MemberCaps {
        queries: Some(1),
        cost_micros: None,
    };
    ask_on(&*store, &key, 9, None, one).await.unwrap();
    let refused = ask_on(&*store, &another(&key), 9, None, one).await;
    assert!(
        matches!(refused, Err(StoreError::MemberLimit(_))),
        "{refused:?}"
    );
    let mine = (store.get_member_usage(&key.org, &key.user, &NOW.month()))
        .await
        .unwrap();
    assert_eq!(mine.usage.queries, 1);
    assert_eq!(mine.days.get(&9).map(|d| d.questions), Some(1));
    assert_eq!(mine.days.len(), 1);
}

pub async fn the_members_months_page_by_user_id_each_once(store: Arc<dyn Tested>) {
    let first = new_key();
    let mut users = Vec::new();
    for _ in 0..5 {
        let key = SessionKey {
            org: first.org.clone(),
            ..new_key()
        };
        ask_on(&*store, &key, 4, None, MemberCaps::UNLIMITED)
            .await
            .unwrap();
        users.push(key.user);
    }
    users.sort();
    let month = NOW.month();
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = (store.list_member_usage_after(&first.org, &month, after.as_ref(), 2))
            .await
            .unwrap();
        assert!(page.len() <= 2, "{page:?}");
        after = page.last().map(|(user, _)| user.clone());
        let done = page.len() < 2;
        paged.extend(page);
        if done {
            break;
        }
    }
    let ids: Vec<_> = paged.iter().map(|(user, _)| user.clone()).collect();
    assert_eq!(ids, users);
    assert!(
        paged
            .iter()
            .all(|(_, m)| m.days.get(&4).map(|d| d.questions) == Some(1))
    );
    let mut all = crate::member_months(&*store, &first.org, &month).await;
    all.sort_by(|(a, _), (b, _)| a.cmp(b));
    assert_eq!(all, paged);
}

pub async fn a_pages_members_are_read_at_once_and_only_this_organisations(store: Arc<dyn Tested>) {
    let ann = new_key();
    let bob = SessionKey {
        org: ann.org.clone(),
        ..new_key()
    };
    for key in [&ann, &bob] {
        let member = Member::new(key.org.clone(), key.user.clone(), Role::Viewer, NOW);
        let added = audit(&key.org, AuditAction::MemberAdded, key.user.as_str());
        store.create_member(&member, &added).await.unwrap();
    }
    // A member of another organisation, and someone who is nobody's member.
    let stranger = member_with_session(&*store, 1).await;
    let nobody = knowledge_core::ids::UserId::generate();
    let asked = [
        ann.user.clone(),
        stranger.user.clone(),
        bob.user.clone(),
        nobody,
    ];
    let mut found: Vec<_> = (store.get_members(&ann.org, &asked))
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.org, m.user))
        .collect();
    found.sort_by(|a, b| a.1.cmp(&b.1));
    let mut want = vec![
        (ann.org.clone(), ann.user.clone()),
        (ann.org.clone(), bob.user.clone()),
    ];
    want.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(found, want);
    assert!(store.get_members(&ann.org, &[]).await.unwrap().is_empty());
}
