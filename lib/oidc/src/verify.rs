//! What the adapter asks of openidconnect about one client: the client at a provider (with the
//! way it authenticates at the token endpoint), and the verification of an ID token (signature
//! by an asymmetric key of the provider, exact issuer, audience, nonce, expiry and issue time),
//! with every claim the verified token carries.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, TimeDelta, Utc};
use knowledge_core::ports::{IdentityError, OidcClient};
use openidconnect::core::{
    CoreAuthDisplay, CoreClaimName, CoreClaimType, CoreClient, CoreClientAuthMethod, CoreGrantType,
    CoreIdToken, CoreIdTokenVerifier, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm, CoreJwsSigningAlgorithm, CoreResponseMode, CoreResponseType,
    CoreSubjectIdentifierType,
};
use openidconnect::{
    AdditionalProviderMetadata, AuthType, ClaimsVerificationError, ClientId, ClientSecret,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, Nonce, ProviderMetadata, RedirectUrl,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The discovery field of RFC 9207 that openidconnect has no name for: whether the provider
/// puts `iss` in every authorization response.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct IssParameter {
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

impl AdditionalProviderMetadata for IssParameter {}

/// A provider's discovery document: openidconnect's core one, with [`IssParameter`].
pub type Metadata = ProviderMetadata<
    IssParameter,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

/// Judges an authorization response's RFC 9207 `iss` before its code goes anywhere: when
/// present it must be exactly the provider's issuer; when the provider says it always sends
/// one, it must be present. Errors: the reason, for the log.
pub fn check_iss(metadata: &Metadata, iss: Option<&str>) -> Result<(), &'static str> {
    match iss {
        Some(iss) if iss == metadata.issuer().as_str() => Ok(()),
        Some(_) => Err("the authorization response's iss is not the provider's issuer"),
        None if metadata
            .additional_metadata()
            .authorization_response_iss_parameter_supported =>
        {
            Err("the authorization response lacks the iss the provider says it always sends")
        }
        None => Ok(()),
    }
}

/// Clock skew allowed between the provider and the service, for expiry and issue time.
pub const LEEWAY: TimeDelta = TimeDelta::seconds(60);
/// How old an ID token may be when it arrives: the provider mints it at the code exchange.
pub const MAX_TOKEN_AGE: TimeDelta = TimeDelta::minutes(10);

/// The signature algorithms accepted: asymmetric ones only, so that a token can be neither
/// "signed" with the client secret (HS*: whoever holds the secret could mint one) nor unsigned
/// (`none`).
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

/// A client built from a discovery document: authorization and token endpoints known.
pub type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// `client` at the provider `metadata` describes. It authenticates at the token endpoint with
/// `client_secret_basic`, unless the provider lists `client_secret_post` and not it. Errors:
/// `Unavailable` for a redirect URI that is not a URL (a fault of the configuration).
pub fn client(metadata: &Metadata, client: &OidcClient) -> Result<Client, IdentityError> {
    let redirect = RedirectUrl::new(client.redirect_uri.clone())
        .map_err(|e| IdentityError::Unavailable(e.into()))?;
    Ok(CoreClient::from_provider_metadata(
        metadata.clone(),
        ClientId::new(client.client_id.clone()),
        Some(ClientSecret::new(client.client_secret.clone())),
    )
    .set_redirect_uri(redirect)
    .set_auth_type(auth_type(metadata)))
}

/// `client_secret_basic` is the default of OpenID Connect Discovery when the provider lists no
/// methods; `client_secret_post` only for a provider that lists it and not basic.
fn auth_type(metadata: &Metadata) -> AuthType {
    match metadata.token_endpoint_auth_methods_supported() {
        Some(methods)
            if methods.contains(&CoreClientAuthMethod::ClientSecretPost)
                && !methods.contains(&CoreClientAuthMethod::ClientSecretBasic) =>
        {
            AuthType::RequestBody
        }
        _ => AuthType::BasicAuth,
    }
}

/// Judges a token's issue time: not ahead of the clock by more than [`LEEWAY`], not older than
/// [`MAX_TOKEN_AGE`] (and the leeway).
fn check_issue_time(iat: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), String> {
    if iat > now + LEEWAY {
        return Err(format!("the token was issued in the future ({iat})"));
    }
    if iat < now - MAX_TOKEN_AGE - LEEWAY {
        return Err(format!("the token was issued too long ago ({iat})"));
    }
    Ok(())
}

/// The token's issuer and subject if it verifies against the keys and issuer of `metadata`
/// for `client_id`, with `nonce`. The verifier is a public client's, so that no algorithm
/// ever uses the client secret as a key.
pub fn verify(
    metadata: &Metadata, client_id: &str, token: &CoreIdToken, nonce: &str,
) -> Result<(String, String), ClaimsVerificationError> {
    let verifier = CoreIdTokenVerifier::new_public_client(
        ClientId::new(client_id.to_owned()),
        metadata.issuer().clone(),
        metadata.jwks().clone(),
    )
    .set_allowed_algs(ALLOWED_ALGS)
    // Expiry is checked against this "now": a token that expired less than the leeway ago
    // still passes.
    .set_time_fn(|| Utc::now() - LEEWAY)
    .set_issue_time_verifier_fn(|iat| check_issue_time(iat, Utc::now()));
    let claims = token.claims(&verifier, &Nonce::new(nonce.to_owned()))?;
    Ok((claims.issuer().to_string(), claims.subject().to_string()))
}

/// Every claim of a token, decoded from the very payload whose signature was verified (so
/// claims openidconnect has no field for, such as `upn`, are there as sent). Errors:
/// `Rejected` for a payload that is not a JSON object (which verification would not pass).
pub fn claims(token: &CoreIdToken) -> Result<Map<String, Value>, IdentityError> {
    let rejected = |e: &str| IdentityError::Rejected(e.to_owned().into());
    let compact = token.to_string();
    let payload = compact
        .split('.')
        .nth(1)
        .ok_or_else(|| rejected("the ID token is not a signed JWT"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| rejected("the ID token's payload is not base64url"))?;
    serde_json::from_slice(&bytes)
        .map_err(|_| rejected("the ID token's payload is not a JSON object"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn an_issue_time_within_the_leeway_and_the_age_limit_passes() {
        let now = at(0);
        for iat in [at(0), at(59), at(-600), at(-659)] {
            assert_eq!(check_issue_time(iat, now), Ok(()), "{iat}");
        }
    }

    #[test]
    fn an_issue_time_ahead_of_the_leeway_or_past_the_age_limit_fails() {
        let now = at(0);
        for iat in [at(61), at(3600), at(-661), at(-86_400)] {
            assert!(check_issue_time(iat, now).is_err(), "{iat}");
        }
    }
}
