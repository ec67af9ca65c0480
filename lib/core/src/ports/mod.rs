//! Ports: what the use cases need from storage, the workflow engine, the integrations, the
//! agent and the identity providers. Adapters implement them in the other crates.

mod agent;
mod batch;
mod documents;
mod egress;
mod identity;
mod integration;
mod oauth;
mod store;
mod store_error;
mod workflow;

pub use agent::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, Drafts, NoDrafts, TokenUsage,
    ToolCall,
};
pub use batch::{
    BatchStore, EventsAfter, Gate, QueryCount, RateUpdate, RateWindow, Reads, Snapshot,
};
pub use documents::{
    DocumentStore, IndexError, Originals, OriginalsError, Parser, PassageIndex, UploadTarget,
};
pub use egress::DestinationRefused;
pub use identity::{
    Authorization, IdentityDiscovery, IdentityError, IdentityProvider, OidcClient, VerifiedIdentity,
};
pub use integration::{
    CancelSignal, Integration, IntegrationError, IntegrationReach, Integrations, ToolSpec,
};
pub use oauth::{
    AuthorizationRequest, AuthorizationServers, DiscoveryFailure, IssuedTokens, TokenEndpoint,
    TokenError,
};
#[cfg(feature = "testing")]
pub use store::StoredRows;
pub use store::{
    BackendError, Charge, DirectoryStore, GrantStore, GroupStore, LimitStore, MEMBERS_AT_ONCE,
    OrgChanges, OrgLimits, OrgStore, SessionStore, Store, StoreError, StoreResult, TicketStore,
};
pub use workflow::{Workflow, WorkflowError};
