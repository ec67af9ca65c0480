//! Integrations connected per organisation, fixed when the process starts, and the lookup of
//! the integration that offers a tool.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::ids::{OrgId, UserId};
use crate::ports::{Integration, IntegrationError, IntegrationReach, Integrations};

/// A fixed map from organisation to its integrations; organisations not in it have none.
#[derive(Clone, Default)]
pub struct FixedIntegrations {
    by_org: HashMap<OrgId, Vec<Arc<dyn Integration>>>,
}

impl FixedIntegrations {
    pub fn new() -> Self {
        Self::default()
    }

    /// Connects `integration` to `org`, after the ones connected before.
    pub fn connect(mut self, org: OrgId, integration: Arc<dyn Integration>) -> Self {
        self.by_org.entry(org).or_default().push(integration);
        self
    }
}

#[async_trait]
impl IntegrationReach for FixedIntegrations {
    async fn reaches_any(&self, org: &OrgId, _user: &UserId) -> Result<bool, IntegrationError> {
        Ok(self.by_org.get(org).is_some_and(|list| !list.is_empty()))
    }
}

#[async_trait]
impl Integrations for FixedIntegrations {
    async fn connected(
        &self, org: &OrgId, _user: &UserId,
    ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError> {
        Ok(self.by_org.get(org).cloned().unwrap_or_default())
    }
}

/// The first of the integrations `user` reaches in `org` that offers `tool`, if any.
pub async fn find_tool(
    integrations: &dyn Integrations, org: &OrgId, user: &UserId, tool: &str,
) -> Result<Option<Arc<dyn Integration>>, IntegrationError> {
    for integration in integrations.connected(org, user).await? {
        let owns = match integration.owns(tool) {
            Some(owns) => owns,
            None => integration.tools().await?.iter().any(|t| t.name == tool),
        };
        if owns {
            return Ok(Some(integration));
        }
    }
    Ok(None)
}
