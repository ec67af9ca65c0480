//! [`OpenIdConnect`]: the identity-provider port over the `openidconnect` crate. Each issuer's
//! discovery document and signing keys are cached for [`DISCOVERY_TTL`]; a token signed with a
//! key the cache does not hold makes it fetch the keys again, at most once per
//! [`KEY_REFETCH_INTERVAL`] and issuer. Requests go through [`http::BoundedHttp`].

pub mod http;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{TimeDelta, Utc};
use knowledge_core::ports::{
    Authorization, BackendError, IdentityError, IdentityProvider, OidcClient, VerifiedIdentity,
};
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreIdToken, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
    CoreProviderMetadata,
};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, IssuerUrl,
    Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError,
};
use serde_json::{Map, Value};

use crate::http::BoundedHttp;

/// How long an issuer's discovery document and keys are used before they are fetched again.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(60 * 60);
/// The least time between two fetches of an issuer's keys for an unknown key id.
pub const KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// Clock skew allowed between the provider and the service, for expiry and issue time.
const LEEWAY_SECS: i64 = 60;
/// How old an ID token may be when it arrives: it is minted at the code exchange.
const MAX_TOKEN_AGE_SECS: i64 = 10 * 60;
/// The signature algorithms accepted: asymmetric ones only, so that a token cannot be
/// "signed" with the client secret (HS*) or not at all (`none`).
const ALLOWED_ALGS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// One issuer's cached discovery document, with its keys.
struct Cached {
    metadata: CoreProviderMetadata,
    fetched: Instant,
    /// When the keys were last fetched for an unknown key id; claimed before fetching, so
    /// concurrent sign-ins fetch once.
    key_refetch: Mutex<Option<Instant>>,
}

/// OpenID providers, reached over [`BoundedHttp`].
pub struct OpenIdConnect {
    http: BoundedHttp,
    cache: Mutex<HashMap<String, Arc<Cached>>>,
}

fn unavailable(cause: impl Into<BackendError>) -> IdentityError {
    IdentityError::Unavailable(cause.into())
}

fn rejected(cause: impl Into<BackendError>) -> IdentityError {
    IdentityError::Rejected(cause.into())
}

impl OpenIdConnect {
    /// Errors: the HTTP client's TLS stack cannot be set up.
    pub fn new() -> Result<Self, reqwest::Error> {
        Ok(Self {
            http: BoundedHttp::new()?,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Cached>>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The issuer's discovery document and keys, fetched now. Errors: `Unavailable`.
    async fn fetch(&self, issuer: &str) -> Result<Arc<Cached>, IdentityError> {
        let url = IssuerUrl::new(issuer.to_owned()).map_err(unavailable)?;
        let metadata = CoreProviderMetadata::discover_async(url, &self.http)
            .await
            .map_err(unavailable)?;
        let cached = Arc::new(Cached {
            metadata,
            fetched: Instant::now(),
            key_refetch: Mutex::new(None),
        });
        self.cache().insert(issuer.to_owned(), cached.clone());
        Ok(cached)
    }

    /// The issuer's discovery document and keys, from the cache while fresh. No lock is held
    /// while fetching, so one slow issuer never holds up another's sign-ins.
    async fn metadata(&self, issuer: &str) -> Result<Arc<Cached>, IdentityError> {
        let cached = self.cache().get(issuer).cloned();
        match cached {
            Some(c) if c.fetched.elapsed() < DISCOVERY_TTL => Ok(c),
            _ => self.fetch(issuer).await,
        }
    }

    /// `cached` with its keys fetched again, unless they were fetched for an unknown key id
    /// less than [`KEY_REFETCH_INTERVAL`] ago (then `None`).
    async fn refetch_keys(
        &self, issuer: &str, cached: &Cached,
    ) -> Result<Option<Arc<Cached>>, IdentityError> {
        {
            let mut last = cached.key_refetch.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < KEY_REFETCH_INTERVAL) {
                return Ok(None);
            }
            *last = Some(Instant::now());
        }
        let jwks = CoreJsonWebKeySet::fetch_async(cached.metadata.jwks_uri(), &self.http)
            .await
            .map_err(unavailable)?;
        let fresh = Arc::new(Cached {
            metadata: cached.metadata.clone().set_jwks(jwks),
            fetched: cached.fetched,
            key_refetch: Mutex::new(Some(Instant::now())),
        });
        self.cache().insert(issuer.to_owned(), fresh.clone());
        Ok(Some(fresh))
    }

    fn client(
        metadata: &CoreProviderMetadata, client: &OidcClient,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        IdentityError,
    > {
        let redirect = RedirectUrl::new(client.redirect_uri.clone()).map_err(unavailable)?;
        Ok(CoreClient::from_provider_metadata(
            metadata.clone(),
            ClientId::new(client.client_id.clone()),
            Some(ClientSecret::new(client.client_secret.clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// The token's issuer and subject if it verifies against `metadata`'s keys for `client`.
    fn verify(
        metadata: &CoreProviderMetadata, client: &OidcClient, token: &CoreIdToken, nonce: &str,
    ) -> Result<(String, String), ClaimsVerificationError> {
        let oidc = Self::client(metadata, client)
            .map_err(|e| ClaimsVerificationError::Other(e.to_string()))?;
        let verifier = oidc
            .id_token_verifier()
            .set_allowed_algs(ALLOWED_ALGS)
            .set_time_fn(|| Utc::now() - TimeDelta::seconds(LEEWAY_SECS))
            .set_issue_time_verifier_fn(|iat| {
                let now = Utc::now();
                if iat > now + TimeDelta::seconds(LEEWAY_SECS) {
                    return Err(format!("issued in the future ({iat})"));
                }
                if iat < now - TimeDelta::seconds(MAX_TOKEN_AGE_SECS) {
                    return Err(format!("issued too long ago ({iat})"));
                }
                Ok(())
            });
        let claims = token.claims(&verifier, &Nonce::new(nonce.to_owned()))?;
        Ok((claims.issuer().to_string(), claims.subject().to_string()))
    }
}

/// Every claim of a token whose signature was verified: its payload, decoded.
fn payload_claims(token: &CoreIdToken) -> Result<Map<String, Value>, IdentityError> {
    let compact = token.to_string();
    let payload = compact
        .split('.')
        .nth(1)
        .ok_or_else(|| rejected("the ID token is not a JWS"))?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).map_err(rejected)?;
    serde_json::from_slice(&bytes).map_err(rejected)
}

#[async_trait]
impl IdentityProvider for OpenIdConnect {
    async fn authorize(&self, client: &OidcClient) -> Result<Authorization, IdentityError> {
        let cached = self.metadata(&client.issuer).await?;
        let oidc = Self::client(&cached.metadata, client)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = oidc
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(Authorization {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        })
    }

    async fn exchange(
        &self, client: &OidcClient, code: &str, pkce_verifier: &str, nonce: &str,
    ) -> Result<VerifiedIdentity, IdentityError> {
        let cached = self.metadata(&client.issuer).await?;
        let oidc = Self::client(&cached.metadata, client)?;
        let request = oidc
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(unavailable)?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()));
        let response = request
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                // The provider answered with an OAuth error: the code, verifier or client refused.
                RequestTokenError::ServerResponse(r) => rejected(r.to_string()),
                other => unavailable(other),
            })?;
        let token = openidconnect::TokenResponse::id_token(&response)
            .ok_or_else(|| rejected("the token response holds no ID token"))?;
        let verified = match Self::verify(&cached.metadata, client, token, nonce) {
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => match self.refetch_keys(&client.issuer, &cached).await? {
                Some(fresh) => Self::verify(&fresh.metadata, client, token, nonce),
                None => Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )),
            },
            other => other,
        };
        let (issuer, subject) = verified.map_err(rejected)?;
        Ok(VerifiedIdentity {
            issuer,
            subject,
            claims: payload_claims(token)?,
        })
    }

    async fn discover(&self, issuer: &str) -> Result<(), IdentityError> {
        self.fetch(issuer).await.map(|_| ())
    }
}
