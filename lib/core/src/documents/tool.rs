//! The agent's `search_documents` tool: the organisation's documents searched as the member
//! whose turn it is, exactly as `GET /api/search` searches them (the same two steps, the
//! member's groups read at the call). Each passage comes with the marker that cites it, which
//! the app turns into a link to the passage.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::CoreError;
use crate::ids::{CollectionId, OrgId, UserId};
use crate::ports::{
    CancelSignal, DirectoryStore, Integration, IntegrationError, IntegrationReach, Integrations,
    ToolSpec,
};
use crate::service::Principal;

use super::{Documents, SearchHit, SearchRequest};

/// The tool's name.
pub const TOOL: &str = "search_documents";
/// Passages a call answers when the agent names no limit. Ten, for recall: on SciFact the
/// tenth passage still holds evidence the first five missed (Recall 0.78 at 5), and ten
/// passages of at most 400 words fit any model's context many times over. Peers answer as
/// many or more (OpenAI's file search 20, Google's semantic retriever 10); see
/// `docs/design/retrieval.md`.
pub const DEFAULT_LIMIT: u64 = 10;
/// Passages a call answers at most.
pub const MAX_LIMIT: u64 = 20;

/// The marker that cites `hit`'s passage in an answer: `[[cite:<collection>/<document>#<n>]]`.
pub fn citation(hit: &SearchHit) -> String {
    let p = &hit.passage;
    format!("[[cite:{}/{}#{}]]", p.collection, p.document, p.ordinal)
}

/// The tool as one member reaches it.
struct DocumentSearch {
    documents: Documents,
    directory: Arc<dyn DirectoryStore>,
    org: OrgId,
    user: UserId,
}

fn invalid(message: impl Into<String>) -> IntegrationError {
    IntegrationError::Invalid(message.into())
}

impl DocumentSearch {
    /// The member as stored now: their role decides what they open, and one removed since the
    /// turn began searches nothing.
    async fn reader(&self) -> Result<Principal, IntegrationError> {
        let member = (self.directory.get_member(&self.org, &self.user).await)
            .map_err(|e| IntegrationError::Unavailable(e.to_string()))?
            .ok_or_else(|| invalid("you are no longer a member of this organisation"))?;
        Ok(Principal::of(&member))
    }

    /// The collection `named` (its id, or its name in any case) among those `reader` opens.
    async fn collection(
        &self, reader: &Principal, named: &str,
    ) -> Result<CollectionId, IntegrationError> {
        let open = (self.documents.openable(reader).await)
            .map_err(|e| IntegrationError::Unavailable(e.to_string()))?;
        let found = open.iter().find(|c| {
            c.id.as_str() == named || c.name.to_lowercase() == named.trim().to_lowercase()
        });
        found.map(|c| c.id.clone()).ok_or_else(|| {
            let names: Vec<&str> = open.iter().map(|c| c.name.as_str()).collect();
            invalid(format!(
                "no collection you may open is named {named:?}; yours: {}",
                names.join(", ")
            ))
        })
    }
}

#[async_trait]
impl Integration for DocumentSearch {
    fn name(&self) -> &str {
        "documents"
    }

    fn owns(&self, tool: &str) -> Option<bool> {
        Some(tool == TOOL)
    }

    async fn tools(&self) -> Result<Vec<ToolSpec>, IntegrationError> {
        Ok(vec![ToolSpec {
            name: TOOL.into(),
            description: "Search the organisation's documents (handbooks, policies, manuals) \
                          that the member may open, for the passages most relevant to a query. \
                          Returns the best passages, best first, each with its document, \
                          collection, heading or page, and a `cite` marker: put a passage's \
                          marker right after the sentence that uses it."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words."},
                    "collection": {"type": "string",
                                   "description": "Search this collection only (its name)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": format!("Passages to return (default {DEFAULT_LIMIT}).")}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            hints: crate::domain::ToolHints::READ_ONLY,
        }])
    }

    /// Errors: `Invalid` for another tool, an input that does not match the schema, or a
    /// collection the member may not open; `Unavailable` when the store or the index fails.
    async fn call(
        &self, tool: &str, input: &Value, _cancelled: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError> {
        if tool != TOOL {
            return Err(invalid("the documents integration has no such tool"));
        }
        let query = (input.get("query").and_then(Value::as_str))
            .filter(|q| !q.trim().is_empty())
            .ok_or_else(|| invalid("query must be a non-empty string"))?;
        let limit = match input.get("limit") {
            None => DEFAULT_LIMIT,
            Some(v) => (v.as_u64().filter(|n| (1..=MAX_LIMIT).contains(n))).ok_or_else(|| {
                invalid(format!("limit must be an integer from 1 to {MAX_LIMIT}"))
            })?,
        };
        let reader = self.reader().await?;
        let collection = match input.get("collection").and_then(Value::as_str) {
            Some(named) => Some(self.collection(&reader, named).await?),
            None => None,
        };
        let request = SearchRequest {
            query: query.to_owned(),
            collection,
            limit: limit as usize,
        };
        let hits = self
            .documents
            .search(&reader, &request)
            .await
            .map_err(|e| match e {
                CoreError::InvalidInput { message, .. } => invalid(message),
                e => IntegrationError::Unavailable(e.to_string()),
            })?;
        Ok(Value::Array(hits.iter().map(passage).collect()))
    }
}

/// A passage as the tool answers it: the shape the built-in agent reads (`source`, `heading`,
/// `text`, `score`), with its collection, page and citation marker.
fn passage(hit: &SearchHit) -> Value {
    let p = &hit.passage;
    let heading = match (p.headings.is_empty(), p.page) {
        (false, _) => p.headings.join(" › "),
        (true, Some(page)) => format!("page {page}"),
        (true, None) => String::new(),
    };
    json!({
        "source": hit.document_name,
        "collection": hit.collection_name,
        "heading": heading,
        "page": p.page,
        "text": p.text,
        "score": p.score,
        "cite": citation(hit),
    })
}

/// The organisations' integrations with the documents' search before them, for a member who
/// may open at least one collection (read at each listing, as a search reads it).
pub struct WithDocuments {
    inner: Arc<dyn Integrations>,
    documents: Documents,
    directory: Arc<dyn DirectoryStore>,
}

impl WithDocuments {
    pub fn new(
        inner: Arc<dyn Integrations>, documents: Documents, directory: Arc<dyn DirectoryStore>,
    ) -> Self {
        Self {
            inner,
            documents,
            directory,
        }
    }
}

impl WithDocuments {
    /// The search as `user` reaches it, when they may open a collection.
    async fn search(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Option<DocumentSearch>, IntegrationError> {
        let search = DocumentSearch {
            documents: self.documents.clone(),
            directory: self.directory.clone(),
            org: org.clone(),
            user: user.clone(),
        };
        let Ok(reader) = search.reader().await else {
            return Ok(None);
        };
        let open = (self.documents.openable(&reader).await)
            .map_err(|e| IntegrationError::Unavailable(e.to_string()))?;
        Ok((!open.is_empty()).then_some(search))
    }
}

#[async_trait]
impl IntegrationReach for WithDocuments {
    async fn reaches_any(&self, org: &OrgId, user: &UserId) -> Result<bool, IntegrationError> {
        Ok(self.search(org, user).await?.is_some() || self.inner.reaches_any(org, user).await?)
    }
}

#[async_trait]
impl Integrations for WithDocuments {
    async fn connected(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError> {
        let mut all: Vec<Arc<dyn Integration>> = Vec::new();
        if let Some(search) = self.search(org, user).await? {
            all.push(Arc::new(search));
        }
        all.extend(self.inner.connected(org, user).await?);
        Ok(all)
    }
}
