//! A fake OpenID provider on loopback that speaks the real wire formats (discovery, JWKS, the
//! token endpoint with client authentication and PKCE) and mints whatever ID token a case asks
//! for, wrong ones included: what a real provider never sends, and the adapter must refuse.
//! The keys in `tests/keys` are test keys made for this, and nothing else.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const CLIENT_ID: &str = "knowledge";
pub const CLIENT_SECRET: &str = "the-client-secret";
pub const REDIRECT: &str = "http://127.0.0.1:3000/api/auth/callback";

/// One of the test keys: `first` or `second`.
pub fn key(name: &str) -> (EncodingKey, Value) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/keys");
    // PKCS#1 DER, as `openssl rsa -traditional -outform DER` writes it.
    let der = std::fs::read(format!("{dir}/{name}.der")).unwrap();
    let jwk = std::fs::read_to_string(format!("{dir}/{name}.jwk.json")).unwrap();
    (
        EncodingKey::from_rsa_der(&der),
        serde_json::from_str(&jwk).unwrap(),
    )
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// How the next ID token is made; each field wrong on purpose in one case or another.
#[derive(Clone)]
pub struct Minting {
    /// The key that signs it (`first`, `second`, or `second-as-first`: `second` under
    /// `first`'s key id), or `None` for `alg: none`.
    pub key: Option<&'static str>,
    pub claims: Value,
}

/// What a discovery request gets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Discovery {
    Normal,
    /// A redirect to the real document: must not be followed.
    Redirect,
    /// A document larger than any provider's.
    Huge,
}

pub struct Fake {
    pub issuer: String,
    /// The keys the JWKS publishes, by name.
    pub published: Mutex<Vec<&'static str>>,
    pub minting: Mutex<Option<Minting>>,
    pub discovery: Mutex<Discovery>,
    /// Codes issued, with the PKCE challenge and nonce of their authorization request.
    codes: Mutex<HashMap<String, (String, String)>>,
    pub discovery_hits: AtomicUsize,
    pub jwks_hits: AtomicUsize,
}

impl Fake {
    /// A provider on a free loopback port, publishing the key `first`.
    pub async fn start() -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Arc::new(Self {
            issuer: format!("http://{}", listener.local_addr().unwrap()),
            published: Mutex::new(vec!["first"]),
            minting: Mutex::new(None),
            discovery: Mutex::new(Discovery::Normal),
            codes: Mutex::new(HashMap::new()),
            discovery_hits: AtomicUsize::new(0),
            jwks_hits: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/real-configuration", get(document))
            .route("/jwks", get(jwks))
            .route("/token", post(token))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        fake
    }

    /// Claims of a token this provider would mint for `sub` now, with `nonce`.
    pub fn claims(&self, sub: &str, nonce: &str) -> Value {
        json!({
            "iss": self.issuer, "aud": CLIENT_ID, "sub": sub, "nonce": nonce,
            "iat": now(), "exp": now() + 300,
            "email": "ann@example.com", "preferred_username": "ann@corp.example.com",
            "upn": "ANN@corp.example.com", "name": "Ann Example",
        })
    }

    /// Takes the browser's part: reads the authorization URL's challenge and nonce, and issues
    /// a code for them. Returns the code and the nonce.
    pub fn approve(&self, authorization_url: &str) -> (String, String) {
        let url = reqwest::Url::parse(authorization_url).unwrap();
        let q: HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], CLIENT_ID);
        let code = format!("code-{}", self.codes.lock().unwrap().len());
        let grant = (q["code_challenge"].clone(), q["nonce"].clone());
        self.codes.lock().unwrap().insert(code.clone(), grant);
        (code, q["nonce"].clone())
    }

    pub fn mint_next(&self, minting: Minting) {
        *self.minting.lock().unwrap() = Some(minting);
    }
}

fn document_of(fake: &Fake) -> Value {
    let i = &fake.issuer;
    json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    })
}

async fn discovery(State(fake): State<Arc<Fake>>) -> Response {
    fake.discovery_hits.fetch_add(1, Ordering::SeqCst);
    let mode = *fake.discovery.lock().unwrap();
    match mode {
        Discovery::Normal => Json(document_of(&fake)).into_response(),
        Discovery::Redirect => Redirect::temporary("/real-configuration").into_response(),
        Discovery::Huge => {
            let mut doc = document_of(&fake);
            doc["padding"] = json!("x".repeat(2 * 1024 * 1024));
            Json(doc).into_response()
        }
    }
}

async fn document(State(fake): State<Arc<Fake>>) -> Response {
    Json(document_of(&fake)).into_response()
}

async fn jwks(State(fake): State<Arc<Fake>>) -> Response {
    fake.jwks_hits.fetch_add(1, Ordering::SeqCst);
    let names = fake.published.lock().unwrap().clone();
    let keys: Vec<Value> = names.iter().map(|n| key(n).1).collect();
    Json(json!({ "keys": keys })).into_response()
}

fn refuse(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response()
}

async fn token(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let basic = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(basic.as_str())
    {
        return refuse("invalid_client");
    }
    let (Some(code), Some(verifier)) = (form.get("code"), form.get("code_verifier")) else {
        return refuse("invalid_request");
    };
    let Some((challenge, nonce)) = fake.codes.lock().unwrap().remove(code) else {
        return refuse("invalid_grant");
    };
    if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != challenge
        || form.get("redirect_uri").map(String::as_str) != Some(REDIRECT)
    {
        return refuse("invalid_grant");
    }
    let minting = fake
        .minting
        .lock()
        .unwrap()
        .take()
        .unwrap_or_else(|| Minting {
            key: Some("first"),
            claims: fake.claims("ann-sub", &nonce),
        });
    let id_token = match minting.key {
        Some(name) => {
            // `second-as-first`: signed by `second` under `first`'s key id.
            let (signer, kid) = match name {
                "second-as-first" => ("second", "first"),
                other => (other, other),
            };
            let mut header = Header::new(Algorithm::RS256);
            header.kid = Some(kid.to_owned());
            jsonwebtoken::encode(&header, &minting.claims, &key(signer).0).unwrap()
        }
        None => format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(minting.claims.to_string())
        ),
    };
    Json(json!({
        "access_token": "an-access-token", "token_type": "Bearer", "expires_in": 300,
        "id_token": id_token,
    }))
    .into_response()
}
