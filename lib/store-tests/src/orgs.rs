//! Cases of [`OrgStore`](knowledge_core::ports::OrgStore): organisations, their SCIM token and
//! their single sign-on with its e-mail domains.

use std::sync::Arc;

use knowledge_core::domain::AuditAction;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::StoreError;

use crate::{Tested, audit, business_org, domain, landed, sso};

pub async fn the_scim_token_hash_survives_settings_changes_and_is_replaced_by_a_new_one(
    store: Arc<dyn Tested>,
) {
    let mut org = business_org(&*store).await;
    let generated = audit(&org.id, AuditAction::ScimTokenGenerated, org.id.as_str());
    store
        .set_scim_token(&org.id, "aa", &generated)
        .await
        .unwrap();
    org.monthly_query_quota = None;
    store.put_org(&org).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(read.scim_token_sha256.as_deref(), Some("aa"));
    assert_eq!(read.monthly_query_quota, None);
    let again = audit(&org.id, AuditAction::ScimTokenGenerated, org.id.as_str());
    store.set_scim_token(&org.id, "bb", &again).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(read.scim_token_sha256.as_deref(), Some("bb"));
    assert_eq!(
        read.scim_token_created_at,
        Some(again.at),
        "made when its audit entry says"
    );
    assert!(matches!(
        store.set_scim_token(&OrgId::generate(), "cc", &again).await,
        Err(StoreError::Gone)
    ));
    assert_eq!(store.list_audit(&org.id, None, 10).await.unwrap().len(), 2);
}

pub async fn sso_reads_back_survives_settings_changes_and_moves_only_at_its_version(
    store: Arc<dyn Tested>,
) {
    let mut org = business_org(&*store).await;
    assert_eq!(org.sso, None);
    let first = sso(1, &[&domain()]);
    let configured = || audit(&org.id, AuditAction::SsoConfigured, org.id.as_str());
    store
        .set_sso(&org.id, None, &first, &configured())
        .await
        .unwrap();
    org.name = "Renamed".into();
    store.put_org(&org).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(
        (read.name.as_str(), read.sso.as_ref()),
        ("Renamed", Some(&first))
    );
    assert!(read.sso_active());

    let mut off = sso(
        2,
        &first
            .email_domains
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    off.enabled = false;
    for stale in [None, Some(&off)] {
        assert!(matches!(
            store.set_sso(&org.id, stale, &off, &configured()).await,
            Err(StoreError::Conflict)
        ));
    }
    store
        .set_sso(&org.id, Some(&first), &off, &configured())
        .await
        .unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(read.sso.as_ref(), Some(&off));
    assert!(!read.sso_active());
    assert!(matches!(
        store
            .set_sso(&OrgId::generate(), None, &first, &configured())
            .await,
        Err(StoreError::Gone)
    ));
    assert_eq!(store.list_audit(&org.id, None, 10).await.unwrap().len(), 2);
}

pub async fn an_email_domain_routes_to_one_organisation_and_is_released_when_dropped(
    store: Arc<dyn Tested>,
) {
    let (a, b) = (business_org(&*store).await, business_org(&*store).await);
    let (kept, moved) = (domain(), domain());
    let entry = || audit(&a.id, AuditAction::SsoConfigured, a.id.as_str());
    let a1 = sso(1, &[&kept, &moved]);
    store.set_sso(&a.id, None, &a1, &entry()).await.unwrap();
    for d in [&kept, &moved] {
        assert_eq!(store.org_for_domain(d).await.unwrap(), Some(a.id.clone()));
    }
    assert_eq!(store.org_for_domain(&domain()).await.unwrap(), None);

    let b1 = sso(1, &[&domain(), &moved]);
    assert!(matches!(
        store.set_sso(&b.id, None, &b1, &entry()).await,
        Err(StoreError::AlreadyExists)
    ));
    assert_eq!(store.get_org(&b.id).await.unwrap().unwrap().sso, None);
    assert_eq!(
        store.org_for_domain(&b1.email_domains[0]).await.unwrap(),
        None
    );
    assert_eq!(
        store.org_for_domain(&moved).await.unwrap(),
        Some(a.id.clone())
    );

    let a2 = sso(2, &[&kept]);
    store
        .set_sso(&a.id, Some(&a1), &a2, &entry())
        .await
        .unwrap();
    store.set_sso(&b.id, None, &b1, &entry()).await.unwrap();
    assert_eq!(
        store.org_for_domain(&moved).await.unwrap(),
        Some(b.id.clone())
    );
    assert_eq!(
        store.org_for_domain(&kept).await.unwrap(),
        Some(a.id.clone())
    );
}

pub async fn of_concurrent_first_sso_configurations_exactly_one_lands(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let tasks = (0..4)
        .map(|_| {
            let (store, id) = (store.clone(), org.id.clone());
            tokio::spawn(async move {
                let entry = audit(&id, AuditAction::SsoConfigured, id.as_str());
                store
                    .set_sso(&id, None, &sso(1, &[&domain()]), &entry)
                    .await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let stored = store.get_org(&org.id).await.unwrap().unwrap().sso.unwrap();
    assert_eq!(
        store
            .org_for_domain(&stored.email_domains[0])
            .await
            .unwrap(),
        Some(org.id.clone())
    );
}
