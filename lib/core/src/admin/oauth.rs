//! Adding an OAuth-protected integration: discovering how the server is authorized and
//! settling the service's client at its authorization server, once per organisation and
//! integration.

use crate::connections::{client_document_url, redirect_uri};
use crate::domain::{ClientRegistration, IntegrationConfig, OAuthAccess, OAuthClient, OAuthServer};
use crate::error::CoreError;
use crate::ports::DiscoveryFailure;
use crate::seal::oauth_client_context;

use super::{Admin, Administration, IntegrationSettings};

/// Longest client id or secret an admin may enter.
const CLIENT_FIELD_MAX: usize = 2048;

fn refused(e: DiscoveryFailure) -> CoreError {
    match e {
        DiscoveryFailure::NotProtected => CoreError::invalid(
            "not_oauth_protected",
            "the server answers without authorization: connect it with auth none",
        ),
        DiscoveryFailure::Refused(refused) => CoreError::DestinationRefused(refused),
        DiscoveryFailure::Failed(why) => CoreError::invalid("discovery_failed", why),
    }
}

impl Administration {
    /// The authorization of the MCP server at `settings.url`, with the service's client there,
    /// in this order: the client the admin entered; the client of `previous` when it is at the
    /// same authorization server (never a registration per change); a Client ID Metadata
    /// Document, where the server takes one and the origin is `https`; Dynamic Client
    /// Registration (RFC 7591). Errors: `InvalidInput` (`not_oauth_protected`,
    /// `discovery_failed`, `client_required` when none of the four applies),
    /// `DestinationRefused`.
    pub(super) async fn oauth_server(
        &self, admin: &Admin, settings: &IntegrationSettings, previous: Option<&IntegrationConfig>,
    ) -> Result<OAuthAccess, CoreError> {
        let (servers, origin) = (self.oauth.as_ref())
            .ok_or_else(|| CoreError::internal("no authorization servers here"))?;
        let found = servers.discover(&settings.url).await.map_err(refused)?;
        let name = settings.name.as_str();
        let redirect = redirect_uri(origin, &admin.org, name);
        if let Some(client) = &settings.client {
            let valid = |v: &str| {
                !v.is_empty() && v.len() <= CLIENT_FIELD_MAX && !v.chars().any(char::is_control)
            };
            if !valid(&client.client_id) || !client.client_secret.as_deref().is_none_or(valid) {
                return Err(CoreError::invalid(
                    "invalid_field",
                    format!("the client id and secret must be 1 to {CLIENT_FIELD_MAX} characters"),
                ));
            }
            let context = oauth_client_context(admin.org.as_str(), name, &client.client_id);
            let sealer = self.sealer()?;
            return Ok(found.with_client(OAuthClient {
                client_id: client.client_id.clone(),
                secret_sealed: (client.client_secret.as_deref()).map(|s| sealer.seal(&context, s)),
                registration: ClientRegistration::PreRegistered,
            }));
        }
        let kept = previous
            .and_then(|p| p.oauth.as_ref())
            .filter(|p| p.server.issuer == found.issuer)
            .map(|p| p.client.clone());
        if let Some(client) = kept {
            return Ok(found.with_client(client));
        }
        if found.client_id_metadata_document_supported && origin.starts_with("https://") {
            return Ok(found.with_client(OAuthClient {
                client_id: client_document_url(origin, &admin.org, name),
                secret_sealed: None,
                registration: ClientRegistration::MetadataDocument,
            }));
        }
        if found.registration_endpoint.is_some() {
            return self.register(admin, name, found, &redirect).await;
        }
        Err(CoreError::invalid(
            "client_required",
            "the authorization server offers no registration: register a client there, with the \
             redirect URI shown, and enter its id and secret",
        ))
    }

    /// Registers the service at `found`'s authorization server for `redirect`, its secret
    /// sealed for the organisation, the integration and the client.
    async fn register(
        &self, admin: &Admin, name: &str, found: OAuthServer, redirect: &str,
    ) -> Result<OAuthAccess, CoreError> {
        let (servers, _) = self.oauth.as_ref().expect("checked by the caller");
        let org = self.org(admin).await?;
        let client_name = format!("Knowledge ({})", org.name);
        let (client_id, secret) =
            (servers.register(&found, redirect, &client_name).await).map_err(refused)?;
        let context = oauth_client_context(admin.org.as_str(), name, &client_id);
        let secret_sealed = secret.map(|s| self.sealer().map(|sealer| sealer.seal(&context, &s)));
        Ok(found.with_client(OAuthClient {
            client_id,
            secret_sealed: secret_sealed.transpose()?,
            registration: ClientRegistration::Dynamic,
        }))
    }
}
