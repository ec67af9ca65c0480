//! The storage ports' contract as executable cases, run by each adapter's own tests on a fresh
//! store: `knowledge-sqlite` on a temporary file, `knowledge-dynamo` on a table of its own in a
//! DynamoDB stand-in (moto). One module per role; [`conformance!`] declares every case as a
//! test of the crate that invokes it.

pub mod admin;
pub mod approvals;
pub mod batch;
pub mod caps;
pub mod directory;
pub mod documents;
pub mod drafts;
pub mod grants;
pub mod groups;
pub mod integrations;
pub mod limits;
pub mod memory;
pub mod orgs;
pub mod sessions;
pub mod tally;
pub mod tickets;
pub mod titles;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, Member, NewEvent, Org, OrgStatus, Plan, Profile, Role, Session,
    SsoConfig,
};
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Store, StoreError, StoredRows};

/// A store under test: every port, and the row counts a delete is checked by.
pub trait Tested: Store + StoredRows {}

impl<T: Store + StoredRows + ?Sized> Tested for T {}

/// The instant the cases write at.
pub const NOW: Timestamp = Timestamp(1_795_000_000_000);

pub async fn texts(store: &dyn Store, key: &SessionKey) -> Vec<String> {
    store
        .list_events(key, 0, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.body.text().unwrap_or_default().to_owned())
        .collect()
}

/// Appends one user message `text` to the session as it stands, retrying on conflicts.
pub async fn append(store: &dyn Store, key: &SessionKey, text: &str) {
    loop {
        let mut s = store.get_session(key).await.unwrap().unwrap();
        let expected = s.version;
        s.version += 1;
        let placed = s.place(NOW, vec![NewEvent::user_message(text)]);
        match store
            .commit_session(&s, expected, &placed, None, None)
            .await
        {
            Ok(()) => return,
            Err(StoreError::Conflict) => continue,
            Err(e) => panic!("append failed: {e}"),
        }
    }
}

/// The sessions listed for `key`'s user and organisation, newest first.
pub async fn listed(store: &dyn Store, key: &SessionKey) -> Vec<SessionId> {
    let sessions = store.list_sessions(&key.user, &key.org, 50).await.unwrap();
    sessions.into_iter().map(|s| s.id).collect()
}

/// How many of the concurrent writes landed; every other one must have lost on `Conflict`.
pub async fn landed(tasks: Vec<tokio::task::JoinHandle<Result<(), StoreError>>>) -> usize {
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

/// A key of a new session of a new user in a new organisation.
pub fn new_key() -> SessionKey {
    SessionKey {
        user: UserId::generate(),
        org: OrgId::generate(),
        session: SessionId::generate(),
    }
}

/// Writes an idle session under `key` whose log holds `events` user messages `m0`, `m1`, ...
/// numbered from 1: created with the first, the rest committed fifty at a time, as a store's
/// transactions are bounded (DynamoDB's at 100 items).
pub async fn seed_session(
    store: &dyn Store, key: &SessionKey, now: Timestamp, events: usize,
) -> Session {
    let message = |i: usize| NewEvent::user_message(&format!("m{i}"));
    let mut session = Session::new(key.clone(), "seeded".into(), now);
    let first = session.place(now, vec![message(0)]);
    store.create_session(&session, &first, None).await.unwrap();
    let mut i = 1;
    while i < events {
        let chunk: Vec<NewEvent> = (i..events.min(i + 50)).map(message).collect();
        i += chunk.len();
        let expected = session.version;
        session.version += 1;
        let placed = session.place(now, chunk);
        store
            .commit_session(&session, expected, &placed, None, None)
            .await
            .unwrap();
    }
    session
}

/// Commits the first half of a delete of `key` (the session marked `deleting`, its rows still
/// there), as a process that dies between a delete's two writes leaves it.
pub async fn mark_deleting(store: &dyn Store, key: &SessionKey) {
    let mut s = store.get_session(key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    s.deleting = true;
    store
        .commit_session(&s, expected, &[], None, None)
        .await
        .unwrap();
}

/// An audit entry a millisecond after the previous one, so the log's order is defined.
pub fn audit(org: &OrgId, action: AuditAction, target: &str) -> AuditEntry {
    static TICK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    let tick = TICK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    AuditEntry::new(org, NOW.plus_millis(tick), Actor::Scim, action, target)
}

/// An SSO configuration at `version` routing `domains`.
pub fn sso(version: u64, domains: &[&str]) -> SsoConfig {
    SsoConfig {
        issuer: "https://idp.example.com".into(),
        client_id: "client".into(),
        client_secret_sealed: "v1.00".into(),
        user_name_claim: "email".into(),
        email_domains: domains.iter().map(|d| d.to_string()).collect(),
        enabled: true,
        just_in_time: false,
        updated_at: NOW,
        version,
    }
}

/// A fresh e-mail domain, so that cases never meet on one.
pub fn domain() -> String {
    format!("d{}.example.com", uuid::Uuid::new_v4().simple())
}

pub fn provisioned(org: &OrgId, user_name: &str) -> Member {
    let mut m = Member::new(org.clone(), UserId::generate(), Role::Viewer, NOW);
    m.profile = Some(Profile {
        user_name: user_name.into(),
        external_id: Some("ext".into()),
        attributes: serde_json::Map::from_iter([("title".to_owned(), "Engineer".into())]),
    });
    m
}

pub async fn business_org(store: &dyn Store) -> Org {
    let org = Org {
        status: OrgStatus::Suspended,
        monthly_query_quota: Some(100),
        ..Org::new(OrgId::generate(), "Acme", Plan::Business, NOW)
    };
    store.put_org(&org).await.unwrap();
    org
}

/// A viewer of a new business organisation with a session of `events` user messages (as
/// [`seed_session`] writes them); the session's key.
pub async fn member_with_session(store: &dyn Store, events: usize) -> SessionKey {
    let org = business_org(store).await;
    let member = Member::new(org.id.clone(), UserId::generate(), Role::Viewer, NOW);
    let added = audit(&org.id, AuditAction::MemberAdded, "member");
    store.create_member(&member, &added).await.unwrap();
    let key = SessionKey {
        user: member.user,
        org: org.id,
        session: SessionId::generate(),
    };
    seed_session(store, &key, NOW, events).await;
    key
}

/// Every member's month of `org` in `month`, by user id, read a page of 100 at a time.
pub async fn member_months(
    store: &dyn Store, org: &OrgId, month: &str,
) -> Vec<(UserId, knowledge_core::domain::MonthUsage)> {
    let mut all: Vec<(UserId, knowledge_core::domain::MonthUsage)> = Vec::new();
    loop {
        let after = all.last().map(|(user, _)| user.clone());
        let page = (store.list_member_usage_after(org, month, after.as_ref(), 100))
            .await
            .unwrap();
        let done = page.len() < 100;
        all.extend(page);
        if done {
            return all;
        }
    }
}

/// Declares every case of the contract as a `#[tokio::test]` of the invoking crate, in one
/// module per role, each on the fresh store that `$open().await` returns as
/// `(Arc<dyn Tested>, guard)`; the guard (a temporary directory, say) lives as long as the case.
/// An `$open` may return that in an `Option` instead, `None` skipping the case ([`Opened`]).
#[macro_export]
macro_rules! conformance {
    ($open:path) => {
        $crate::cases! {
            $open;
            documents:
                collections_read_back_within_their_organisation_and_change_only_at_their_version,
                a_document_reads_back_alone_in_a_batch_and_in_its_collection_and_nowhere_else,
                documents_charge_the_organisations_storage_which_never_passes_its_allowance,
                concurrent_uploads_never_pass_the_allowance_together,
                a_document_changes_only_at_its_version_and_only_in_a_collection_that_exists,
                deleting_a_collection_takes_every_document_of_it_and_their_bytes_and_nothing_else,
                a_worker_finds_each_organisations_longest_waiting_document_without_a_live_lease,
                the_sweep_finds_uploads_announced_before_a_time_the_oldest_first_until_they_move_on;
            sessions:
                a_session_reads_back_exactly_as_it_was_written,
                creating_a_session_whose_key_is_taken_is_refused_and_changes_nothing,
                events_follow_a_cursor_across_pages_in_order_exactly_once,
                another_user_or_organisation_cannot_read_change_or_delete_the_session,
                of_concurrent_commits_at_one_version_exactly_one_lands,
                concurrent_appenders_that_retry_on_conflict_leave_a_gap_free_log,
                of_concurrent_run_claims_exactly_one_wins,
                delete_removes_the_session_and_every_event_of_a_long_log_and_nothing_else,
                a_session_being_deleted_is_never_listed_and_is_found_until_its_removal_finishes,
                a_commit_to_a_deleted_session_is_gone_and_writes_nothing,
                a_commit_of_the_record_alone_lands_once_at_its_version_and_never_revives_a_deleted_session,
                sessions_list_newest_first_within_one_user_and_organisation,
                runs_are_found_by_when_they_go_stale_and_leave_the_index_when_they_end;
            approvals:
                an_answer_rewrites_the_calls_event_with_the_session_at_its_version_only,
                a_session_waiting_for_its_member_is_marked_in_the_list_and_swept_at_its_expiry;
            drafts:
                a_draft_is_read_with_its_session_replaced_by_the_next_and_removed_by_a_commit,
                a_draft_for_another_run_or_a_session_being_deleted_is_refused_and_read_by_no_one_else,
                a_draft_reads_back_exactly_as_written;
            titles:
                sessions_are_found_by_every_word_of_their_titles_newest_first_within_one_member,
                a_renamed_title_is_listed_and_found_and_the_session_keeps_its_place;
            limits:
                a_rate_window_is_replaced_only_at_the_version_it_was_read_at,
                concurrent_gated_creates_never_pass_the_monthly_quota_together,
                a_zero_quota_or_cap_refuses_a_month_with_no_usage_yet,
                a_gate_whose_rate_window_moved_refuses_the_write_and_changes_nothing,
                spend_charged_with_a_commit_counts_against_the_cost_cap;
            caps:
                a_member_at_their_allowance_is_refused_without_a_slot_and_others_still_ask,
                one_members_concurrent_questions_never_pass_their_allowance,
                members_racing_for_the_organisations_quota_never_pass_it_or_their_own,
                spend_charged_with_an_answer_counts_against_the_members_allowance,
                a_members_own_allowance_reads_back_and_is_given_back;
            tally:
                questions_and_calls_are_counted_by_day_and_by_model_and_read_back,
                a_refused_question_counts_on_no_day,
                the_members_months_page_by_user_id_each_once,
                a_pages_members_are_read_at_once_and_only_this_organisations;
            batch:
                a_batch_reads_every_record_asked_for_as_its_own_getter_does,
                a_batch_reads_nothing_of_another_user_or_organisation;
            orgs:
                the_scim_token_hash_survives_settings_changes_and_is_replaced_by_a_new_one,
                sso_reads_back_survives_settings_changes_and_moves_only_at_its_version,
                an_email_domain_routes_to_one_organisation_and_is_released_when_dropped,
                of_concurrent_first_sso_configurations_exactly_one_lands;
            admin:
                of_two_admins_demoting_each_other_at_once_exactly_one_lands,
                a_keeper_that_moved_refuses_the_change_and_the_removal_and_nothing_is_written,
                members_are_paged_by_user_id_within_their_organisation,
                the_audit_log_is_paged_newest_first_and_names_who_acted,
                limits_are_set_with_their_audit_and_keep_the_other_settings,
                the_operators_changes_are_audited_and_keep_every_other_setting,
                concurrent_changes_of_different_settings_all_land;
            tickets:
                a_ticket_is_taken_once_and_a_hash_is_stored_once,
                of_concurrent_takes_of_one_ticket_exactly_one_gets_it;
            directory:
                a_users_organisations_are_listed_by_id_and_follow_their_memberships,
                a_sign_out_stamp_reads_back_and_stays_through_later_updates,
                a_provider_identity_is_bound_to_one_member_per_organisation_until_removed,
                organisations_and_memberships_read_back_and_are_removed_once,
                a_user_name_is_claimed_once_per_organisation_in_any_case_and_moves_with_updates,
                concurrent_creates_of_one_user_name_claim_it_once,
                removing_a_member_removes_their_data_in_the_same_step;
            integrations:
                integrations_are_listed_by_name_replaced_by_name_and_removed_once_with_their_audit,
                a_tools_rule_changes_alone_stays_through_setting_changes_and_leaves_with_its_integration;
            groups:
                groups_read_back_by_id_and_name_and_a_name_is_taken_once_per_organisation_in_any_case,
                memberships_are_written_one_at_a_time_listed_by_user_id_and_read_per_member_at_once,
                an_addition_needs_the_group_and_the_member_as_read_in_the_same_organisation,
                a_removed_member_leaves_every_group_in_the_same_step,
                deleting_a_large_group_removes_every_membership_and_frees_its_name;
            grants:
                a_members_grant_moves_only_from_the_value_it_was_read_at_and_leaves_with_the_member,
                a_member_grant_is_removed_only_from_the_value_it_was_read_at,
                the_organisations_grant_stays_through_setting_changes_and_leaves_with_its_integration,
                of_concurrent_swaps_from_one_grant_exactly_one_lands;
            memory:
                a_memory_moves_only_from_the_value_it_was_read_at_and_leaves_with_the_member,
                of_concurrent_swaps_from_one_memory_exactly_one_lands,
                the_memory_switch_is_audited_and_keeps_the_other_settings;
        }
    };
}

/// What a [`conformance!`] `$open` returns: the store to test and its guard, or, in an
/// `Option`, `None` when there is no store to test here (DynamoDB with no stand-in running: the
/// case is skipped; `knowledge_test_support::stores` decides and says so).
pub trait Opened {
    type Guard;
    fn opened(self) -> Option<(std::sync::Arc<dyn Tested>, Self::Guard)>;
}

impl<G> Opened for (std::sync::Arc<dyn Tested>, G) {
    type Guard = G;
    fn opened(self) -> Option<(std::sync::Arc<dyn Tested>, G)> {
        Some(self)
    }
}

impl<G> Opened for Option<(std::sync::Arc<dyn Tested>, G)> {
    type Guard = G;
    fn opened(self) -> Self {
        self
    }
}

/// One `#[tokio::test]` per case, in one module per role; see [`conformance!`].
#[doc(hidden)]
#[macro_export]
macro_rules! cases {
    ($open:path; $($role:ident: $($case:ident),+;)+) => {
        $(mod $role {
            use super::*;

            $(#[tokio::test]
            async fn $case() {
                let Some((store, _guard)) = $crate::Opened::opened($open().await) else {
                    return;
                };
                $crate::$role::$case(store).await;
            })+
        })+
    };
}
