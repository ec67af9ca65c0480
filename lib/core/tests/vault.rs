//! The token vault over the transient store (which keeps the storage contract), against a token
//! endpoint that behaves as a strict authorization server does: refresh tokens rotate, and one
//! sent twice revokes the whole grant.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, ClientRegistration, Grant, GrantOwner, GrantStatus,
    IntegrationAuth, IntegrationConfig, Lease, Member, OAuthAccess, OAuthClient, OAuthServer,
    ReconnectReason, Role,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{DirectoryStore, GrantStore, IssuedTokens, TokenEndpoint, TokenError};
use knowledge_core::seal::{Sealer, grant_context};
use knowledge_core::testing::TransientStore;
use knowledge_core::vault::{GrantAt, Vault, VaultError, VaultTiming};

/// How the fake server answers the next refreshes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Serve,
    /// Fails before issuing anything (a 5xx).
    Down,
    /// Issues new tokens, then loses the answer (a stall after the rotation).
    LoseAnswer,
}

/// A strict authorization server's token endpoint: each refresh token works once and is
/// replaced; one sent again revokes every token of the grant.
struct Server {
    delay: Duration,
    /// How long refreshed access tokens last.
    lasting: Mutex<Duration>,
    mode: Mutex<Mode>,
    live: Mutex<HashSet<String>>,
    spent: Mutex<HashSet<String>>,
    issued: AtomicUsize,
    refreshes: AtomicUsize,
    reuses: AtomicUsize,
    revoked: Mutex<Vec<String>>,
}

impl Server {
    fn new(delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            delay,
            lasting: Mutex::new(Duration::from_secs(3600)),
            mode: Mutex::new(Mode::Serve),
            live: Mutex::default(),
            spent: Mutex::default(),
            issued: AtomicUsize::new(0),
            refreshes: AtomicUsize::new(0),
            reuses: AtomicUsize::new(0),
            revoked: Mutex::default(),
        })
    }

    /// Tokens as the code exchange would issue them, lasting `lasts`.
    fn issue(&self, lasts: Duration) -> IssuedTokens {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let refresh = format!("rt-{n}");
        self.live.lock().unwrap().insert(refresh.clone());
        IssuedTokens {
            access_token: format!("at-{n}"),
            refresh_token: Some(refresh),
            expires_in: Some(lasts),
            scope: Some("read".into()),
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn set_lasting(&self, lasting: Duration) {
        *self.lasting.lock().unwrap() = lasting;
    }

    fn refreshes(&self) -> usize {
        self.refreshes.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl TokenEndpoint for Server {
    async fn refresh(
        &self, _access: &OAuthAccess, _secret: Option<&str>, refresh_token: &str,
    ) -> Result<IssuedTokens, TokenError> {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let mode = *self.mode.lock().unwrap();
        if mode == Mode::Down {
            return Err(TokenError::Unavailable("503".into()));
        }
        if self.spent.lock().unwrap().contains(refresh_token) {
            self.reuses.fetch_add(1, Ordering::SeqCst);
            self.live.lock().unwrap().clear();
            return Err(TokenError::Refused("refresh token reused".into()));
        }
        if !self.live.lock().unwrap().remove(refresh_token) {
            return Err(TokenError::Refused("unknown refresh token".into()));
        }
        self.spent.lock().unwrap().insert(refresh_token.to_owned());
        let lasting = *self.lasting.lock().unwrap();
        let tokens = self.issue(lasting);
        match mode {
            Mode::LoseAnswer => Err(TokenError::Uncertain("the answer stalled".into())),
            _ => Ok(tokens),
        }
    }

    async fn revoke(
        &self, _access: &OAuthAccess, _secret: Option<&str>, token: &str,
    ) -> Result<(), TokenError> {
        self.revoked.lock().unwrap().push(token.to_owned());
        self.live.lock().unwrap().remove(token);
        Ok(())
    }
}

struct Rig {
    store: Arc<TransientStore>,
    server: Arc<Server>,
    sealer: Arc<Sealer>,
    at: GrantAt,
    user: UserId,
}

fn wiki() -> IntegrationConfig {
    IntegrationConfig {
        name: "wiki".into(),
        url: "https://wiki.example/mcp".into(),
        auth: IntegrationAuth::OauthMember,
        created_at: SystemClock.now(),
        oauth: Some(OAuthAccess {
            server: OAuthServer {
                resource: "https://wiki.example/mcp".into(),
                issuer: "https://auth.wiki.example".into(),
                authorization_endpoint: "https://auth.wiki.example/authorize".into(),
                token_endpoint: "https://auth.wiki.example/token".into(),
                registration_endpoint: None,
                revocation_endpoint: Some("https://auth.wiki.example/revoke".into()),
                scopes: vec!["read".into()],
                iss_parameter_supported: false,
                client_id_metadata_document_supported: false,
            },
            client: OAuthClient {
                client_id: "knowledge".into(),
                secret_sealed: None,
                registration: ClientRegistration::PreRegistered,
            },
        }),
        org_grant_sealed: None,
        tool_rules: Default::default(),
    }
}

impl Rig {
    /// A member of a new organisation, with no grant yet, and a server answering after `delay`.
    async fn new(delay: Duration) -> Self {
        let store = Arc::new(TransientStore::default());
        let org = OrgId::generate();
        let member = Member::new(
            org.clone(),
            UserId::generate(),
            Role::Viewer,
            SystemClock.now(),
        );
        store
            .create_member(&member, &self::audit(&org))
            .await
            .unwrap();
        let at = GrantAt::new(&org, GrantOwner::Member(member.user.clone()), &wiki());
        Self {
            store,
            server: Server::new(delay),
            sealer: Arc::new(Sealer::new(&[7; 32]).unwrap()),
            at,
            user: member.user,
        }
    }

    /// A vault over the rig's store and server: one per process it stands for.
    fn vault(&self) -> Arc<Vault> {
        self.vault_leasing(Duration::from_secs(2))
    }

    /// The same, whose refresh leases last `lease`.
    fn vault_leasing(&self, lease: Duration) -> Arc<Vault> {
        Arc::new(Vault::new(
            self.store.clone(),
            self.server.clone(),
            self.sealer.clone(),
            Arc::new(SystemClock),
            VaultTiming {
                margin: Duration::from_secs(60),
                lease,
                poll: Duration::from_millis(10),
            },
        ))
    }

    /// Connects with tokens that last `lasts` (due for a refresh at once when under a minute).
    async fn connect(&self, lasts: Duration) {
        let tokens = self.server.issue(lasts);
        let audit = audit(&self.at.org);
        self.vault()
            .connect(&self.at, tokens, &self.user, &audit)
            .await
            .unwrap();
    }

    async fn sealed(&self) -> Option<String> {
        let (org, owner) = (&self.at.org, &self.at.owner);
        self.store.get_grant(org, owner, "wiki").await.unwrap()
    }

    async fn grant(&self) -> Grant {
        let sealed = self.sealed().await.expect("a grant is stored");
        self.vault().open(&self.at, &sealed).expect("it opens")
    }

    /// Stores `grant` as it stands, over whatever is stored.
    async fn overwrite(&self, grant: &Grant) {
        let context = grant_context(
            self.at.org.as_str(),
            self.user.as_str(),
            "wiki",
            &wiki().url,
        );
        let sealed = self
            .sealer
            .seal(&context, &serde_json::to_string(grant).unwrap());
        let previous = self.sealed().await;
        let (org, owner) = (&self.at.org, &self.at.owner);
        self.store
            .swap_grant(org, owner, "wiki", previous.as_deref(), Some(&sealed), None)
            .await
            .unwrap();
    }
}

fn audit(org: &OrgId) -> AuditEntry {
    AuditEntry::new(
        org,
        SystemClock.now(),
        Actor::Member,
        AuditAction::AccountConnected,
        "wiki",
    )
}

/// Runs `n` callers of `access` at once, spread over `vaults`, and returns their answers.
async fn callers(rig: &Rig, vaults: &[Arc<Vault>], n: usize) -> Vec<Result<String, VaultError>> {
    let sealed = rig.sealed().await;
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (vault, at, sealed) = (
                vaults[i % vaults.len()].clone(),
                rig.at.clone(),
                sealed.clone(),
            );
            tokio::spawn(async move { vault.access(&at, sealed.as_deref()).await.map(|a| a.token) })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers
}

#[tokio::test]
async fn a_token_that_is_not_due_is_handed_out_without_touching_the_store_or_the_server() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(3600)).await;
    let sealed = rig.sealed().await;
    // Removed from the store: a vault that read it would find nothing.
    let (org, owner) = (&rig.at.org, &rig.at.owner);
    rig.store
        .swap_grant(org, owner, "wiki", sealed.as_deref(), None, None)
        .await
        .unwrap();
    let access = rig
        .vault()
        .access(&rig.at, sealed.as_deref())
        .await
        .unwrap();
    assert_eq!(access.token, "at-0");
    assert_eq!(access.generation, 1);
    assert_eq!(rig.server.refreshes(), 0);
}

#[tokio::test]
async fn twenty_callers_of_an_expiring_grant_cause_one_refresh_and_all_use_its_token() {
    let rig = Rig::new(Duration::from_millis(200)).await;
    rig.connect(Duration::from_secs(5)).await;
    let answers = callers(&rig, &[rig.vault()], 20).await;
    assert_eq!(rig.server.refreshes(), 1);
    assert!(
        answers.iter().all(|a| a.as_deref() == Ok("at-1")),
        "{answers:?}"
    );
    let grant = rig.grant().await;
    assert_eq!((grant.generation, grant.lease), (2, None));
    assert_eq!(
        grant.refresh_token.as_deref(),
        Some("rt-1"),
        "the rotated token is kept"
    );
}

#[tokio::test]
async fn tokens_shorter_than_the_margin_are_refreshed_once_per_generation_not_once_per_caller() {
    let rig = Rig::new(Duration::from_millis(100)).await;
    rig.connect(Duration::from_secs(5)).await;
    let vault = rig.vault();
    // The refreshed tokens last 5 s too, under the 60 s margin: due again at once.
    rig.server.set_lasting(Duration::from_secs(5));
    let answers = callers(&rig, &[vault.clone(), vault], 20).await;
    assert_eq!(rig.server.refreshes(), 1);
    assert!(
        answers.iter().all(|a| a.as_deref() == Ok("at-1")),
        "{answers:?}"
    );
}

#[tokio::test]
async fn callers_in_two_processes_wait_on_one_lease_and_one_refresh_reaches_the_server() {
    let rig = Rig::new(Duration::from_millis(300)).await;
    rig.connect(Duration::from_secs(5)).await;
    let answers = callers(&rig, &[rig.vault(), rig.vault()], 20).await;
    assert_eq!(rig.server.refreshes(), 1);
    assert_eq!(rig.server.reuses.load(Ordering::SeqCst), 0);
    assert!(
        answers.iter().all(|a| a.as_deref() == Ok("at-1")),
        "{answers:?}"
    );
}

#[tokio::test]
async fn a_refused_refresh_needs_a_reconnect_and_later_callers_are_told_without_a_request() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(5)).await;
    rig.server.live.lock().unwrap().clear(); // revoked at the server
    let refused = Err(VaultError::NeedsReconnect(ReconnectReason::RefreshRefused));
    assert_eq!(
        callers(&rig, &[rig.vault()], 3).await[0].clone(),
        refused.clone()
    );
    assert_eq!(rig.server.refreshes(), 1);
    assert_eq!(
        rig.grant().await.status,
        GrantStatus::NeedsReconnect(ReconnectReason::RefreshRefused)
    );
    let sealed = rig.sealed().await;
    let later = rig
        .vault()
        .access(&rig.at, sealed.as_deref())
        .await
        .map(|a| a.token);
    assert_eq!(later, refused);
    assert_eq!(rig.server.refreshes(), 1);
}

#[tokio::test]
async fn a_lease_that_ran_out_at_the_same_generation_never_sends_its_refresh_token_again() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(5)).await;
    // A process claimed the refresh, sent it, and died before storing the result.
    let mut grant = rig.grant().await;
    grant.lease = Some(Lease {
        until: SystemClock.now().plus_millis(-1),
        generation: grant.generation,
    });
    rig.overwrite(&grant).await;
    let answers = callers(&rig, &[rig.vault()], 5).await;
    let interrupted = Err(VaultError::NeedsReconnect(
        ReconnectReason::RefreshInterrupted,
    ));
    assert!(answers.iter().all(|a| *a == interrupted), "{answers:?}");
    assert_eq!(rig.server.refreshes(), 0);
}

#[tokio::test]
async fn a_lost_answer_needs_a_reconnect_rather_than_a_second_send() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(5)).await;
    rig.server.set(Mode::LoseAnswer);
    let first = callers(&rig, &[rig.vault()], 4).await;
    let interrupted = Err(VaultError::NeedsReconnect(
        ReconnectReason::RefreshInterrupted,
    ));
    assert!(first.iter().all(|a| *a == interrupted), "{first:?}");
    assert_eq!(rig.server.refreshes(), 1);
    assert_eq!(rig.server.reuses.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_server_that_issued_nothing_gets_the_lease_back_and_the_next_caller_refreshes() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(5)).await;
    rig.server.set(Mode::Down);
    let sealed = rig.sealed().await;
    let down = rig.vault().access(&rig.at, sealed.as_deref()).await;
    assert!(
        matches!(&down, Err(VaultError::Unavailable(why)) if why.starts_with("the authorization server: ")),
        "names the party that failed: {down:?}"
    );
    let grant = rig.grant().await;
    assert_eq!(
        (grant.generation, grant.lease, grant.status),
        (1, None, GrantStatus::Active)
    );
    rig.server.set(Mode::Serve);
    let sealed = rig.sealed().await;
    let access = rig
        .vault()
        .access(&rig.at, sealed.as_deref())
        .await
        .unwrap();
    assert_eq!(access.token, "at-1");
    assert_eq!(rig.server.refreshes(), 2);
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_once_and_a_newer_one_is_used_as_it_is() {
    let rig = Rig::new(Duration::from_millis(50)).await;
    rig.connect(Duration::from_secs(3600)).await;
    let vault = rig.vault();
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (vault, at) = (vault.clone(), rig.at.clone());
            tokio::spawn(async move { vault.after_rejection(&at, 1).await.unwrap() })
        })
        .collect();
    for t in tasks {
        let access = t.await.unwrap();
        assert_eq!((access.token.as_str(), access.generation), ("at-1", 2));
    }
    assert_eq!(rig.server.refreshes(), 1);
    // The server refuses the new token too: the grant needs a reconnect, once at generation 2.
    vault
        .needs_reconnect(&rig.at, 1, ReconnectReason::TokenRejected)
        .await;
    assert!(
        rig.grant().await.is_active(),
        "an older generation's rejection changes nothing"
    );
    vault
        .needs_reconnect(&rig.at, 2, ReconnectReason::TokenRejected)
        .await;
    assert_eq!(
        rig.grant().await.status,
        GrantStatus::NeedsReconnect(ReconnectReason::TokenRejected)
    );
}

#[tokio::test]
async fn a_grant_copied_to_another_member_or_a_moved_integration_does_not_open() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(3600)).await;
    let sealed = rig.sealed().await;
    let vault = rig.vault();
    let other = GrantAt::new(&rig.at.org, GrantOwner::Member(UserId::generate()), &wiki());
    assert_eq!(
        vault.access(&other, sealed.as_deref()).await,
        Err(VaultError::NotConnected)
    );
    let moved = IntegrationConfig {
        url: "https://elsewhere.example/mcp".into(),
        ..wiki()
    };
    let moved = GrantAt::new(&rig.at.org, rig.at.owner.clone(), &moved);
    assert_eq!(
        vault.access(&moved, sealed.as_deref()).await,
        Err(VaultError::NotConnected)
    );
    let org_owned = GrantAt::new(&rig.at.org, GrantOwner::Organisation, &wiki());
    assert_eq!(
        vault.access(&org_owned, sealed.as_deref()).await,
        Err(VaultError::NotConnected)
    );
}

#[tokio::test]
async fn disconnecting_removes_the_grant_and_revokes_its_refresh_token() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(3600)).await;
    let audit = AuditEntry::new(
        &rig.at.org,
        SystemClock.now(),
        Actor::Member,
        AuditAction::AccountDisconnected,
        "wiki",
    );
    let removed = rig.vault().disconnect(&rig.at, &audit).await.unwrap();
    assert_eq!(removed.map(|g| g.generation), Some(1));
    assert_eq!(rig.sealed().await, None);
    assert_eq!(*rig.server.revoked.lock().unwrap(), ["rt-0"]);
    assert_eq!(rig.vault().disconnect(&rig.at, &audit).await.unwrap(), None);
}

#[tokio::test]
async fn connecting_again_replaces_the_grant_and_revokes_the_old_one() {
    let rig = Rig::new(Duration::ZERO).await;
    rig.connect(Duration::from_secs(3600)).await;
    rig.connect(Duration::from_secs(3600)).await;
    let grant = rig.grant().await;
    assert_eq!(grant.access_token, "at-1");
    assert_eq!(*rig.server.revoked.lock().unwrap(), ["rt-0"]);
}

/// The lease of the tests of a refresh that outlives its caller or hangs: long enough that a
/// busy machine does not run it out first, so what they show is that the result is recorded
/// before it runs out.
const LEASE: Duration = Duration::from_secs(10);
/// How long those tests wait for the result to be recorded: less than the lease.
const WITHIN_LEASE: Duration = Duration::from_secs(8);

/// Reads the stored grant until `settled` holds of it, for at most `within`: the grant as it
/// was then, or `None` when it never did.
async fn settles(rig: &Rig, within: Duration, settled: impl Fn(&Grant) -> bool) -> Option<Grant> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let grant = rig.grant().await;
        if settled(&grant) {
            return Some(grant);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A caller of `vault` that gives up 50 ms into the refresh its access starts (the server
/// answers after 300 ms).
async fn give_up_mid_refresh(rig: &Rig, vault: &Vault) {
    let sealed = rig.sealed().await;
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        vault.access(&rig.at, sealed.as_deref()),
    )
    .await;
    assert!(gave_up.is_err(), "the caller's own bound ran out first");
}

#[tokio::test]
async fn a_caller_that_stops_waiting_mid_refresh_still_has_the_lost_answer_recorded_within_the_lease()
 {
    let rig = Rig::new(Duration::from_millis(300)).await;
    rig.connect(Duration::from_secs(5)).await;
    rig.server.set(Mode::LoseAnswer);
    let vault = rig.vault_leasing(LEASE);
    give_up_mid_refresh(&rig, &vault).await;
    // The refresher records the lost answer before the lease runs out, so no caller sees
    // `connected` for a grant whose refresh token may be spent.
    let retired = settles(&rig, WITHIN_LEASE, |g| g.lease.is_none()).await;
    let grant = retired.expect("the lost answer was recorded before the lease ran out");
    assert_eq!(
        grant.status,
        GrantStatus::NeedsReconnect(ReconnectReason::RefreshInterrupted)
    );
    assert_eq!(rig.server.refreshes(), 1);
}

#[tokio::test]
async fn a_caller_that_stops_waiting_mid_refresh_loses_none_of_the_rotated_tokens() {
    let rig = Rig::new(Duration::from_millis(300)).await;
    rig.connect(Duration::from_secs(5)).await;
    let vault = rig.vault_leasing(LEASE);
    give_up_mid_refresh(&rig, &vault).await;
    let stored = settles(&rig, WITHIN_LEASE, |g| g.generation == 2).await;
    let grant = stored.expect("the refreshed tokens were stored");
    assert_eq!((grant.lease, grant.status), (None, GrantStatus::Active));
    let sealed = rig.sealed().await;
    let access = vault.access(&rig.at, sealed.as_deref()).await.unwrap();
    assert_eq!((access.token.as_str(), rig.server.refreshes()), ("at-1", 1));
}

#[tokio::test]
async fn a_token_endpoint_that_hangs_is_given_up_on_and_recorded_before_the_lease_runs_out() {
    // Far longer than the lease: only the vault's own bound ends the request.
    let rig = Rig::new(Duration::from_secs(3600)).await;
    rig.connect(Duration::from_secs(5)).await;
    let sealed = rig.sealed().await;
    let started = tokio::time::Instant::now();
    let answer = tokio::time::timeout(
        LEASE * 2,
        rig.vault_leasing(LEASE).access(&rig.at, sealed.as_deref()),
    )
    .await
    .expect("the vault bounds the request itself");
    assert_eq!(
        answer,
        Err(VaultError::NeedsReconnect(
            ReconnectReason::RefreshInterrupted
        ))
    );
    assert!(started.elapsed() < LEASE, "{:?}", started.elapsed());
    let grant = rig.grant().await;
    assert_eq!(grant.lease, None);
    assert_eq!(
        grant.status,
        GrantStatus::NeedsReconnect(ReconnectReason::RefreshInterrupted)
    );
}
