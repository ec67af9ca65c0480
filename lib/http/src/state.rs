//! What the handlers run on: the HTTP settings, and the state of each route family.

use std::sync::Arc;

use knowledge_core::scim::Directory;
use knowledge_core::service::Service;

use crate::cookie::CookieSigner;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The application's own origin (`scheme://host[:port]`); POST and DELETE must carry it.
    pub app_origin: String,
}

impl HttpConfig {
    /// Cookies get `Secure` whenever the application is served over HTTPS.
    pub fn secure_cookies(&self) -> bool {
        self.app_origin.starts_with("https://")
    }
}

/// What the session routes and the organisation switch run on: the use cases, the cookie
/// signer and the HTTP settings.
#[derive(Clone)]
pub struct SessionApi {
    pub service: Service,
    pub signer: Arc<CookieSigner>,
    pub config: Arc<HttpConfig>,
}

impl SessionApi {
    pub fn new(service: Service, signer: Arc<CookieSigner>, config: HttpConfig) -> Self {
        Self {
            service,
            signer,
            config: Arc::new(config),
        }
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
