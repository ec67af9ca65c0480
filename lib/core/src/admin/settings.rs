//! The organisation's settings an admin changes: single sign-on (configure, test, switch), the
//! SCIM token, the monthly limits with the month's usage, and the audit log that records it all.

use crate::clock::Timestamp;
use crate::domain::{AuditAction, AuditCursor, AuditEntry, MemberCaps, Org, SsoConfig};
use crate::error::CoreError;
use crate::ports::{OrgChanges, OrgLimits, StoreError};
use crate::scim;
use crate::sso::{self, SsoChange};

use super::{Admin, Administration, UsageReport};

/// Audit entries read per call at most while filtering by action; the page says where to go
/// on.
const AUDIT_BUDGET: usize = 1000;
/// Audit entries read per store request while filtering.
const AUDIT_BATCH: usize = 100;

/// Whether the organisation has a SCIM token, and since when. The token itself is never
/// readable: only its hash is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimStatus {
    pub token_exists: bool,
    pub created_at: Option<Timestamp>,
    /// Whether SCIM answers for the organisation: the Business plan and SSO switched on.
    pub available: bool,
}

/// What the audit log is asked for: entries older than `before`, of `action` only when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub before: Option<AuditCursor>,
    pub action: Option<AuditAction>,
    pub limit: usize,
}

/// A page of the audit log, newest first, and where the next one starts (`None` at the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub next: Option<AuditCursor>,
}

impl Administration {
    /// The organisation's single sign-on, `None` until configured.
    pub async fn sso(&self, admin: &Admin) -> Result<Option<SsoConfig>, CoreError> {
        Ok(self.org(admin).await?.sso)
    }

    /// Applies `change` (see [`sso::configure`]). Errors: `NotFound` (`sso` for a switch with
    /// nothing configured), `InvalidInput`.
    pub async fn configure_sso(
        &self, admin: &Admin, change: &SsoChange,
    ) -> Result<SsoConfig, CoreError> {
        let store = self.stores.orgs.as_ref();
        let now = self.now();
        let audit = admin.audit(now, AuditAction::SsoConfigured, admin.org.as_str());
        sso::configure(store, self.sealer()?, now, &admin.org, &audit, change).await
    }

    /// Fetches `issuer`'s discovery document and keys now, as a sign-in would, without
    /// storing anything. Errors: `DestinationRefused` (an address the deployment never
    /// connects to), `IdentityProviderUnavailable`.
    pub async fn test_sso(&self, admin: &Admin, issuer: &str) -> Result<(), CoreError> {
        let issuer = issuer.trim();
        if !SsoConfig::valid_issuer(issuer) {
            return Err(CoreError::invalid(
                "invalid_field",
                "issuer must be an https URL (or http on this machine's loopback) without query or fragment",
            ));
        }
        self.org(admin).await?;
        let identity = self
            .identity
            .as_ref()
            .ok_or_else(|| CoreError::internal("no identity provider adapter here"))?;
        identity.discover(issuer).await?;
        Ok(())
    }

    pub async fn scim_status(&self, admin: &Admin) -> Result<ScimStatus, CoreError> {
        let org = self.org(admin).await?;
        Ok(ScimStatus {
            token_exists: org.scim_token_sha256.is_some(),
            created_at: org.scim_token_created_at,
            available: org.plan == crate::domain::Plan::Business && org.sso_active(),
        })
    }

    /// Generates the organisation's SCIM token, replacing (and so invalidating at once) the
    /// previous one. The token is returned to be shown once; only its hash is stored.
    /// Errors: `NotFound`.
    pub async fn generate_scim_token(
        &self, admin: &Admin,
    ) -> Result<(String, Timestamp), CoreError> {
        let (token, hash) = scim::token::generate(&admin.org)
            .map_err(|e| CoreError::internal(format!("no randomness for the token: {e}")))?;
        let audit = admin.audit(
            self.now(),
            AuditAction::ScimTokenGenerated,
            admin.org.as_str(),
        );
        match self
            .stores
            .orgs
            .set_scim_token(&admin.org, &hash, &audit)
            .await
        {
            Ok(()) => Ok((token, audit.at)),
            Err(StoreError::Gone) => Err(CoreError::NotFound("organisation")),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets the monthly query quota and cost cap (`None`: unlimited) and each member's
    /// allowance. They apply from the next query: one in flight is not stopped.
    /// Errors: `NotFound`.
    pub async fn set_limits(
        &self, admin: &Admin, limits: OrgLimits,
    ) -> Result<UsageReport, CoreError> {
        let audit = admin
            .audit(
                self.now(),
                AuditAction::OrgLimitsChanged,
                admin.org.as_str(),
            )
            .became(&limits_text(&limits));
        match self
            .stores
            .orgs
            .set_limits(&admin.org, &limits, &audit)
            .await
        {
            Ok(()) => self.usage(admin).await,
            Err(StoreError::Gone) => Err(CoreError::NotFound("organisation")),
            Err(e) => Err(e.into()),
        }
    }

    /// Makes the operator's `changes` to the organisation's plan, status and limits, keeping
    /// its other settings as they are then, even those an admin changes meanwhile; returns the
    /// organisation as changed. Errors: `NotFound`, `InvalidInput` (nothing to change).
    pub async fn change_org(&self, admin: &Admin, changes: &OrgChanges) -> Result<Org, CoreError> {
        let text = changes_text(changes).ok_or_else(|| {
            CoreError::invalid(
                "invalid_field",
                "nothing to change: give a plan, a status, a query quota or a cost cap",
            )
        })?;
        let audit = admin
            .audit(self.now(), AuditAction::OrgChanged, admin.org.as_str())
            .became(&text);
        match self
            .stores
            .orgs
            .change_org(&admin.org, changes, &audit)
            .await
        {
            Ok(()) => self.org(admin).await,
            Err(StoreError::Gone) => Err(CoreError::NotFound("organisation")),
            Err(e) => Err(e.into()),
        }
    }

    /// Switches the agent's memory on or off for every member; returns whether it is on.
    /// Members' notes are kept either way, and no admin sees them. Errors: `NotFound`.
    pub async fn set_memory(&self, admin: &Admin, on: bool) -> Result<bool, CoreError> {
        let state = if on { "on" } else { "off" };
        let audit = admin
            .audit(
                self.now(),
                AuditAction::OrgMemoryChanged,
                admin.org.as_str(),
            )
            .became(state);
        match self.stores.orgs.set_memory(&admin.org, on, &audit).await {
            Ok(()) => Ok(on),
            Err(StoreError::Gone) => Err(CoreError::NotFound("organisation")),
            Err(e) => Err(e.into()),
        }
    }

    /// A page of the audit log, newest first. Filtering by action reads at most
    /// [`AUDIT_BUDGET`] entries a call, so a page may hold fewer than `limit` and still have a
    /// `next`.
    pub async fn audit_log(
        &self, admin: &Admin, query: &AuditQuery,
    ) -> Result<AuditPage, CoreError> {
        let mut entries = Vec::new();
        let mut before = query.before.clone();
        let mut read = 0;
        while entries.len() < query.limit && read < AUDIT_BUDGET {
            let want = match query.action {
                None => query.limit - entries.len(),
                Some(_) => AUDIT_BATCH,
            };
            let batch = self
                .stores
                .directory
                .list_audit(&admin.org, before.as_ref(), want)
                .await?;
            let exhausted = batch.len() < want;
            read += batch.len();
            for entry in batch {
                before = Some(entry.cursor());
                if query.action.is_none_or(|a| a == entry.action) {
                    entries.push(entry);
                    if entries.len() == query.limit {
                        break;
                    }
                }
            }
            if exhausted && entries.len() < query.limit {
                return Ok(AuditPage {
                    entries,
                    next: None,
                });
            }
        }
        Ok(AuditPage {
            entries,
            next: before,
        })
    }
}

/// How the audit log says what limits were set: "quota 100 questions, cap $12.50 a month;
/// each member 20 questions a month".
fn limits_text(limits: &OrgLimits) -> String {
    let quota = limits
        .quota
        .map_or("no quota".to_owned(), |q| format!("quota {q} questions"));
    let cap = limits
        .cap_micros
        .map_or("no cost cap".to_owned(), |c| format!("cap {}", dollars(c)));
    let member = caps_text(&limits.member);
    format!("{quota}, {cap} a month; each member {member}")
}

/// The operator's changes in words, for the audit log; `None` when there are none.
fn changes_text(changes: &OrgChanges) -> Option<String> {
    let limit = |l: Option<u64>, unit: fn(u64) -> String| l.map_or("unlimited".to_owned(), unit);
    let words: Vec<String> = [
        changes.plan.map(|p| format!("plan {p}")),
        changes.status.map(|s| format!("status {s}")),
        changes
            .quota
            .map(|q| format!("quota {}", limit(q, |q| format!("{q} questions")))),
        changes
            .cap_micros
            .map(|c| format!("cost cap {}", limit(c, dollars))),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!words.is_empty()).then(|| words.join(", "))
}

/// A member's allowance in words, for the audit log.
pub(crate) fn caps_text(caps: &MemberCaps) -> String {
    match (caps.queries, caps.cost_micros) {
        (None, None) => "unlimited".to_owned(),
        (Some(q), None) => format!("{q} questions a month"),
        (None, Some(c)) => format!("{} a month", dollars(c)),
        (Some(q), Some(c)) => format!("{q} questions and {} a month", dollars(c)),
    }
}

fn dollars(micros: u64) -> String {
    format!("${}.{:02}", micros / 1_000_000, micros % 1_000_000 / 10_000)
}
