//! The JSON the `knowledge` admin commands print: never a secret.

use knowledge_core::domain::{AuditEntry, IntegrationConfig, Org, SsoConfig, Usage};
use knowledge_core::ids::OrgId;
use serde_json::{Value, json};

/// The JSON an admin command prints for an organisation.
pub fn org_json(org: &Org, usage: Option<Usage>) -> Value {
    let mut v = json!({
        "id": org.id.to_string(),
        "name": org.name,
        "plan": org.plan.as_str(),
        "status": org.status.as_str(),
        "ssoEnabled": org.sso_active(),
        "monthlyQueryQuota": org.monthly_query_quota,
        "costCapUsd": org.cost_cap_micros.map(knowledge_core::domain::micros_to_usd),
    });
    if let Some(u) = usage {
        v["usage"] = json!({
            "queries": u.queries,
            "monthToDateUsd": knowledge_core::domain::micros_to_usd(u.cost_micros),
        });
    }
    v
}

/// The JSON an admin command prints for `org`'s SSO configuration: never the client secret,
/// and the organisation's own callback URL to register at the provider.
pub fn sso_json(org: &OrgId, config: &SsoConfig, origin: &str) -> Value {
    let callback_base = format!("{}/api/auth/callback", origin.trim_end_matches('/'));
    json!({
        "issuer": config.issuer,
        "clientId": config.client_id,
        "clientSecret": "(sealed)",
        "userNameClaim": config.user_name_claim,
        "emailDomains": config.email_domains,
        "enabled": config.enabled,
        "justInTime": config.just_in_time,
        "updatedAt": config.updated_at.to_iso8601(),
        "callbackUrl": knowledge_core::sso::redirect_uri(&callback_base, org),
        "callbackNote": "register callbackUrl as the redirect URI at the identity provider: each \
            organisation has its own, and the shared /api/auth/callback signs nobody in",
    })
}

/// The JSON an admin command prints for an integration.
pub fn integration_json(i: &IntegrationConfig) -> Value {
    json!({
        "name": i.name,
        "url": i.url,
        "auth": i.auth.as_str(),
        "createdAt": i.created_at.to_iso8601(),
    })
}

/// The JSON an admin command prints for an audit entry: as the admin API shows it (an
/// operator's change is by `command-line`, people are named, and what changed is said).
pub fn audit_json(e: &AuditEntry) -> Value {
    serde_json::to_value(knowledge_http::admin::wire::AuditEntryView::from(e))
        .expect("plain strings")
}
