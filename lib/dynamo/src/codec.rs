//! The item codec: domain records to DynamoDB items and back, and the attribute helpers.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::AttributeValue;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    AuditEntry, Draft, Event, EventBody, EventKind, Member, Session, TurnProgress, Usage,
};
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{StoreError, StoreResult};

use crate::keys;

/// A DynamoDB item: attribute names to values.
pub(crate) type Item = HashMap<String, AttributeValue>;

pub(crate) fn backend<E, R>(e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    StoreError::backend(e)
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn key_item((pk, sk): (String, String)) -> Item {
    HashMap::from([(keys::PK.to_owned(), s(pk)), (keys::SK.to_owned(), s(sk))])
}

pub(crate) fn corrupt(what: &str) -> StoreError {
    StoreError::backend(format!("stored item has a missing or malformed {what}"))
}

pub(crate) fn get_s<'a>(item: &'a Item, name: &str) -> StoreResult<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(corrupt(name)),
    }
}

pub(crate) fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> StoreResult<T> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| corrupt(name)),
        _ => Err(corrupt(name)),
    }
}

pub(crate) fn get_n_or_zero(item: &Item, name: &str) -> StoreResult<u64> {
    if item.contains_key(name) {
        get_n(item, name)
    } else {
        Ok(0)
    }
}

pub(crate) fn get_json<T: serde::de::DeserializeOwned>(item: &Item, name: &str) -> StoreResult<T> {
    serde_json::from_str(get_s(item, name)?).map_err(|_| corrupt(name))
}

pub(crate) fn to_json(v: &impl serde::Serialize) -> StoreResult<String> {
    serde_json::to_string(v).map_err(StoreError::backend)
}

pub(crate) fn session_item(session: &Session) -> StoreResult<Item> {
    let mut item = key_item(keys::session(&session.key));
    item.insert("title".into(), s(&session.title));
    item.insert("createdAt".into(), n(session.created_at.millis()));
    item.insert("updatedAt".into(), n(session.updated_at.millis()));
    if let Some(at) = session.cancelled_at {
        item.insert("cancelledAt".into(), n(at.millis()));
    }
    if let Some(run) = &session.run_id {
        item.insert("runId".into(), s(run.as_str()));
    }
    if let Some(claim) = &session.exec {
        item.insert("exec".into(), s(to_json(claim)?));
    }
    item.insert("deleting".into(), AttributeValue::Bool(session.deleting));
    item.insert("pending".into(), s(to_json(&session.pending)?));
    if let Some(turn) = &session.turn {
        item.insert("turn".into(), s(to_json(turn)?));
    }
    item.insert("nextSeq".into(), n(session.next_seq));
    item.insert("version".into(), n(session.version));
    // A session being deleted leaves the user's list at once, for the list of deletes to
    // finish.
    let (gpk, gsk) = if session.deleting {
        keys::deleting_listing(&session.key)
    } else {
        keys::session_listing(&session.key, session.updated_at, session.awaits_member())
    };
    item.insert(keys::GSI1PK.into(), s(gpk));
    item.insert(keys::GSI1SK.into(), s(gsk));
    // In the sweeper's index while a run holds the session; the keys change only when the
    // claim's lease is renewed, which most commits do not do.
    if let Some(at) = session.stale_at() {
        let (gpk, gsk) = keys::stale_listing(&session.key, at);
        item.insert(keys::GSI2PK.into(), s(gpk));
        item.insert(keys::GSI2SK.into(), s(gsk));
    }
    Ok(item)
}

/// The attribute of a session's item holding its answer in progress (JSON), which no write of
/// the session's record carries: each replaces the item, and so removes it.
pub(crate) const DRAFT: &str = "draft";

pub(crate) fn draft_from(item: &Item) -> StoreResult<Option<Draft>> {
    match item.get(DRAFT) {
        None => Ok(None),
        Some(_) => Ok(Some(get_json(item, DRAFT)?)),
    }
}

pub(crate) fn session_from(key: &SessionKey, item: &Item) -> StoreResult<Session> {
    let optional_n = |name: &str| -> StoreResult<Option<i64>> {
        item.contains_key(name)
            .then(|| get_n(item, name))
            .transpose()
    };
    Ok(Session {
        key: key.clone(),
        title: get_s(item, "title")?.to_owned(),
        created_at: Timestamp(get_n(item, "createdAt")?),
        updated_at: Timestamp(get_n(item, "updatedAt")?),
        cancelled_at: optional_n("cancelledAt")?.map(Timestamp),
        run_id: match item.get("runId") {
            None => None,
            Some(_) => Some(RunId::parse(get_s(item, "runId")?).map_err(|_| corrupt("runId"))?),
        },
        exec: match item.get("exec") {
            None => None,
            Some(_) => Some(get_json(item, "exec")?),
        },
        deleting: matches!(item.get("deleting"), Some(AttributeValue::Bool(true))),
        pending: get_json(item, "pending")?,
        turn: match item.get("turn") {
            None => None,
            Some(_) => Some(get_json::<TurnProgress>(item, "turn")?),
        },
        next_seq: get_n(item, "nextSeq")?,
        version: get_n(item, "version")?,
    })
}

pub(crate) fn event_item(key: &SessionKey, e: &Event) -> StoreResult<Item> {
    let mut item = key_item(keys::event(key, e.seq));
    item.insert("seq".into(), n(e.seq));
    item.insert("kind".into(), s(e.kind().as_str()));
    item.insert("payload".into(), s(to_json(&e.body.payload())?));
    item.insert("occurredAt".into(), n(e.occurred_at.millis()));
    Ok(item)
}

pub(crate) fn event_from(item: &Item) -> StoreResult<Event> {
    let kind: EventKind = get_s(item, "kind")?.parse().map_err(|_| corrupt("kind"))?;
    let payload = get_json(item, "payload")?;
    Ok(Event {
        seq: get_n(item, "seq")?,
        body: EventBody::from_stored(kind, payload).map_err(|_| corrupt("payload"))?,
        occurred_at: Timestamp(get_n(item, "occurredAt")?),
    })
}

/// The organisation item's attribute holding its SCIM token hash.
pub(crate) const SCIM_TOKEN: &str = "scimTokenSha256";
/// When the SCIM token was generated (epoch milliseconds), beside its hash.
pub(crate) const SCIM_TOKEN_AT: &str = "scimTokenAt";
/// The organisation item's attributes holding its SSO configuration (JSON) and its version.
pub(crate) const SSO: &str = "sso";
pub(crate) const SSO_VERSION: &str = "ssoVersion";
/// Reads and retries of a member removal that lost a race before it fails.
pub(crate) const REMOVE_ATTEMPTS: usize = 16;

/// A member item: the record as JSON in `doc`, and its version as an attribute that conditions
/// can read (the one in `doc` is ignored).
pub(crate) fn member_item(member: &Member) -> StoreResult<Item> {
    let mut item = key_item(keys::member(&member.org, &member.user));
    item.insert(keys::GSI1PK.into(), s(keys::memberships(&member.user)));
    item.insert(keys::GSI1SK.into(), s(member.org.as_str()));
    item.insert("doc".into(), s(to_json(member)?));
    item.insert("version".into(), n(member.version));
    Ok(item)
}

pub(crate) fn member_from(item: &Item) -> StoreResult<Member> {
    let mut member: Member = get_json(item, "doc")?;
    member.version = get_n(item, "version")?;
    Ok(member)
}

/// The keys of what `member` claims in its organisation: its `userName`, its identity.
pub(crate) fn claim_keys(member: &Member) -> Vec<(String, String)> {
    let name = (member.profile.as_ref()).map(|p| keys::user_name(&member.org, &p.user_name_key()));
    let id = (member.identity.as_ref()).map(|i| keys::identity(&member.org, &i.key()));
    name.into_iter().chain(id).collect()
}

/// A claim item: `key` held by `member`.
pub(crate) fn claim_item(member: &Member, key: (String, String)) -> Item {
    let mut item = key_item(key);
    item.insert("user".into(), s(member.user.as_str()));
    item
}

pub(crate) fn audit_item(a: &AuditEntry) -> Item {
    let mut item = key_item(keys::audit(&a.org, a.at, &a.id));
    item.insert("at".into(), n(a.at.millis()));
    item.insert("id".into(), s(&a.id));
    item.insert("actor".into(), s(a.actor.as_str()));
    item.insert("action".into(), s(a.action.as_str()));
    item.insert("target".into(), s(&a.target));
    if let Some(by) = &a.by {
        item.insert("by".into(), s(by.as_str()));
    }
    if let Some(detail) = a.detail.to_text() {
        item.insert("detail".into(), s(&detail));
    }
    item
}

pub(crate) fn usage_from(item: &Item) -> StoreResult<Usage> {
    Ok(Usage {
        queries: get_n_or_zero(item, "queries")?,
        cost_micros: get_n_or_zero(item, "costMicros")?,
    })
}

/// The request a builder made, or the reason it could not (a required field left unset).
pub(crate) fn built<T>(r: Result<T, aws_sdk_dynamodb::error::BuildError>) -> StoreResult<T> {
    r.map_err(StoreError::backend)
}
