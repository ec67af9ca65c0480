//! Configuring an organisation's single sign-on: what an admin sets, checked and sealed before
//! it is stored. The admin use cases call this with the audit entry of whoever acts.

use crate::clock::Timestamp;
use crate::domain::{AuditEntry, DEFAULT_USER_NAME_CLAIM, SSO_DOMAIN_LIMIT, SsoConfig};
use crate::error::CoreError;
use crate::ids::OrgId;
use crate::ports::{OrgStore, StoreError};
use crate::seal::{Sealer, sso_secret_context};

/// Longest client id and client secret accepted, in bytes.
const CLIENT_FIELD_MAX: usize = 1024;
/// Rounds of re-reading a configuration that changed concurrently before giving up.
const ATTEMPTS: usize = 8;

/// What an admin sets. The client secret may be left out to keep the stored one (the issuer
/// and client id must then be unchanged, as the secret is sealed for them).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SsoSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// `None` for [`DEFAULT_USER_NAME_CLAIM`].
    pub user_name_claim: Option<String>,
    pub email_domains: Vec<String>,
    pub just_in_time: bool,
    pub enabled: bool,
}

impl std::fmt::Debug for SsoSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("user_name_claim", &self.user_name_claim)
            .field("email_domains", &self.email_domains)
            .finish_non_exhaustive()
    }
}

/// A change to an organisation's single sign-on.
#[derive(Debug, Clone)]
pub enum SsoChange {
    /// Replace the configuration.
    Set(SsoSettings),
    /// Switch the stored configuration on or off.
    Enable(bool),
}

fn invalid(message: impl Into<String>) -> CoreError {
    CoreError::invalid("invalid_field", message)
}

fn client_field(name: &str, value: &str) -> Result<String, CoreError> {
    let value = value.trim();
    if value.is_empty() || value.len() > CLIENT_FIELD_MAX || value.chars().any(char::is_control) {
        return Err(invalid(format!(
            "{name} must be 1 to {CLIENT_FIELD_MAX} bytes without control characters"
        )));
    }
    Ok(value.to_owned())
}

/// The configuration `settings` make of `current` (or of nothing) at `now`: validated, the
/// domains normalised, the secret sealed. Errors: `InvalidInput` naming the field.
fn next_config(
    sealer: &Sealer, org: &OrgId, current: Option<&SsoConfig>, settings: &SsoSettings,
    now: Timestamp,
) -> Result<SsoConfig, CoreError> {
    // Exactly as the provider states it: a trailing slash is part of some issuers (Auth0's).
    let issuer = settings.issuer.trim().to_owned();
    if !SsoConfig::valid_issuer(&issuer) {
        return Err(invalid(
            "issuer must be an https URL (or http on this machine's loopback) without query or fragment",
        ));
    }
    let client_id = client_field("clientId", &settings.client_id)?;
    let claim = (settings.user_name_claim.as_deref())
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or(DEFAULT_USER_NAME_CLAIM);
    if !SsoConfig::valid_claim(claim) {
        return Err(invalid(
            "userNameClaim must be 1 to 64 letters, digits, '_', '-', '.' or ':'",
        ));
    }
    let mut domains = Vec::with_capacity(settings.email_domains.len());
    for d in &settings.email_domains {
        let domain = SsoConfig::email_domain(d)
            .ok_or_else(|| invalid(format!("{d:?} is not an e-mail domain")))?;
        domains.push(domain);
    }
    domains.sort();
    domains.dedup();
    if domains.len() > SSO_DOMAIN_LIMIT {
        return Err(invalid(format!(
            "at most {SSO_DOMAIN_LIMIT} e-mail domains lead to one organisation"
        )));
    }
    let context = sso_secret_context(org.as_str(), &issuer, &client_id);
    let sealed = match (&settings.client_secret, current) {
        (Some(secret), _) => sealer.seal(&context, &client_field("clientSecret", secret)?),
        (None, Some(c)) if c.issuer == issuer && c.client_id == client_id => {
            c.client_secret_sealed.clone()
        }
        (None, _) => {
            return Err(invalid(
                "clientSecret is required for a new issuer or client id",
            ));
        }
    };
    Ok(SsoConfig {
        issuer,
        client_id,
        client_secret_sealed: sealed,
        user_name_claim: claim.to_owned(),
        email_domains: domains,
        enabled: settings.enabled,
        just_in_time: settings.just_in_time,
        updated_at: now,
        version: current.map_or(1, |c| c.version + 1),
    })
}

/// Applies `change` to the single sign-on of `org`, recording `audit` (the entry of whoever
/// acts, `sso.configured`) with it; returns what is now stored. Concurrent changes are applied
/// one after the other. Errors: `NotFound` (no such organisation, or `Enable` with nothing
/// configured), `InvalidInput` (a field, or a domain already routed to another organisation).
pub async fn configure(
    orgs: &dyn OrgStore, sealer: &Sealer, now: Timestamp, org: &OrgId, audit: &AuditEntry,
    change: &SsoChange,
) -> Result<SsoConfig, CoreError> {
    for _ in 0..ATTEMPTS {
        let stored = orgs
            .get_org(org)
            .await?
            .ok_or(CoreError::NotFound("organisation"))?;
        let current = stored.sso.as_ref();
        let next = match change {
            SsoChange::Set(settings) => next_config(sealer, org, current, settings, now)?,
            SsoChange::Enable(on) => {
                let mut next = current.cloned().ok_or(CoreError::NotFound("sso"))?;
                next.enabled = *on;
                next.updated_at = now;
                next.version += 1;
                next
            }
        };
        match orgs.set_sso(org, current, &next, audit).await {
            Ok(()) => return Ok(next),
            Err(StoreError::Conflict) => continue,
            Err(StoreError::Gone) => return Err(CoreError::NotFound("organisation")),
            Err(StoreError::AlreadyExists) => {
                return Err(CoreError::invalid(
                    "domain_taken",
                    "an e-mail domain is already routed to another organisation",
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(CoreError::internal(
        "the SSO configuration stayed contended",
    ))
}
