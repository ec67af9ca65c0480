//! What the handlers run on: the HTTP settings, and the state of each route family.

use std::sync::Arc;

use knowledge_core::admin::Administration;
use knowledge_core::connections::Connections;
use knowledge_core::documents::Documents;
use knowledge_core::scim::Directory;
use knowledge_core::service::Service;
use knowledge_core::sso::SingleSignOn;

use knowledge_core::clock::Timestamp;
use knowledge_core::ids::{OrgId, UserId};

use crate::cookie::{
    COOKIE_NAME, CookieError, CookieSigner, Lifetime, SECURE_COOKIE_NAME, set_cookie_header,
};

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The application's own origin (`scheme://host[:port]`); POST and DELETE must carry it.
    pub app_origin: String,
    /// How long a sign-in lasts.
    pub lifetime: Lifetime,
    /// Where responses are buffered whole before they leave (AWS Lambda's, at most 6 MB):
    /// the bytes an export may hold; it is refused as too large past them instead of failing
    /// half sent. `None` where responses stream (the local service): exports are unbounded.
    pub buffered_export_max: Option<usize>,
}

impl HttpConfig {
    /// Settings for `app_origin` with the default session lifetime, streamed responses.
    pub fn new(app_origin: &str) -> Self {
        Self {
            app_origin: app_origin.to_owned(),
            lifetime: Lifetime::default(),
            buffered_export_max: None,
        }
    }

    /// Cookies get `Secure` whenever the application is served over HTTPS.
    pub fn secure_cookies(&self) -> bool {
        self.app_origin.starts_with("https://")
    }

    /// The session cookie's name: with the `__Host-` prefix over HTTPS.
    pub fn cookie_name(&self) -> &'static str {
        match self.secure_cookies() {
            true => SECURE_COOKIE_NAME,
            false => COOKIE_NAME,
        }
    }

    /// The name of the cookie that carries a sign-in in progress to the callback.
    pub fn login_cookie_name(&self) -> &'static str {
        match self.secure_cookies() {
            true => "__Host-ks_login",
            false => "ks_login",
        }
    }

    /// Where every organisation's callback lives: `<origin>/api/auth/callback`, followed by
    /// the organisation's id.
    pub fn callback_base(&self) -> String {
        format!("{}/api/auth/callback", self.app_origin)
    }

    /// Where `org`'s identity provider sends the browser back: registered at its provider.
    pub fn callback_url(&self, org: &OrgId) -> String {
        knowledge_core::sso::redirect_uri(&self.callback_base(), org)
    }
}

/// What the session, `/api/auth` and `/api/admin` routes run on: the use cases, the cookie
/// signer and the HTTP settings; single sign-on and administration where their routes are
/// served. One allocation shared by every request: cloning it (each extractor does) is one
/// reference count.
#[derive(Clone)]
pub struct SessionApi(Arc<SessionState>);

impl std::ops::Deref for SessionApi {
    type Target = SessionState;

    fn deref(&self) -> &SessionState {
        &self.0
    }
}

/// The parts of a [`SessionApi`].
#[derive(Clone)]
pub struct SessionState {
    pub service: Service,
    pub signer: Arc<CookieSigner>,
    pub config: Arc<HttpConfig>,
    /// `None` where no single sign-on route is served (the routers are built accordingly).
    pub sso: Option<SingleSignOn>,
    /// `None` where no admin route is served.
    pub admin: Option<Administration>,
    /// `None` where no route connects accounts to OAuth integrations.
    pub connections: Option<Arc<Connections>>,
    /// `None` where no route reads or changes documents.
    pub documents: Option<Documents>,
}

impl SessionApi {
    pub fn new(service: Service, signer: Arc<CookieSigner>, config: HttpConfig) -> Self {
        Self(Arc::new(SessionState {
            service,
            signer,
            config: Arc::new(config),
            sso: None,
            admin: None,
            connections: None,
            documents: None,
        }))
    }

    /// The `Set-Cookie` value of a session cookie for `user` in `org`, signed in at
    /// `signed_in_at`, expiring at `expires_at` (seconds since the epoch).
    pub fn session_cookie(
        &self, user: &UserId, org: &OrgId, signed_in_at: Timestamp, expires_at: u64,
    ) -> Result<String, CookieError> {
        let token = (self.signer).mint_session(user, org, signed_in_at, expires_at)?;
        let config = &self.config;
        let (name, secure) = (config.cookie_name(), config.secure_cookies());
        Ok(set_cookie_header(name, &token, expires_at, secure))
    }

    /// The same, serving the admin routes through `admin`.
    pub fn with_admin(mut self, admin: Administration) -> Self {
        Arc::make_mut(&mut self.0).admin = Some(admin);
        self
    }

    /// The same, connecting accounts to OAuth integrations through `connections`.
    pub fn with_connections(mut self, connections: Arc<Connections>) -> Self {
        Arc::make_mut(&mut self.0).connections = Some(connections);
        self
    }

    /// The same, serving the documents' routes through `documents`.
    pub fn with_documents(mut self, documents: Documents) -> Self {
        Arc::make_mut(&mut self.0).documents = Some(documents);
        self
    }

    /// The documents' use cases. Errors: internal where they are not assembled.
    pub fn documents(&self) -> Result<&Documents, crate::error::ApiError> {
        let documents = self.documents.as_ref();
        Ok(documents.ok_or_else(|| {
            knowledge_core::CoreError::internal("the documents' routes are not assembled here")
        })?)
    }

    /// The same, serving single sign-on through `sso`.
    pub fn with_sso(mut self, sso: SingleSignOn) -> Self {
        Arc::make_mut(&mut self.0).sso = Some(sso);
        self
    }
}

/// What the SCIM routes run on: the directory, and the origin their resources' `location`s
/// are built on. No cookie signer: SCIM authenticates by bearer token.
#[derive(Clone)]
pub struct ScimApi {
    pub directory: Directory,
    pub config: Arc<HttpConfig>,
}

impl ScimApi {
    pub fn new(directory: Directory, config: HttpConfig) -> Self {
        Self {
            directory,
            config: Arc::new(config),
        }
    }
}
