//! [`OpenIdConnect`]: the identity-provider port over the `openidconnect` crate, for the
//! authorization code flow with PKCE, `state` and `nonce`. Discovery documents and keys are
//! cached per issuer (module `cache`), ID tokens verified as module `verify` says, and every
//! request goes through `knowledge_oauth::http::BoundedHttp` (no redirects, time limits,
//! bounded answers).
//! Used only as an [`IdentityDiscovery`] (the admin function's test of a configuration), it
//! links none of the sign-in: no authorization URL, code exchange or token verification.

mod cache;
mod verify;

use async_trait::async_trait;
use knowledge_core::ports::{
    Authorization, BackendError, IdentityDiscovery, IdentityError, IdentityProvider, OidcClient,
    VerifiedIdentity,
};
use openidconnect::core::{CoreAuthenticationFlow, CoreErrorResponseType};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, CsrfToken, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RequestTokenError, Scope, SignatureVerificationError, StandardErrorResponse,
    TokenResponse,
};

use knowledge_egress::Egress;

use crate::cache::Issuers;
pub use crate::cache::{DISCOVERY_TTL, KEY_REFETCH_INTERVAL};
pub use crate::verify::{LEEWAY, MAX_TOKEN_AGE};
use knowledge_oauth::http::{BoundedHttp, HttpError};

/// OpenID providers, any number of issuers at once.
pub struct OpenIdConnect {
    http: BoundedHttp,
    issuers: Issuers,
}

impl OpenIdConnect {
    /// An adapter with an empty cache, reaching providers under `egress`. Errors: the HTTP
    /// client's TLS stack cannot be set up.
    pub fn new(egress: Egress) -> Result<Self, reqwest::Error> {
        let http = BoundedHttp::new(egress)?;
        Ok(Self {
            issuers: Issuers::new(http.clone()),
            http,
        })
    }
}

/// The token endpoint's failure, as the port tells it. The provider could not be reached,
/// timed out or answered 5xx ([`BoundedHttp`] turns that into a request error): `Unavailable`.
/// An answer that arrived and is refused (an OAuth error, or what is not a token response: an
/// ID token without `exp`, `iat` or `sub`, with `alg: none`, or not a JWT at all): `Rejected`.
/// The answer's body is left out (it may hold tokens).
fn token_error(
    e: RequestTokenError<HttpError, StandardErrorResponse<CoreErrorResponseType>>,
) -> IdentityError {
    match e {
        RequestTokenError::ServerResponse(refusal) => IdentityError::Rejected(
            format!("the token endpoint refused the code: {refusal}").into(),
        ),
        RequestTokenError::Request(e) => IdentityError::Unavailable(e.into()),
        RequestTokenError::Parse(e, _body) => {
            IdentityError::Rejected(Box::new(Unreadable(e.into())))
        }
        RequestTokenError::Other(e) => IdentityError::Rejected(Box::new(Unreadable(e.into()))),
    }
}

/// A token endpoint's answer that is not an OpenID Connect token response.
#[derive(Debug, thiserror::Error)]
#[error("the token endpoint's answer is not a token response with a well-formed ID token")]
struct Unreadable(#[source] BackendError);

#[async_trait]
impl IdentityProvider for OpenIdConnect {
    async fn authorize(&self, client: &OidcClient) -> Result<Authorization, IdentityError> {
        let entry = self.issuers.get(&client.issuer).await?;
        let oidc = verify::client(&entry.metadata, client)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        // `openid` is always asked for by openidconnect.
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
        &self, client: &OidcClient, code: &str, iss: Option<&str>, pkce_verifier: &str, nonce: &str,
    ) -> Result<VerifiedIdentity, IdentityError> {
        let entry = self.issuers.get(&client.issuer).await?;
        verify::check_iss(&entry.metadata, iss).map_err(|e| IdentityError::Rejected(e.into()))?;
        let response = verify::client(&entry.metadata, client)?
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| IdentityError::Unavailable(e.into()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&self.http)
            .await
            .map_err(token_error)?;
        let token = response.id_token().ok_or_else(|| {
            IdentityError::Rejected(Box::new(Unreadable("it holds no ID token".into())))
        })?;
        let id = &client.client_id;
        let verified = match verify::verify(&entry.metadata, id, token, nonce) {
            // Signed with a key the cached set does not hold: the provider may have rotated
            // its keys since they were fetched.
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => match self.issuers.refetch_keys(&client.issuer, &entry).await? {
                Some(fresh) => verify::verify(&fresh.metadata, id, token, nonce),
                None => Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )),
            },
            other => other,
        };
        let (issuer, subject) = verified.map_err(|e| IdentityError::Rejected(e.into()))?;
        Ok(VerifiedIdentity {
            issuer,
            subject,
            claims: verify::claims(token)?,
        })
    }
}

#[async_trait]
impl IdentityDiscovery for OpenIdConnect {
    /// Fetches the document and keys into the cache, replacing what it held for `issuer`.
    async fn discover(&self, issuer: &str) -> Result<(), IdentityError> {
        self.issuers.refresh(issuer).await.map(|_| ())
    }
}
