//! Which client the service uses at an OAuth integration's authorization server, when an admin
//! adds or changes the integration: the one entered, the one already there, a Client ID
//! Metadata Document, or one Dynamic Client Registration. The authorization server here only
//! records what it is asked (its wire format is tested against real servers in lib/oauth and
//! lib/assembly); these tests are of the choice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_core::CoreError;
use knowledge_core::admin::{
    Admin, AdminStores, Administration, IntegrationSettings, PreRegisteredClient,
};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    ClientRegistration, IntegrationAuth, OAuthAccess, OAuthServer, Org, Plan,
};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{
    AuthorizationRequest, AuthorizationServers, DiscoveryFailure, IssuedTokens, Store,
    TokenEndpoint, TokenError,
};
use knowledge_core::seal::{Sealer, oauth_client_context};
use knowledge_core::testing::TransientStore;

/// An authorization server whose metadata the test sets, counting registrations.
struct Server {
    found: Mutex<OAuthServer>,
    registrations: AtomicUsize,
}

impl Server {
    fn new(metadata_documents: bool, registration: bool) -> Arc<Self> {
        Arc::new(Self {
            found: Mutex::new(OAuthServer {
                resource: "https://wiki.example/mcp".into(),
                issuer: "https://auth.wiki.example".into(),
                authorization_endpoint: "https://auth.wiki.example/authorize".into(),
                token_endpoint: "https://auth.wiki.example/token".into(),
                registration_endpoint: registration
                    .then(|| "https://auth.wiki.example/register".into()),
                revocation_endpoint: None,
                scopes: vec!["read".into()],
                iss_parameter_supported: true,
                client_id_metadata_document_supported: metadata_documents,
            }),
            registrations: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl TokenEndpoint for Server {
    async fn refresh(
        &self, _: &OAuthAccess, _: Option<&str>, _: &str,
    ) -> Result<IssuedTokens, TokenError> {
        Err(TokenError::Unavailable("not in these tests".into()))
    }

    async fn revoke(&self, _: &OAuthAccess, _: Option<&str>, _: &str) -> Result<(), TokenError> {
        Ok(())
    }
}

#[async_trait]
impl AuthorizationServers for Server {
    async fn discover(&self, _url: &str) -> Result<OAuthServer, DiscoveryFailure> {
        Ok(self.found.lock().unwrap().clone())
    }

    async fn register(
        &self, _: &OAuthServer, redirect_uri: &str, _: &str,
    ) -> Result<(String, Option<String>), DiscoveryFailure> {
        let n = self.registrations.fetch_add(1, Ordering::SeqCst);
        assert!(
            redirect_uri.ends_with("/api/oauth/callback/org_0123456789abcdef0123456789abcdef/wiki")
        );
        Ok((format!("client-{n}"), Some(format!("secret-{n}"))))
    }

    fn authorization(&self, _: &OAuthAccess, _: &str) -> Result<AuthorizationRequest, TokenError> {
        Err(TokenError::Unavailable("not in these tests".into()))
    }

    async fn exchange_code(
        &self, _: &OAuthAccess, _: Option<&str>, _: &str, _: &str, _: &str,
    ) -> Result<IssuedTokens, TokenError> {
        Err(TokenError::Unavailable("not in these tests".into()))
    }
}

const ORG: &str = "org_0123456789abcdef0123456789abcdef";

struct Rig {
    admin: Administration,
    sealer: Arc<Sealer>,
}

async fn rig(server: Arc<Server>, origin: &str) -> Rig {
    let store: Arc<dyn Store> = Arc::new(TransientStore::default());
    let org = Org::new(
        OrgId::parse(ORG).unwrap(),
        "Acme",
        Plan::Business,
        SystemClock.now(),
    );
    store.put_org(&org).await.unwrap();
    let sealer = Arc::new(Sealer::new(&[5; 32]).unwrap());
    let admin = Administration::new(AdminStores::of(&store), Arc::new(SystemClock))
        .with_sealer(sealer.clone())
        .with_authorization_servers(server, origin);
    Rig { admin, sealer }
}

fn operator() -> Admin {
    Admin::operator(OrgId::parse(ORG).unwrap())
}

fn wiki(auth: IntegrationAuth, client: Option<PreRegisteredClient>) -> IntegrationSettings {
    IntegrationSettings {
        name: "wiki".into(),
        url: "https://wiki.example/mcp".into(),
        auth,
        client,
    }
}

#[tokio::test]
async fn a_client_the_admin_entered_is_used_with_its_secret_sealed_and_nothing_is_registered() {
    let server = Server::new(true, true);
    let rig = rig(server.clone(), "https://app.example").await;
    let entered = PreRegisteredClient {
        client_id: "by-hand".into(),
        client_secret: Some("s3cret".into()),
    };
    let added = rig
        .admin
        .connect_integration(
            &operator(),
            &wiki(IntegrationAuth::OauthMember, Some(entered)),
        )
        .await;
    let client = added.unwrap().oauth.unwrap().client;
    assert_eq!(
        (client.client_id.as_str(), client.registration),
        ("by-hand", ClientRegistration::PreRegistered)
    );
    let sealed = client.secret_sealed.unwrap();
    assert!(!sealed.contains("s3cret"));
    let context = oauth_client_context(ORG, "wiki", "by-hand");
    assert_eq!(rig.sealer.open(&context, &sealed).unwrap(), "s3cret");
    assert_eq!(server.registrations.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_server_that_takes_metadata_documents_gets_the_documents_url_over_https_only() {
    let server = Server::new(true, true);
    let rig = rig(server.clone(), "https://app.example/").await;
    let added = rig
        .admin
        .connect_integration(&operator(), &wiki(IntegrationAuth::OauthMember, None))
        .await;
    let client = added.unwrap().oauth.unwrap().client;
    let document = format!("https://app.example/api/oauth/clients/{ORG}/wiki.json");
    assert_eq!(
        (client.client_id, client.registration),
        (document, ClientRegistration::MetadataDocument)
    );
    assert_eq!(client.secret_sealed, None);
    assert_eq!(server.registrations.load(Ordering::SeqCst), 0);

    // Over plain http the server could not fetch a document it trusts: a registration instead.
    let rig = rig_http(server.clone()).await;
    let added = rig
        .admin
        .connect_integration(&operator(), &wiki(IntegrationAuth::OauthMember, None))
        .await;
    assert_eq!(
        added.unwrap().oauth.unwrap().client.registration,
        ClientRegistration::Dynamic
    );
    assert_eq!(server.registrations.load(Ordering::SeqCst), 1);
}

async fn rig_http(server: Arc<Server>) -> Rig {
    rig(server, "http://127.0.0.1:8080").await
}

#[tokio::test]
async fn a_registration_is_made_once_and_kept_while_the_authorization_server_stays() {
    let server = Server::new(false, true);
    let rig = rig_http(server.clone()).await;
    let member = wiki(IntegrationAuth::OauthMember, None);
    let first = rig
        .admin
        .connect_integration(&operator(), &member)
        .await
        .unwrap();
    let org_kind = wiki(IntegrationAuth::OauthOrganisation, None);
    let again = rig
        .admin
        .connect_integration(&operator(), &org_kind)
        .await
        .unwrap();
    assert_eq!(first.oauth.unwrap().client, again.oauth.unwrap().client);
    assert_eq!(
        server.registrations.load(Ordering::SeqCst),
        1,
        "never a registration per change"
    );

    // Another authorization server: the old client means nothing there.
    server.found.lock().unwrap().issuer = "https://other-auth.example".into();
    let moved = rig
        .admin
        .connect_integration(&operator(), &member)
        .await
        .unwrap();
    assert_eq!(moved.oauth.unwrap().client.client_id, "client-1");
    assert_eq!(server.registrations.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_server_offering_no_way_to_register_asks_for_a_client_entered_by_hand() {
    let server = Server::new(false, false);
    let rig = rig_http(server).await;
    let refused = rig
        .admin
        .connect_integration(&operator(), &wiki(IntegrationAuth::OauthMember, None))
        .await;
    assert!(
        matches!(
            refused,
            Err(CoreError::InvalidInput {
                code: "client_required",
                ..
            })
        ),
        "{refused:?}"
    );
    let listed = rig.admin.integrations(&operator()).await.unwrap();
    assert!(listed.is_empty());
}
