//! Cases of [`OrgStore`](knowledge_core::ports::OrgStore): organisations and their SCIM token.

use std::sync::Arc;

use knowledge_core::domain::AuditAction;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::StoreError;

use crate::{Tested, audit, business_org};

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
    assert!(matches!(
        store.set_scim_token(&OrgId::generate(), "cc", &again).await,
        Err(StoreError::Gone)
    ));
    assert_eq!(store.list_audit(&org.id, 10).await.unwrap().len(), 2);
}
