//! Every key string of the table, built here and nowhere else.
//!
//! | item | `PK` | `SK` | `GSI1PK` / `GSI1SK` |
//! |---|---|---|---|
//! | organisation | `ORG#<org>` | `ORG` | |
//! | organisation (its SCIM token hash is the attribute `scimTokenSha256`) | | | |
//! | membership and profile | `ORG#<org>` | `MEMBER#<user>` | `MEMBERSHIPS#<user>` / `<org>` |
//! | `userName` claim | `ORG#<org>` | `USERNAME#<lowercased userName>` | |
//! | provider identity claim | `ORG#<org>` | `IDENTITY#<sha-256 of issuer and subject>` | |
//! | organisation (its SSO configuration is the attribute `sso`, its version `ssoVersion`) | | | |
//! | e-mail domain claim of an organisation's SSO | `DOMAIN#<domain>` | `DOMAIN` | |
//! | member data (credentials, OAuth grants, agent memory) | `USER#<user>#ORG#<org>#DATA` | `<kind>#<name>` | |
//! | group (being deleted: the attribute `deleting`) | `ORG#<org>#GROUP` | `GROUP#<group>` | |
//! | group name claim | `ORG#<org>#GROUP` | `GROUPNAME#<lowercased displayName>` | |
//! | membership, the group's side | `ORG#<org>#GROUP#<group>` | `MEMBER#<user>` | |
//! | membership, the member's side | `USER#<user>#ORG#<org>#GROUPS` | `<group>` | |
//! | audit entry | `ORG#<org>#AUDIT` | `<at, 20 digits>#<entry id>` | |
//! | connected integration (MCP server; the organisation's OAuth grant is its attribute `grant`) | `ORG#<org>#INTEGRATION` | `<name>` | |
//! | collection (being deleted: the attribute `deleting`) | `ORG#<org>#COLLECTION` | `COLLECTION#<collection>` | |
//! | document | `ORG#<org>#COLLECTION#<collection>` | `DOCUMENT#<document>` | |
//! | document while `queued` (also in GSI2) | same | same | `GSI2PK` `QUEUED` / `GSI2SK` `<updatedAt, 20 digits>#<document>` |
//! | document while `uploading` (also in GSI2) | same | same | `GSI2PK` `UPLOADING` / `GSI2SK` `<updatedAt, 20 digits>#<document>` |
//! | the organisation's storage of originals (bytes, the attribute `used`) | `ORG#<org>` | `STORAGE` | |
//! | monthly usage | `ORG#<org>` | `USAGE#<YYYY-MM>` | |
//! | a member's monthly usage | `ORG#<org>` | `USAGE#<YYYY-MM>#MEMBER#<user>` | |
//! | session | `USER#<user>#ORG#<org>#SESSION#<session>` | `SESSION` | `USER#<user>#ORG#<org>` / `<updatedAt, 20 digits>#<session>` |
//! | session being deleted | same | `SESSION` | `DELETING` / its `PK` |
//! | session with a run (also in GSI2) | same | `SESSION` | `GSI2PK` `STALE#<shard>` / `GSI2SK` `<stale at, 20 digits>#<its PK>` |
//! | event | same as its session | `EVENT#<seq, 20 digits>` | |
//! | rate-limit window | `RATE#<limit key>` | `RATE` | |
//! | sign-in ticket | `TICKET#<sha-256 of its secret>` | `TICKET` | |
//!
//! Identifiers are tokens of `A-Z a-z 0-9 _ -`, so `#` never occurs inside one and no two items
//! can share a key. A session's partition holds nothing but that session and its events, and its
//! key names user, organisation and session: a request can only address what its signed-in
//! user owns in its active organisation. Events sort by zero-padded sequence number, so "events
//! after a cursor" is a key range, and the session item (`SESSION`) sorts after every event.

use knowledge_core::clock::Timestamp;
use knowledge_core::ids::{CollectionId, DocumentId, GroupId, OrgId, SessionKey, UserId};

/// Partition and sort key attribute names of the table.
pub const PK: &str = "PK";
pub const SK: &str = "SK";
/// The index that lists a user's sessions in an organisation by `updatedAt`, newest first.
pub const GSI1: &str = "GSI1";
pub const GSI1PK: &str = "GSI1PK";
pub const GSI1SK: &str = "GSI1SK";
/// The index of work waiting to be taken, sparse and keys only: sessions with a run by when
/// their claim goes stale, for the sweeper (its partition sharded), queued documents by when
/// they were last written, for the indexing workers (the partition [`QUEUED`]), and documents
/// uploading by when they were announced, for the sweep (the partition [`UPLOADING`]).
pub const GSI2: &str = "GSI2";
pub const GSI2PK: &str = "GSI2PK";
pub const GSI2SK: &str = "GSI2SK";
/// How many partitions GSI2 is spread over, so that no one key takes every run's writes.
pub const STALE_SHARDS: u32 = 8;
/// The attribute DynamoDB's time to live reads (epoch seconds).
pub const TTL: &str = "expiresAt";

const EVENT: &str = "EVENT#";

pub fn org(org: &OrgId) -> (String, String) {
    (format!("ORG#{org}"), "ORG".to_owned())
}

pub fn member(org: &OrgId, user: &UserId) -> (String, String) {
    (format!("ORG#{org}"), format!("{MEMBER}{user}"))
}

const MEMBER: &str = "MEMBER#";

/// The index partition that lists a user's memberships, one item per organisation; the sort key
/// is the organisation's id.
pub fn memberships(user: &UserId) -> String {
    format!("MEMBERSHIPS#{user}")
}

/// The partition and sort-key prefix under which an organisation's members are listed.
pub fn members(org: &OrgId) -> (String, &'static str) {
    (format!("ORG#{org}"), MEMBER)
}

/// The item that makes a `userName` unique in its organisation; `key` is already lowercased.
/// It is the last part of the sort key, so any character it holds (`#` included) is safe.
pub fn user_name(org: &OrgId, key: &str) -> (String, String) {
    (format!("ORG#{org}"), format!("USERNAME#{key}"))
}

/// The item that makes a provider identity unique in its organisation; `key` is
/// [`knowledge_core::domain::FederatedId::key`].
pub fn identity(org: &OrgId, key: &str) -> (String, String) {
    (format!("ORG#{org}"), format!("IDENTITY#{key}"))
}

/// The item that routes an e-mail domain to one organisation's single sign-on.
pub fn domain(domain: &str) -> (String, String) {
    (format!("DOMAIN#{domain}"), "DOMAIN".to_owned())
}

/// The partition of one member's data items.
pub fn member_data_partition(org: &OrgId, user: &UserId) -> String {
    format!("{}#DATA", user_org(user, org))
}

pub fn member_data(org: &OrgId, user: &UserId, kind: &str, name: &str) -> (String, String) {
    (member_data_partition(org, user), format!("{kind}#{name}"))
}

/// The partition of an organisation's groups and the names they claim.
pub fn groups_partition(org: &OrgId) -> String {
    format!("ORG#{org}#GROUP")
}

/// The sort-key prefix of the groups in [`groups_partition`] (their name claims sort apart).
pub const GROUP: &str = "GROUP#";

pub fn group(org: &OrgId, id: &GroupId) -> (String, String) {
    (groups_partition(org), format!("{GROUP}{id}"))
}

/// The item that makes a group's name unique in its organisation; `key` is already lowercased
/// and is the last part of the sort key, so any character it holds is safe.
pub fn group_name(org: &OrgId, key: &str) -> (String, String) {
    (groups_partition(org), format!("GROUPNAME#{key}"))
}

/// The partition of a group's memberships, one item per member, by user id.
pub fn group_members_partition(org: &OrgId, group: &GroupId) -> String {
    format!("ORG#{org}#GROUP#{group}")
}

/// The sort-key prefix of the memberships in [`group_members_partition`].
pub const GROUP_MEMBER: &str = "MEMBER#";

pub fn group_member(org: &OrgId, group: &GroupId, user: &UserId) -> (String, String) {
    (
        group_members_partition(org, group),
        format!("{GROUP_MEMBER}{user}"),
    )
}

/// The partition of a member's side of their memberships, one item per group, by group id:
/// the one query that reads a member's groups.
pub fn member_groups_partition(org: &OrgId, user: &UserId) -> String {
    format!("{}#GROUPS", user_org(user, org))
}

pub fn member_group(org: &OrgId, user: &UserId, group: &GroupId) -> (String, String) {
    (member_groups_partition(org, user), group.to_string())
}

/// The partition of an organisation's audit log.
pub fn audit_partition(org: &OrgId) -> String {
    format!("ORG#{org}#AUDIT")
}

/// An audit entry's keys: sort keys order entries by time.
pub fn audit(org: &OrgId, at: Timestamp, id: &str) -> (String, String) {
    (
        audit_partition(org),
        format!("{:020}#{id}", at.millis().max(0)),
    )
}

/// The partition of an organisation's connected integrations.
pub fn integrations_partition(org: &OrgId) -> String {
    format!("ORG#{org}#INTEGRATION")
}

pub fn integration(org: &OrgId, name: &str) -> (String, String) {
    (integrations_partition(org), name.to_owned())
}

pub fn usage(org: &OrgId, month: &str) -> (String, String) {
    (format!("ORG#{org}"), format!("USAGE#{month}"))
}

/// A member's usage in a month: beside the organisation's, so that the gate's transaction and
/// a month's listing ([`member_usage_prefix`]) stay in one partition.
pub fn member_usage(org: &OrgId, user: &UserId, month: &str) -> (String, String) {
    let (pk, sk) = usage(org, month);
    (pk, format!("{sk}{}{user}", MEMBER_USAGE_INFIX))
}

const MEMBER_USAGE_INFIX: &str = "#MEMBER#";

/// The sort-key prefix of every member's usage in `month`.
pub fn member_usage_prefix(org: &OrgId, month: &str) -> (String, String) {
    let (pk, sk) = usage(org, month);
    (pk, format!("{sk}{MEMBER_USAGE_INFIX}"))
}

/// The member a sort key under [`member_usage_prefix`] names.
pub fn member_of_usage(sk: &str) -> Option<&str> {
    sk.split_once(MEMBER_USAGE_INFIX).map(|(_, user)| user)
}

/// The partition of one session and its events.
pub fn session_partition(key: &SessionKey) -> String {
    format!("USER#{}#ORG#{}#SESSION#{}", key.user, key.org, key.session)
}

pub fn session(key: &SessionKey) -> (String, String) {
    (session_partition(key), "SESSION".to_owned())
}

pub fn event(key: &SessionKey, seq: u64) -> (String, String) {
    (session_partition(key), event_sort(seq))
}

/// The sort key of the event numbered `seq`.
pub fn event_sort(seq: u64) -> String {
    format!("{EVENT}{seq:020}")
}

/// The inclusive sort-key range of the events numbered above `after`.
pub fn events_after(after: u64) -> (String, String) {
    (event_sort(after.saturating_add(1)), event_sort(u64::MAX))
}

/// Whether a sort key is an event's.
pub fn is_event_sort(sk: &str) -> bool {
    sk.starts_with(EVENT)
}

/// The mark a session's listing key ends with while it waits for its member: GSI1 projects
/// only the title and the update time, and an index's projection cannot change in place, so
/// the key itself says it (after the session id, so the order stays the update time's).
pub const ASKS: &str = "#ask";

/// The index keys under which a session is listed; `asks` when it waits for its member.
pub fn session_listing(key: &SessionKey, updated_at: Timestamp, asks: bool) -> (String, String) {
    let mark = if asks { ASKS } else { "" };
    (
        user_org(&key.user, &key.org),
        format!("{:020}#{}{mark}", updated_at.millis().max(0), key.session),
    )
}

/// The index partition that lists the sessions being deleted (so a delete cut short by a crash
/// can be found and finished), keyed by their partition. A session stays there only while its
/// rows are being removed.
pub const DELETING: &str = "DELETING";

/// The index keys of a session being deleted.
pub fn deleting_listing(key: &SessionKey) -> (String, String) {
    (DELETING.to_owned(), session_partition(key))
}

/// The GSI2 partition of shard `shard`.
pub fn stale_shard(shard: u32) -> String {
    format!("STALE#{shard}")
}

/// The GSI2 keys of a session whose run goes stale at `at`: the shard is a hash of the
/// session's partition (FNV-1a), the sort key the time and the partition, which reads back
/// as the session's key ([`session_key_of`] on what follows the `#`).
pub fn stale_listing(key: &SessionKey, at: Timestamp) -> (String, String) {
    let pk = session_partition(key);
    let hash = pk.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let sk = format!("{:020}#{pk}", at.millis().max(0));
    (stale_shard(hash % STALE_SHARDS), sk)
}

/// The GSI2 sort keys of runs stale before `at` are below this one.
pub fn stale_before(at: Timestamp) -> String {
    format!("{:020}", at.millis().max(0))
}

/// The session a GSI2 sort key names.
pub fn stale_key_of(sk: &str) -> Option<SessionKey> {
    session_key_of(sk.split_once('#')?.1)
}

/// The session whose partition is `pk`, if `pk` is a session partition.
pub fn session_key_of(pk: &str) -> Option<SessionKey> {
    let rest = pk.strip_prefix("USER#")?;
    let (user, rest) = rest.split_once("#ORG#")?;
    let (org, session) = rest.split_once("#SESSION#")?;
    Some(SessionKey {
        user: UserId::parse(user).ok()?,
        org: OrgId::parse(org).ok()?,
        session: knowledge_core::ids::SessionId::parse(session).ok()?,
    })
}

/// The index partition of a user's sessions in an organisation.
pub fn user_org(user: &UserId, org: &OrgId) -> String {
    format!("USER#{user}#ORG#{org}")
}

/// The partition of an organisation's collections.
pub fn collections_partition(org: &OrgId) -> String {
    format!("ORG#{org}#COLLECTION")
}

/// The sort-key prefix of the collections in [`collections_partition`].
pub const COLLECTION: &str = "COLLECTION#";

pub fn collection(org: &OrgId, id: &CollectionId) -> (String, String) {
    (collections_partition(org), format!("{COLLECTION}{id}"))
}

/// The partition of a collection's documents, one item per document, by id: a collection's
/// documents are one query.
pub fn documents_partition(org: &OrgId, collection: &CollectionId) -> String {
    format!("ORG#{org}#COLLECTION#{collection}")
}

/// The sort-key prefix of the documents in [`documents_partition`].
pub const DOCUMENT: &str = "DOCUMENT#";

pub fn document(org: &OrgId, collection: &CollectionId, id: &DocumentId) -> (String, String) {
    (
        documents_partition(org, collection),
        format!("{DOCUMENT}{id}"),
    )
}

/// The organisation, collection and document a document item's keys name.
pub fn document_of(pk: &str, sk: &str) -> Option<(OrgId, CollectionId, DocumentId)> {
    let (org, collection) = pk.strip_prefix("ORG#")?.split_once("#COLLECTION#")?;
    let id = sk.strip_prefix(DOCUMENT)?;
    Some((
        OrgId::parse(org).ok()?,
        CollectionId::parse(collection).ok()?,
        DocumentId::parse(id).ok()?,
    ))
}

/// The counter of the bytes of originals an organisation stores, beside its usage items.
pub fn storage(org: &OrgId) -> (String, String) {
    (format!("ORG#{org}"), "STORAGE".to_owned())
}

/// The GSI2 partition of every organisation's queued documents: the indexing workers' queue.
pub const QUEUED: &str = "QUEUED";

/// The GSI2 keys of a queued document last written at `updated_at`: the longest waiting sort
/// first, ties by id.
pub fn queued_listing(id: &DocumentId, updated_at: Timestamp) -> (String, String) {
    (
        QUEUED.to_owned(),
        format!("{:020}#{id}", updated_at.millis().max(0)),
    )
}

/// The GSI2 partition of every organisation's documents `uploading`: the sweep's.
pub const UPLOADING: &str = "UPLOADING";

/// The GSI2 keys of a document `uploading` since `updated_at`: the oldest sort first, ties by
/// id; those announced before `at` sort below [`stale_before`]`(at)`.
pub fn uploading_listing(id: &DocumentId, updated_at: Timestamp) -> (String, String) {
    (
        UPLOADING.to_owned(),
        format!("{:020}#{id}", updated_at.millis().max(0)),
    )
}

/// A sign-in ticket, under the hash of its secret.
pub fn ticket(hash: &str) -> (String, String) {
    (format!("TICKET#{hash}"), "TICKET".to_owned())
}

pub fn rate_window(limit_key: &str) -> (String, String) {
    (format!("RATE#{limit_key}"), "RATE".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowledge_core::ids::SessionId;

    fn key(user: &str, org: &str) -> SessionKey {
        SessionKey {
            user: UserId::parse(user).unwrap(),
            org: OrgId::parse(org).unwrap(),
            session: SessionId::parse("ses_0123456789abcdef0123456789abcdef").unwrap(),
        }
    }

    #[test]
    fn the_same_session_id_under_another_user_or_org_is_another_partition() {
        let mine = session_partition(&key("usr_a", "org_a"));
        assert_ne!(mine, session_partition(&key("usr_b", "org_a")));
        assert_ne!(mine, session_partition(&key("usr_a", "org_b")));
    }

    #[test]
    fn event_sort_keys_order_as_their_numbers_and_before_the_session_item() {
        let keys: Vec<String> = [1, 9, 10, 999, 1_000_000_000_000, u64::MAX]
            .into_iter()
            .map(event_sort)
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(
            keys.iter()
                .all(|k| k.as_str() < "SESSION" && is_event_sort(k))
        );
        assert!(!is_event_sort("SESSION"));
    }

    #[test]
    fn events_after_a_cursor_start_at_the_next_number() {
        let (from, to) = events_after(41);
        assert_eq!(from, event_sort(42));
        assert!(event_sort(41) < from && event_sort(u64::MAX) == to);
    }

    #[test]
    fn member_data_and_audit_partitions_are_apart_from_sessions_and_members() {
        let k = key("usr_a", "org_a");
        let data = member_data_partition(&k.org, &k.user);
        assert_ne!(data, session_partition(&k));
        assert_ne!(data, user_org(&k.user, &k.org));
        assert_ne!(audit_partition(&k.org), org(&k.org).0);
        assert_ne!(user_name(&k.org, "usr_a").1, member(&k.org, &k.user).1);
        let (early, late) = (
            audit(&k.org, Timestamp(9_000), "b").1,
            audit(&k.org, Timestamp(10_000), "a").1,
        );
        assert!(early < late);
    }

    #[test]
    fn a_session_being_deleted_is_listed_by_its_partition_which_reads_back_as_its_key() {
        let k = key("usr_a", "org_a");
        let (pk, sk) = deleting_listing(&k);
        assert_eq!((pk.as_str(), sk.clone()), (DELETING, session_partition(&k)));
        assert_eq!(session_key_of(&sk), Some(k));
        assert_eq!(session_key_of("ORG#org_a"), None);
        assert_eq!(session_key_of("USER#usr_a#ORG#org_a#DATA"), None);
    }

    #[test]
    fn a_runs_stale_listing_sorts_by_time_reads_back_as_its_key_and_spreads_over_the_shards() {
        let k = key("usr_a", "org_a");
        let (shard, sk) = stale_listing(&k, Timestamp(9_000));
        assert!(shard.starts_with("STALE#"));
        assert_eq!(stale_key_of(&sk), Some(k.clone()));
        assert!(sk < stale_before(Timestamp(9_001)));
        assert!(
            sk > stale_before(Timestamp(9_000)),
            "stale at 9 000 is not stale before it"
        );
        assert!(stale_listing(&k, Timestamp(8_000)).1 < sk);
        let shards: std::collections::BTreeSet<String> = (0..64)
            .map(|i| stale_listing(&key(&format!("usr_{i}"), "org_a"), Timestamp(1)).0)
            .collect();
        assert_eq!(shards.len(), STALE_SHARDS as usize, "{shards:?}");
    }

    #[test]
    fn a_documents_keys_read_back_and_its_partition_is_apart_from_the_collections() {
        let o = OrgId::parse("org_a").unwrap();
        let (c, d) = (CollectionId::generate(), DocumentId::generate());
        let (pk, sk) = document(&o, &c, &d);
        assert_eq!(
            document_of(&pk, &sk),
            Some((o.clone(), c.clone(), d.clone()))
        );
        assert_ne!(pk, collections_partition(&o));
        assert_eq!(document_of(&collection(&o, &c).0, &sk), None);
        assert_ne!(storage(&o), org(&o));
        let (early, late) = (
            queued_listing(&d, Timestamp(9_000)).1,
            queued_listing(&DocumentId::generate(), Timestamp(10_000)).1,
        );
        assert!(early < late);
        assert!(!QUEUED.starts_with("STALE#") && QUEUED != DELETING);
        assert!(!UPLOADING.starts_with("STALE#") && UPLOADING != QUEUED);
        let (_, announced) = uploading_listing(&d, Timestamp(9_000));
        assert!(announced < stale_before(Timestamp(9_001)));
        assert!(announced > stale_before(Timestamp(9_000)));
    }

    #[test]
    fn listing_keys_sort_by_update_time() {
        let k = key("usr_a", "org_a");
        let (pk, early) = session_listing(&k, Timestamp(9_000), true);
        let (_, late) = session_listing(&k, Timestamp(10_000), false);
        assert_eq!(pk, user_org(&k.user, &k.org));
        assert!(early < late);
    }
}
