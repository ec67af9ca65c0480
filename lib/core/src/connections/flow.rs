//! The authorization code flow of a connect: [`Connections::start`] sends the browser to the
//! authorization server, [`Connections::finish`] takes it back, checks everything the attacks
//! on this flow would change, and has the code exchanged.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{ConnectionKind, Connections, vault_error};
use crate::domain::{Actor, AuditAction, AuditEntry, GrantOwner, Role, Ticket};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::ports::TokenError;
use crate::seal::{oauth_client_context, pkce_context};
use crate::vault::GrantAt;

use super::CONNECT_TTL_MS;

/// A connect begun: where to send the browser, and the secret its cookie must carry back.
#[derive(Clone)]
pub struct Started {
    pub url: String,
    /// Binds the connect to this browser: set as a cookie, checked at the callback.
    pub browser_secret: String,
}

/// What the authorization server's redirect brought.
#[derive(Debug, Clone, Default)]
pub struct CallbackParams<'a> {
    pub state: Option<&'a str>,
    pub code: Option<&'a str>,
    /// The issuer identifier (RFC 9207), when the server sends it.
    pub iss: Option<&'a str>,
    /// The server's refusal, instead of a code.
    pub error: Option<&'a str>,
}

/// A connect in progress, sealed in its ticket.
#[derive(Serialize, Deserialize)]
struct InProgress {
    integration: String,
    /// The member whose own account this connects; `None` for the organisation's.
    owner: Option<UserId>,
    /// The issuer the flow was started with: a server changed since is refused.
    issuer: String,
    verifier: String,
    /// SHA-256 (hex) of the browser's secret.
    browser: String,
    /// The `userName` of the member who started it, for the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by_name: Option<String>,
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The ticket key of a connect's `state`: a hash apart from sign-in links' (their secret's
/// hash), so a `state` the authorization server saw can never be redeemed as a sign-in link.
fn ticket_key(state: &str) -> String {
    sha256(&format!("oauth-connect\n{state}"))
}

fn random_secret() -> Result<String, CoreError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| CoreError::internal(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// A connect that cannot finish, with why (logged; the browser is told `ConnectFailed`).
fn failed(why: &str) -> CoreError {
    tracing::warn!(why, "a connect was refused");
    CoreError::ConnectFailed
}

impl Connections {
    /// Begins connecting `user`'s own account (`kind` member) or the organisation's (`kind`
    /// organisation: the caller checked that `user` is an admin) to the integration `name`.
    /// Errors: `NotFound` (no OAuth integration of that name), `Conflict` (`wrong_kind`),
    /// `AuthorizationServerUnavailable`.
    pub async fn start(
        &self, org: &OrgId, user: &UserId, user_name: Option<&str>, name: &str,
        kind: ConnectionKind,
    ) -> Result<Started, CoreError> {
        let integration = self.integration(org, name, kind).await?;
        let access = integration
            .oauth
            .as_ref()
            .expect("an OAuth integration has its server");
        let request = self
            .servers
            .authorization(access, &self.redirect_uri(org, name))
            .map_err(|e| {
                tracing::warn!(integration = name, error = %e, "no authorization request");
                CoreError::AuthorizationServerUnavailable
            })?;
        let browser_secret = random_secret()?;
        let key = ticket_key(&request.state);
        let progress = InProgress {
            integration: name.to_owned(),
            owner: (kind == ConnectionKind::Member).then(|| user.clone()),
            issuer: access.server.issuer.clone(),
            verifier: request.pkce_verifier,
            browser: sha256(&browser_secret),
            by_name: user_name.map(str::to_owned),
        };
        let plain = serde_json::to_string(&progress).map_err(CoreError::internal)?;
        let context = pkce_context(org.as_str(), name, &key);
        let ticket = Ticket {
            user: user.clone(),
            org: org.clone(),
            expires_at: self.clock.now().plus_millis(CONNECT_TTL_MS),
            payload: Some(self.sealer.seal(&context, &plain)),
        };
        self.tickets.put_ticket(&key, &ticket).await?;
        Ok(Started {
            url: request.url,
            browser_secret,
        })
    }

    /// Finishes the connect whose callback is `org`'s integration `name` (the path it came
    /// back to), for the browser holding `browser_secret`. The ticket is used up whatever
    /// the outcome. Refused as `ConnectFailed` (the cause logged): an unknown, used or expired
    /// `state`; another organisation's or integration's flow; another browser; the server's
    /// refusal; an `iss` that is not the server's, or none where the server promised one; a
    /// code the server does not exchange; an organisation's connect whose admin is no longer
    /// one; a member or integration gone meanwhile. Returns whose account it connected.
    /// Errors also: `NotFound` (the integration is no longer an OAuth one of that kind),
    /// `AuthorizationServerUnavailable`.
    pub async fn finish(
        &self, org: &str, name: &str, params: &CallbackParams<'_>, browser_secret: Option<&str>,
    ) -> Result<ConnectionKind, CoreError> {
        let state = params.state.ok_or_else(|| failed("no state"))?;
        let key = ticket_key(state);
        let ticket = (self.tickets.take_ticket(&key).await?)
            .ok_or_else(|| failed("a state never issued, or used already"))?;
        if ticket.expires_at <= self.clock.now() {
            return Err(failed("the connect expired"));
        }
        if ticket.org.as_str() != org {
            return Err(failed(
                "the callback of another organisation than the flow's",
            ));
        }
        let context = pkce_context(ticket.org.as_str(), name, &key);
        let sealed = ticket
            .payload
            .as_deref()
            .ok_or_else(|| failed("not a connect"))?;
        // Sealed for its integration's name: another integration's callback cannot open it.
        let plain = (self.sealer.open(&context, sealed))
            .map_err(|_| failed("the callback of another integration than the flow's"))?;
        let progress: InProgress = serde_json::from_str(&plain).map_err(CoreError::internal)?;
        let browser_ok = browser_secret.is_some_and(|secret| {
            bool::from(sha256(secret).as_bytes().ct_eq(progress.browser.as_bytes()))
        });
        if !browser_ok {
            return Err(failed(
                "another browser than the one that started the connect",
            ));
        }
        if let Some(error) = params.error {
            let error: String = (error.chars())
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(64)
                .collect();
            tracing::info!(
                error,
                integration = name,
                "the authorization server refused"
            );
            return Err(CoreError::ConnectFailed);
        }
        let kind = match &progress.owner {
            Some(_) => ConnectionKind::Member,
            None => ConnectionKind::Organisation,
        };
        if kind == ConnectionKind::Organisation {
            let member = self.directory.get_member(&ticket.org, &ticket.user).await?;
            if member.is_none_or(|m| m.role != Role::Admin) {
                return Err(failed("the admin who began the connect is no longer one"));
            }
        }
        let integration = self.integration(&ticket.org, name, kind).await?;
        let access = integration
            .oauth
            .as_ref()
            .expect("an OAuth integration has its server");
        if access.server.issuer != progress.issuer {
            return Err(failed(
                "the integration's authorization server changed meanwhile",
            ));
        }
        match params.iss {
            Some(iss) if iss != access.server.issuer => {
                return Err(failed("an iss that is not the server's (a mix-up)"));
            }
            None if access.server.iss_parameter_supported => {
                return Err(failed("no iss from a server that promised one"));
            }
            _ => {}
        }
        let code = params.code.ok_or_else(|| failed("no code"))?;
        let secret = match &access.client.secret_sealed {
            None => None,
            Some(sealed) => {
                let context =
                    oauth_client_context(ticket.org.as_str(), name, &access.client.client_id);
                Some(
                    self.sealer
                        .open(&context, sealed)
                        .map_err(CoreError::internal)?,
                )
            }
        };
        let redirect_uri = self.redirect_uri(&ticket.org, name);
        let tokens = self
            .servers
            .exchange_code(
                access,
                secret.as_deref(),
                &redirect_uri,
                code,
                &progress.verifier,
            )
            .await
            .map_err(|e| match e {
                TokenError::Refused(why) => failed(&format!("the code was refused: {why}")),
                e => {
                    tracing::warn!(integration = name, error = %e, "the code exchange failed");
                    CoreError::AuthorizationServerUnavailable
                }
            })?;
        let owner = match progress.owner {
            Some(user) => GrantOwner::Member(user),
            None => GrantOwner::Organisation,
        };
        let at = GrantAt::new(&ticket.org, owner, &integration);
        let audit = AuditEntry::new(
            &ticket.org,
            self.clock.now(),
            Actor::Member,
            AuditAction::AccountConnected,
            name,
        )
        .by(&ticket.user)
        .by_named(progress.by_name.as_deref());
        (self.vault)
            .connect(&at, tokens, &ticket.user, &audit)
            .await
            .map_err(vault_error)?;
        Ok(kind)
    }
}
