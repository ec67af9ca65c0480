//! Single sign-on through each organisation's OpenID provider: starting a sign-in, and
//! admitting the person the provider vouched for as the member they are. Configuration is in
//! `config`.

mod config;

use std::sync::Arc;

use serde_json::Value;

use crate::clock::Clock;
use crate::domain::{
    Actor, AuditAction, AuditEntry, FederatedId, Member, Profile, Role, SsoConfig,
    USER_NAME_MAX_CHARS, user_name_key,
};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::ports::{
    Authorization, DirectoryStore, IdentityProvider, OidcClient, OrgStore, StoreError,
};
use crate::seal::{Sealer, sso_secret_context};
use crate::service::Principal;

pub use config::{SsoChange, SsoSettings, configure};

/// Rounds of re-reading a member that changed concurrently during a sign-in.
const ATTEMPTS: usize = 8;

/// Where a sign-in starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInTarget {
    /// A work e-mail address: its domain leads to the organisation.
    Email(String),
    Org(OrgId),
}

/// What the provider's authorization response brought back to the callback.
#[derive(Debug, Clone, Copy)]
pub struct AuthorizationResponse<'a> {
    /// The authorization code.
    pub code: &'a str,
    /// The RFC 9207 `iss` parameter, when the provider sent one.
    pub iss: Option<&'a str>,
}

/// The sign-in use cases, on the organisations and their directories (the two store roles they
/// use), the sealing key (for the client secrets) and the providers.
#[derive(Clone)]
pub struct SingleSignOn {
    orgs: Arc<dyn OrgStore>,
    directory: Arc<dyn DirectoryStore>,
    sealer: Arc<Sealer>,
    provider: Arc<dyn IdentityProvider>,
    clock: Arc<dyn Clock>,
    /// The service's callback URLs without the organisation: each organisation's provider
    /// sends its browsers back to `<callback_base>/<org>` ([`SingleSignOn::redirect_uri`]).
    callback_base: String,
}

impl SingleSignOn {
    /// `callback_base` is `<origin>/api/auth/callback`, without a trailing slash.
    pub fn new(
        orgs: Arc<dyn OrgStore>, directory: Arc<dyn DirectoryStore>, sealer: Arc<Sealer>,
        provider: Arc<dyn IdentityProvider>, clock: Arc<dyn Clock>, callback_base: String,
    ) -> Self {
        Self {
            orgs,
            directory,
            sealer,
            provider,
            clock,
            callback_base,
        }
    }

    /// The redirect URI of `org`'s sign-ins: its own, so that a code its provider issues can
    /// come back only to its own callback (the defence against the mix-up attack, RFC 9700
    /// §4.4, that holds even for providers that send no `iss`).
    pub fn redirect_uri(&self, org: &OrgId) -> String {
        redirect_uri(&self.callback_base, org)
    }

    /// Starts a sign-in at the organisation's provider. Errors: `InvalidInput` for an e-mail
    /// address without a domain; `SsoUnavailable` for an unknown domain or organisation or one
    /// whose SSO is off (one answer for all); `IdentityProviderUnavailable`.
    pub async fn begin(&self, target: &SignInTarget) -> Result<(OrgId, Authorization), CoreError> {
        let org = match target {
            SignInTarget::Org(org) => org.clone(),
            SignInTarget::Email(email) => {
                let domain = email
                    .rsplit_once('@')
                    .and_then(|(local, d)| (!local.is_empty()).then_some(d))
                    .and_then(SsoConfig::email_domain)
                    .ok_or_else(|| {
                        CoreError::invalid("invalid_field", "email must be an e-mail address")
                    })?;
                let org = self.orgs.org_for_domain(&domain).await?;
                org.ok_or(CoreError::SsoUnavailable)?
            }
        };
        let config = self.active_config(&org).await?;
        let authorization = self
            .provider
            .authorize(&self.client(&org, &config)?)
            .await?;
        Ok((org, authorization))
    }

    /// Finishes a sign-in at `org` (the organisation whose callback the browser came back
    /// to, and whose sign-in this browser started: the caller checks both are the same):
    /// checks the response's `iss` when present against the configured issuer, exchanges the
    /// provider's code with the PKCE verifier, verifies the ID token against `nonce`, and
    /// admits the member whose `userName` is the configured claim (without case). The
    /// member's first sign-in binds the provider's issuer and subject to them; later ones must
    /// match it. An organisation with just-in-time membership makes an unknown person a viewer.
    /// Nothing is written when it fails.
    /// Errors: `SsoUnavailable` (switched off meanwhile), `SignInFailed` (`iss` of another
    /// issuer, code or token refused), `EmailUnverified` (the `userName` claim is `email` and
    /// the provider says it is unverified), `NotProvisioned`, `IdentityProviderUnavailable`.
    pub async fn finish(
        &self, org: &OrgId, response: AuthorizationResponse<'_>, pkce_verifier: &str, nonce: &str,
    ) -> Result<Principal, CoreError> {
        let config = self.active_config(org).await?;
        if let Some(iss) = response.iss
            && iss != config.issuer
        {
            // RFC 9207: the code was issued by another provider than this organisation's.
            tracing::warn!(%org, "authorization response whose iss is not the organisation's issuer");
            return Err(CoreError::SignInFailed);
        }
        let client = self.client(org, &config)?;
        let verified = (self.provider)
            .exchange(&client, response.code, response.iss, pkce_verifier, nonce)
            .await?;
        if verified.issuer != config.issuer {
            tracing::warn!(%org, "ID token of another issuer than configured");
            return Err(CoreError::SignInFailed);
        }
        let claim = verified.claims.get(&config.user_name_claim);
        let Some(user_name) = claim.and_then(Value::as_str).filter(|n| !n.is_empty()) else {
            tracing::warn!(%org, claim = config.user_name_claim, "ID token lacks the userName claim");
            return Err(CoreError::NotProvisioned);
        };
        if config.user_name_claim == "email" && email_unverified(&verified.claims) {
            // Whoever first signs in at the provider with this address would own the member
            // ("nOAuth").
            tracing::warn!(%org, "ID token whose e-mail the provider calls unverified");
            return Err(CoreError::EmailUnverified);
        }
        let display = ["name", "preferred_username"]
            .iter()
            .find_map(|c| verified.claims.get(*c).and_then(Value::as_str));
        let identity = FederatedId {
            issuer: verified.issuer,
            subject: verified.subject,
        };
        self.admit(org, &config, identity, user_name, display).await
    }

    /// The organisation's configuration if its SSO is on. Errors: `SsoUnavailable`.
    async fn active_config(&self, org: &OrgId) -> Result<SsoConfig, CoreError> {
        let org = self.orgs.get_org(org).await?;
        org.and_then(|o| o.sso)
            .filter(|c| c.enabled)
            .ok_or(CoreError::SsoUnavailable)
    }

    /// The organisation's client with its secret opened. Errors: `Internal` when the secret
    /// does not open (sealed under another key).
    fn client(&self, org: &OrgId, config: &SsoConfig) -> Result<OidcClient, CoreError> {
        let context = sso_secret_context(org.as_str(), &config.issuer, &config.client_id);
        let secret = (self.sealer)
            .open(&context, &config.client_secret_sealed)
            .map_err(CoreError::internal)?;
        Ok(OidcClient {
            issuer: config.issuer.clone(),
            client_id: config.client_id.clone(),
            client_secret: secret,
            redirect_uri: self.redirect_uri(org),
        })
    }

    async fn admit(
        &self, org: &OrgId, config: &SsoConfig, identity: FederatedId, user_name: &str,
        display: Option<&str>,
    ) -> Result<Principal, CoreError> {
        let key = user_name_key(user_name);
        for _ in 0..ATTEMPTS {
            let now = self.clock.now();
            let found = self.directory.find_member_by_user_name(org, &key).await?;
            let written = match found {
                Some(member) => match &member.identity {
                    Some(bound) if *bound == identity => return Ok(principal(member)),
                    Some(_) => {
                        tracing::warn!(%org, user = %member.user, "sign-in by another identity than the member's bound one");
                        return Err(CoreError::NotProvisioned);
                    }
                    None => {
                        let mut next = member.clone();
                        next.version += 1;
                        next.updated_at = now;
                        next.identity = Some(identity.clone());
                        let audit = AuditEntry::new(
                            org,
                            now,
                            Actor::Member,
                            AuditAction::MemberIdentityBound,
                            member.user.as_str(),
                        )
                        .target_named(member.user_name());
                        self.directory
                            .update_member(&member, &next, &audit)
                            .await
                            .map(|()| next)
                    }
                },
                None if config.just_in_time && user_name.chars().count() <= USER_NAME_MAX_CHARS => {
                    let mut member =
                        Member::new(org.clone(), UserId::generate(), Role::Viewer, now);
                    member.profile = Some(Profile {
                        user_name: user_name.to_owned(),
                        external_id: None,
                        attributes: display
                            .map(|d| {
                                serde_json::Map::from_iter([("displayName".to_owned(), d.into())])
                            })
                            .unwrap_or_default(),
                    });
                    member.identity = Some(identity.clone());
                    let audit = AuditEntry::new(
                        org,
                        now,
                        Actor::Member,
                        AuditAction::MemberAdded,
                        member.user.as_str(),
                    )
                    .target_named(member.user_name())
                    .became(Role::Viewer.as_str());
                    self.directory
                        .create_member(&member, &audit)
                        .await
                        .map(|()| member)
                }
                None => return Err(CoreError::NotProvisioned),
            };
            match written {
                Ok(member) => return Ok(principal(member)),
                // Another member holds the identity: the provider renamed an account onto
                // this member's name.
                Err(StoreError::AlreadyExists) if self.identity_taken(org, &identity).await? => {
                    tracing::warn!(%org, "sign-in by an identity bound to another member");
                    return Err(CoreError::NotProvisioned);
                }
                Err(StoreError::Conflict | StoreError::Gone | StoreError::AlreadyExists) => {
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("the sign-in's member stayed contended"))
    }

    /// Whether a member of `org` other than by name is bound to `identity`: the only cause of
    /// a refused claim once the name's own member was read.
    async fn identity_taken(&self, org: &OrgId, identity: &FederatedId) -> Result<bool, CoreError> {
        let members = self.directory.list_members(org).await?;
        Ok(members
            .iter()
            .any(|m| m.identity.as_ref() == Some(identity)))
    }
}

/// `<callback_base>/<org>`: the redirect URI of `org`'s sign-ins.
pub fn redirect_uri(callback_base: &str, org: &OrgId) -> String {
    format!("{}/{org}", callback_base.trim_end_matches('/'))
}

/// Whether the token says its `email` is unverified: `email_verified` false (or `"false"`, as
/// some providers send booleans). A token without the claim is not judged.
fn email_unverified(claims: &serde_json::Map<String, Value>) -> bool {
    match claims.get("email_verified") {
        Some(Value::Bool(verified)) => !verified,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("false"),
        _ => false,
    }
}

fn principal(member: Member) -> Principal {
    Principal::of(&member)
}
