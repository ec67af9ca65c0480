//! A fake OpenID provider on loopback that speaks the real wire formats (discovery, JWKS, the
//! token endpoint with client authentication and PKCE) and mints whatever ID token a case asks
//! for, wrong ones included: what a real provider never sends, and the adapter must refuse.
//! The keys in `tests/keys` are test keys made for this, and nothing else.

// Each test crate uses its part of the fake.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// A test key by the name the JWKS and the cases give it: `first` and `second` (RSA, RS256),
/// `pss` (`first`'s key published for PS256) and `ec` (P-256, ES256). Returns the signing
/// key, its algorithm and its JWK.
pub fn key(name: &str) -> (EncodingKey, Algorithm, Value) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/keys");
    let file = if name == "pss" { "first" } else { name };
    // RSA: PKCS#1 DER, as `openssl rsa -traditional -outform DER` writes it; EC: PKCS#8 DER.
    let der = std::fs::read(format!("{dir}/{file}.der")).unwrap();
    let jwk = std::fs::read_to_string(format!("{dir}/{file}.jwk.json")).unwrap();
    let mut jwk: Value = serde_json::from_str(&jwk).unwrap();
    match name {
        "ec" => (EncodingKey::from_ec_der(&der), Algorithm::ES256, jwk),
        "pss" => {
            jwk["kid"] = json!("pss");
            jwk["alg"] = json!("PS256");
            (EncodingKey::from_rsa_der(&der), Algorithm::PS256, jwk)
        }
        _ => (EncodingKey::from_rsa_der(&der), Algorithm::RS256, jwk),
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// How the next ID token is signed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Signing {
    /// By the named key (see [`key`]), under its own key id.
    Key(&'static str),
    /// By `second`, under `first`'s key id: a signature that does not verify.
    SecondAsFirst,
    /// HS256 with the client secret as the key.
    ClientSecret,
    /// Not at all: `alg: none`.
    Unsigned,
    /// Not at all, under the `alg` named (`None`, `NONE`: spellings of none).
    UnsignedAs(&'static str),
    /// Not a JWT at all.
    NotAJwt,
}

/// How the next ID token is made; each field wrong on purpose in one case or another.
#[derive(Clone)]
pub struct Minting {
    pub signing: Signing,
    pub claims: Value,
}

/// What a discovery request gets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Discovery {
    Normal,
    /// A redirect to the real document: must not be followed.
    Redirect,
    /// A document larger than any provider's, with its length announced.
    Huge,
    /// A document naming another issuer (this one with a trailing slash).
    OtherIssuer,
    /// A server error.
    Broken,
}

pub struct Fake {
    pub issuer: String,
    /// The keys the JWKS publishes, by name.
    pub published: Mutex<Vec<&'static str>>,
    pub minting: Mutex<Option<Minting>>,
    pub discovery: Mutex<Discovery>,
    /// How long a discovery request takes.
    pub discovery_delay: Mutex<Duration>,
    /// The document lists `client_secret_post` alone, and the token endpoint wants it.
    pub post_only: AtomicBool,
    /// The token endpoint answers a server error page instead of tokens.
    pub token_broken: AtomicBool,
    /// The document says every authorization response carries `iss` (RFC 9207).
    pub iss_supported: AtomicBool,
    /// Requests the token endpoint received.
    pub token_hits: AtomicUsize,
    /// Codes issued, with the PKCE challenge and nonce of their authorization request.
    codes: Mutex<HashMap<String, (String, String)>>,
    pub discovery_hits: AtomicUsize,
    pub jwks_hits: AtomicUsize,
}

impl Fake {
    /// A provider on a free loopback port, publishing the keys `first`, `pss` and `ec`.
    pub async fn start() -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Arc::new(Self {
            issuer: format!("http://{}", listener.local_addr().unwrap()),
            published: Mutex::new(vec!["first", "pss", "ec"]),
            minting: Mutex::new(None),
            discovery: Mutex::new(Discovery::Normal),
            discovery_delay: Mutex::new(Duration::ZERO),
            post_only: AtomicBool::new(false),
            token_broken: AtomicBool::new(false),
            iss_supported: AtomicBool::new(false),
            token_hits: AtomicUsize::new(0),
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

    /// Claims of a token this provider would mint for `sub` now, with `nonce`: the standard
    /// ones, one it has no standard name for (`upn`), and two that bend the standard's types
    /// as some providers do (`updated_at` as a date, `email_verified` as a string).
    pub fn claims(&self, sub: &str, nonce: &str) -> Value {
        json!({
            "iss": self.issuer, "aud": CLIENT_ID, "sub": sub, "nonce": nonce,
            "iat": now(), "exp": now() + 300,
            "email": "ann@example.com", "preferred_username": "ann@corp.example.com",
            "upn": "ANN@corp.example.com", "name": "Ann Example",
            "updated_at": "2025-12-23T10:59:07.841Z", "email_verified": "true",
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
        let mut codes = self.codes.lock().unwrap();
        let code = format!("code-{}", codes.len());
        codes.insert(
            code.clone(),
            (q["code_challenge"].clone(), q["nonce"].clone()),
        );
        (code, q["nonce"].clone())
    }

    pub fn mint_next(&self, minting: Minting) {
        *self.minting.lock().unwrap() = Some(minting);
    }
}

fn document_of(fake: &Fake) -> Value {
    let i = &fake.issuer;
    let mut doc = json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256", "PS256", "ES256"],
    });
    if fake.post_only.load(Ordering::SeqCst) {
        doc["token_endpoint_auth_methods_supported"] = json!(["client_secret_post"]);
    }
    if fake.iss_supported.load(Ordering::SeqCst) {
        doc["authorization_response_iss_parameter_supported"] = json!(true);
    }
    doc
}

async fn discovery(State(fake): State<Arc<Fake>>) -> Response {
    fake.discovery_hits.fetch_add(1, Ordering::SeqCst);
    let delay = *fake.discovery_delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    let mode = *fake.discovery.lock().unwrap();
    match mode {
        Discovery::Normal => Json(document_of(&fake)).into_response(),
        Discovery::Redirect => Redirect::temporary("/real-configuration").into_response(),
        Discovery::Huge => {
            let mut doc = document_of(&fake);
            doc["padding"] = json!("x".repeat(2 * 1024 * 1024));
            Json(doc).into_response()
        }
        Discovery::OtherIssuer => {
            let mut doc = document_of(&fake);
            doc["issuer"] = json!(format!("{}/", fake.issuer));
            Json(doc).into_response()
        }
        Discovery::Broken => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn document(State(fake): State<Arc<Fake>>) -> Response {
    Json(document_of(&fake)).into_response()
}

async fn jwks(State(fake): State<Arc<Fake>>) -> Response {
    fake.jwks_hits.fetch_add(1, Ordering::SeqCst);
    let names = fake.published.lock().unwrap().clone();
    let keys: Vec<Value> = names.iter().map(|n| key(n).2).collect();
    Json(json!({ "keys": keys })).into_response()
}

fn refuse(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response()
}

/// Whether the request authenticates the client the way the document says it must.
fn authenticated(fake: &Fake, headers: &HeaderMap, form: &HashMap<String, String>) -> bool {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if fake.post_only.load(Ordering::SeqCst) {
        authorization.is_none()
            && form.get("client_id").map(String::as_str) == Some(CLIENT_ID)
            && form.get("client_secret").map(String::as_str) == Some(CLIENT_SECRET)
    } else {
        let basic = STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
        authorization == Some(format!("Basic {basic}").as_str())
            && !form.contains_key("client_secret")
    }
}

fn sign(minting: &Minting) -> String {
    let signed = |signer: &str, kid: &str| {
        let (key, alg, _) = key(signer);
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &minting.claims, &key).unwrap()
    };
    match minting.signing {
        Signing::Key(name) => signed(name, name),
        Signing::SecondAsFirst => signed("second", "first"),
        Signing::ClientSecret => jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &minting.claims,
            &EncodingKey::from_secret(CLIENT_SECRET.as_bytes()),
        )
        .unwrap(),
        Signing::Unsigned => unsigned("none", &minting.claims),
        Signing::UnsignedAs(alg) => unsigned(alg, &minting.claims),
        Signing::NotAJwt => "not-a-jwt".into(),
    }
}

fn unsigned(alg: &str, claims: &Value) -> String {
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({ "alg": alg, "typ": "JWT" }).to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

async fn token(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: Bytes) -> Response {
    fake.token_hits.fetch_add(1, Ordering::SeqCst);
    if fake.token_broken.load(Ordering::SeqCst) {
        let page = "<html><body>Internal Server Error</body></html>";
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/html")],
            page,
        )
            .into_response();
    }
    let form: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    if !authenticated(&fake, &headers, &form) {
        return refuse("invalid_client");
    }
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return refuse("unsupported_grant_type");
    }
    let (Some(code), Some(verifier)) = (form.get("code"), form.get("code_verifier")) else {
        return refuse("invalid_request");
    };
    // A code is good for one attempt, whatever its outcome.
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
            signing: Signing::Key("first"),
            claims: fake.claims("ann-sub", &nonce),
        });
    Json(json!({
        "access_token": "an-access-token", "token_type": "Bearer", "expires_in": 300,
        "id_token": sign(&minting),
    }))
    .into_response()
}

/// A provider on a free loopback port whose every answer is a `200` JSON document that never
/// ends: JSON whitespace in chunks, with no length announced, until the client hangs up.
/// Returns its issuer.
pub async fn endless() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                let mut chunk = format!("{:x}\r\n", 64 * 1024).into_bytes();
                chunk.extend([b' '; 64 * 1024]);
                chunk.extend(b"\r\n");
                if read_head(&stream).await.is_err()
                    || write_all(&stream, head.as_bytes()).await.is_err()
                {
                    return;
                }
                while write_all(&stream, &chunk).await.is_ok() {}
            });
        }
    });
    issuer
}

/// Reads a request up to the end of its head (a GET has no body).
async fn read_head(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        stream.readable().await?;
        match stream.try_read(&mut buf) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn write_all(stream: &tokio::net::TcpStream, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        stream.writable().await?;
        match stream.try_write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
