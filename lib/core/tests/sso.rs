//! Single sign-on's own rules, on the transient store with a provider that vouches for whoever
//! a case says (the real exchange and token checks are the OIDC adapter's, tested against a real
//! provider): who is admitted, the binding of the provider identity at the first sign-in, just-in-
//! time membership, one answer for every organisation without SSO, and the sealed secret.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_core::CoreError;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, FederatedId, Member, Org, Plan, Profile, Role,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{
    Authorization, DirectoryStore, IdentityDiscovery, IdentityError, IdentityProvider, OidcClient,
    OrgStore, VerifiedIdentity,
};
use knowledge_core::seal::Sealer;
use knowledge_core::sso::{
    AuthorizationResponse, SignInTarget, SingleSignOn, SsoChange, SsoSettings, configure,
};
use knowledge_core::testing::TransientStore;
use serde_json::json;

const ISSUER: &str = "https://login.example.com";

/// Vouches for the identity the case sets, and records the client it was asked with.
#[derive(Default)]
struct Vouching {
    next: Mutex<Option<VerifiedIdentity>>,
    seen: Mutex<Vec<OidcClient>>,
}

#[async_trait]
impl IdentityProvider for Vouching {
    async fn authorize(&self, client: &OidcClient) -> Result<Authorization, IdentityError> {
        self.seen.lock().unwrap().push(client.clone());
        Ok(Authorization {
            url: format!("{}/authorize?client_id={}", client.issuer, client.client_id),
            state: "state".into(),
            nonce: "nonce".into(),
            pkce_verifier: "verifier".into(),
        })
    }

    async fn exchange(
        &self, client: &OidcClient, _code: &str, _iss: Option<&str>, _verifier: &str, _nonce: &str,
    ) -> Result<VerifiedIdentity, IdentityError> {
        self.seen.lock().unwrap().push(client.clone());
        let next = self.next.lock().unwrap().clone();
        next.ok_or_else(|| IdentityError::Rejected("no identity".into()))
    }
}

#[async_trait]
impl IdentityDiscovery for Vouching {
    async fn discover(&self, _issuer: &str) -> Result<(), IdentityError> {
        Ok(())
    }
}

struct Rig {
    sso: SingleSignOn,
    store: Arc<TransientStore>,
    provider: Arc<Vouching>,
    sealer: Arc<Sealer>,
    org: OrgId,
}

fn settings(domains: &[&str]) -> SsoSettings {
    SsoSettings {
        issuer: ISSUER.into(),
        client_id: "knowledge".into(),
        client_secret: Some("s3cret-value".into()),
        user_name_claim: None,
        email_domains: domains.iter().map(|d| d.to_string()).collect(),
        just_in_time: false,
        enabled: true,
    }
}

impl Rig {
    /// An organisation with SSO on for `example.com`.
    async fn new() -> Self {
        let store = Arc::new(TransientStore::default());
        let provider = Arc::new(Vouching::default());
        let sealer = Arc::new(Sealer::new(&[5; 32]).unwrap());
        let org = Self::org(&store).await;
        let rig = Self {
            sso: SingleSignOn::new(
                store.clone(),
                store.clone(),
                sealer.clone(),
                provider.clone(),
                Arc::new(SystemClock),
                "http://127.0.0.1:3000/api/auth/callback".into(),
            ),
            store,
            provider,
            sealer,
            org,
        };
        rig.configure(&rig.org, SsoChange::Set(settings(&["example.com"])))
            .await
            .unwrap();
        rig
    }

    async fn org(store: &TransientStore) -> OrgId {
        let org = Org::new(OrgId::generate(), "Acme", Plan::Business, SystemClock.now());
        store.put_org(&org).await.unwrap();
        org.id
    }

    async fn configure(
        &self, org: &OrgId, change: SsoChange,
    ) -> Result<knowledge_core::domain::SsoConfig, CoreError> {
        let now = SystemClock.now();
        let audit = AuditEntry::new(org, now, Actor::Admin, AuditAction::SsoConfigured, "sso");
        configure(&*self.store, &self.sealer, now, org, &audit, &change).await
    }

    /// A member named `user_name`, as SCIM provisions one.
    async fn provision(&self, user_name: &str) -> Member {
        let mut m = Member::new(
            self.org.clone(),
            UserId::generate(),
            Role::Admin,
            SystemClock.now(),
        );
        m.profile = Some(Profile {
            user_name: user_name.into(),
            external_id: None,
            attributes: Default::default(),
        });
        let audit = AuditEntry::new(
            &self.org,
            m.created_at,
            Actor::Scim,
            AuditAction::UserProvisioned,
            "t",
        );
        self.store.create_member(&m, &audit).await.unwrap();
        m
    }

    /// Signs in as whoever the provider vouches for with `sub` and `email`.
    async fn sign_in(
        &self, sub: &str, email: &str,
    ) -> Result<knowledge_core::service::Principal, CoreError> {
        let claims = json!({ "sub": sub, "email": email, "name": "Someone" });
        self.sign_in_with(sub, claims, None).await
    }

    /// Signs in as whoever the provider vouches for with `sub` and `claims`, the authorization
    /// response carrying `iss`.
    async fn sign_in_with(
        &self, sub: &str, claims: serde_json::Value, iss: Option<&str>,
    ) -> Result<knowledge_core::service::Principal, CoreError> {
        *self.provider.next.lock().unwrap() = Some(VerifiedIdentity {
            issuer: ISSUER.into(),
            subject: sub.into(),
            claims: claims.as_object().cloned().unwrap(),
        });
        let response = AuthorizationResponse { code: "code", iss };
        self.sso
            .finish(&self.org, response, "verifier", "nonce")
            .await
    }

    async fn member(&self, user: &UserId) -> Option<Member> {
        self.store.get_member(&self.org, user).await.unwrap()
    }
}

#[tokio::test]
async fn the_first_sign_in_binds_the_provider_identity_and_later_ones_must_match_it() {
    let rig = Rig::new().await;
    let ann = rig.provision("Ann@Example.com").await;
    let p = rig.sign_in("sub-ann", "ann@example.COM").await.unwrap();
    assert_eq!((p.user.clone(), p.role), (ann.user.clone(), Role::Admin));
    let bound = rig.member(&ann.user).await.unwrap().identity;
    let ann_identity = FederatedId {
        issuer: ISSUER.into(),
        subject: "sub-ann".into(),
    };
    assert_eq!(bound, Some(ann_identity));
    assert_eq!(rig.sign_in("sub-ann", "ann@example.com").await.unwrap(), p);

    // Another account at the provider renamed to Ann's address does not become Ann.
    let err = rig
        .sign_in("sub-mallory", "ann@example.com")
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::NotProvisioned), "{err:?}");
}

#[tokio::test]
async fn an_identity_bound_to_one_member_cannot_sign_in_as_another_after_a_rename() {
    let rig = Rig::new().await;
    rig.provision("ann@example.com").await;
    let bob = rig.provision("bob@example.com").await;
    rig.sign_in("sub-ann", "ann@example.com").await.unwrap();
    let err = rig.sign_in("sub-ann", "bob@example.com").await.unwrap_err();
    assert!(matches!(err, CoreError::NotProvisioned), "{err:?}");
    assert_eq!(rig.member(&bob.user).await.unwrap().identity, None);
}

#[tokio::test]
async fn a_person_who_is_not_a_member_is_refused_and_nothing_is_created() {
    let rig = Rig::new().await;
    let err = rig.sign_in("sub-eve", "eve@example.com").await.unwrap_err();
    assert!(matches!(err, CoreError::NotProvisioned), "{err:?}");
    assert!(rig.store.list_members(&rig.org).await.unwrap().is_empty());
}

#[tokio::test]
async fn just_in_time_membership_makes_a_new_person_a_viewer_bound_to_their_identity() {
    let rig = Rig::new().await;
    let mut jit = settings(&["example.com"]);
    jit.just_in_time = true;
    rig.configure(&rig.org, SsoChange::Set(jit)).await.unwrap();
    let p = rig.sign_in("sub-eve", "Eve@example.com").await.unwrap();
    assert_eq!(p.role, Role::Viewer);
    let eve = rig.member(&p.user).await.unwrap();
    assert_eq!(eve.profile.unwrap().user_name, "Eve@example.com");
    assert_eq!(eve.identity.unwrap().subject, "sub-eve");
    assert_eq!(rig.sign_in("sub-eve", "eve@example.com").await.unwrap(), p);
}

#[tokio::test]
async fn unknown_domains_organisations_and_switched_off_sso_get_one_answer() {
    let rig = Rig::new().await;
    let (org, _) = (rig.sso)
        .begin(&SignInTarget::Email("ann@EXAMPLE.com".into()))
        .await
        .unwrap();
    assert_eq!(org, rig.org);
    let plain = Rig::org(&rig.store).await;
    let targets = [
        SignInTarget::Email("ann@unknown.example".into()),
        SignInTarget::Org(OrgId::generate()),
        SignInTarget::Org(plain),
    ];
    for target in &targets {
        let err = rig.sso.begin(target).await.unwrap_err();
        assert!(
            matches!(err, CoreError::SsoUnavailable),
            "{target:?}: {err:?}"
        );
    }
    rig.configure(&rig.org, SsoChange::Enable(false))
        .await
        .unwrap();
    for target in [
        SignInTarget::Email("ann@example.com".into()),
        SignInTarget::Org(rig.org.clone()),
    ] {
        let err = rig.sso.begin(&target).await.unwrap_err();
        assert!(
            matches!(err, CoreError::SsoUnavailable),
            "{target:?}: {err:?}"
        );
    }
    let err = rig.sign_in("sub-ann", "ann@example.com").await.unwrap_err();
    assert!(matches!(err, CoreError::SsoUnavailable), "{err:?}");
}

#[tokio::test]
async fn the_client_secret_is_stored_sealed_and_reaches_the_provider_opened() {
    let rig = Rig::new().await;
    let stored = rig
        .store
        .get_org(&rig.org)
        .await
        .unwrap()
        .unwrap()
        .sso
        .unwrap();
    assert!(!stored.client_secret_sealed.contains("s3cret-value"));
    rig.sso
        .begin(&SignInTarget::Org(rig.org.clone()))
        .await
        .unwrap();
    let seen = rig.provider.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen.client_secret, "s3cret-value");

    // Left out, the secret is kept; with another client id it is required.
    let mut keep = settings(&["example.com", "example.org"]);
    keep.client_secret = None;
    let kept = rig
        .configure(&rig.org, SsoChange::Set(keep.clone()))
        .await
        .unwrap();
    assert_eq!(kept.client_secret_sealed, stored.client_secret_sealed);
    keep.client_id = "another".into();
    let err = rig
        .configure(&rig.org, SsoChange::Set(keep))
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::InvalidInput { .. }), "{err:?}");
}

#[tokio::test]
async fn a_domain_routed_to_one_organisation_is_refused_to_another_and_bad_fields_change_nothing() {
    let rig = Rig::new().await;
    let other = Rig::org(&rig.store).await;
    let err = rig
        .configure(&other, SsoChange::Set(settings(&["EXAMPLE.com"])))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CoreError::InvalidInput {
                code: "domain_taken",
                ..
            }
        ),
        "{err:?}"
    );
    let before = rig.store.get_org(&rig.org).await.unwrap().unwrap().sso;
    for bad in [
        SsoSettings {
            issuer: "http://idp.example.com".into(),
            ..settings(&[])
        },
        SsoSettings {
            client_id: " ".into(),
            ..settings(&[])
        },
        SsoSettings {
            user_name_claim: Some("a b".into()),
            ..settings(&[])
        },
        settings(&["not a domain"]),
    ] {
        let err = rig
            .configure(&rig.org, SsoChange::Set(bad))
            .await
            .unwrap_err();
        assert!(matches!(err, CoreError::InvalidInput { .. }), "{err:?}");
    }
    assert_eq!(
        rig.store.get_org(&rig.org).await.unwrap().unwrap().sso,
        before
    );
    assert_eq!(rig.store.get_org(&other).await.unwrap().unwrap().sso, None);
}

#[tokio::test]
async fn an_issuer_is_kept_exactly_as_given_trailing_slash_included() {
    let rig = Rig::new().await;
    let mut slashed = settings(&["example.com"]);
    slashed.issuer = " https://tenant.auth.example.com/ ".into();
    let stored = rig
        .configure(&rig.org, SsoChange::Set(slashed))
        .await
        .unwrap();
    assert_eq!(stored.issuer, "https://tenant.auth.example.com/");
}

#[tokio::test]
async fn each_organisation_is_sent_back_to_its_own_callback() {
    let rig = Rig::new().await;
    rig.sso
        .begin(&SignInTarget::Org(rig.org.clone()))
        .await
        .unwrap();
    let seen = rig.provider.seen.lock().unwrap().clone();
    let expected = format!("http://127.0.0.1:3000/api/auth/callback/{}", rig.org);
    assert_eq!(seen[0].redirect_uri, expected);
    assert_eq!(rig.sso.redirect_uri(&rig.org), expected);
}

#[tokio::test]
async fn a_response_whose_iss_is_another_issuer_is_refused_before_the_code_is_sent() {
    let rig = Rig::new().await;
    let ann = rig.provision("ann@example.com").await;
    let claims = json!({ "sub": "sub-ann", "email": "ann@example.com" });
    let other = Some("https://login.example.com/");
    let err = rig.sign_in_with("sub-ann", claims.clone(), other).await;
    assert!(matches!(err, Err(CoreError::SignInFailed)), "{err:?}");
    assert!(rig.provider.seen.lock().unwrap().is_empty(), "no exchange");
    assert_eq!(rig.member(&ann.user).await.unwrap().identity, None);
    let p = rig.sign_in_with("sub-ann", claims, Some(ISSUER)).await;
    assert_eq!(p.unwrap().user, ann.user);
}

#[tokio::test]
async fn an_email_the_provider_calls_unverified_binds_and_creates_nobody() {
    let rig = Rig::new().await;
    let ann = rig.provision("ann@example.com").await;
    for verified in [json!(false), json!("false"), json!("FALSE")] {
        let claims =
            json!({ "sub": "sub-ann", "email": "ann@example.com", "email_verified": verified });
        let err = rig.sign_in_with("sub-ann", claims, None).await;
        assert!(
            matches!(err, Err(CoreError::EmailUnverified)),
            "{verified}: {err:?}"
        );
    }
    assert_eq!(rig.member(&ann.user).await.unwrap().identity, None);
    // Just in time, an unverified stranger is not made a member either.
    let mut jit = settings(&["example.com"]);
    jit.just_in_time = true;
    rig.configure(&rig.org, SsoChange::Set(jit)).await.unwrap();
    let before = rig.store.list_members(&rig.org).await.unwrap();
    let claims = json!({ "sub": "sub-eve", "email": "eve@example.com", "email_verified": false });
    let err = rig.sign_in_with("sub-eve", claims, None).await;
    assert!(matches!(err, Err(CoreError::EmailUnverified)), "{err:?}");
    assert_eq!(rig.store.list_members(&rig.org).await.unwrap(), before);
    // Verified, or not said at all: signed in as before.
    let claims = json!({ "sub": "sub-ann", "email": "ann@example.com", "email_verified": true });
    assert!(rig.sign_in_with("sub-ann", claims, None).await.is_ok());
}

#[tokio::test]
async fn an_unverified_email_does_not_matter_when_members_are_named_by_another_claim() {
    let rig = Rig::new().await;
    let mut by_upn = settings(&["example.com"]);
    by_upn.user_name_claim = Some("upn".into());
    rig.configure(&rig.org, SsoChange::Set(by_upn))
        .await
        .unwrap();
    let ann = rig.provision("ann@corp.example.com").await;
    let claims = json!({ "sub": "s", "upn": "ann@corp.example.com", "email": "x@y.z", "email_verified": false });
    let p = rig.sign_in_with("s", claims, None).await.unwrap();
    assert_eq!(p.user, ann.user);
}
