//! The agent's memory as use cases: the member reads, erases and switches theirs
//! ([`Memories`]); the workflow's steps offer its two tools ([`tools`]) and run them
//! ([`run_tool`]). One member data item holds a member's memory in an organisation
//! ([`MEMORY_ITEM`]), so deprovisioning removes it with the rest. Every change is a swap from
//! the value read, retried when another change landed first: two conversations saving at once
//! both keep their note.

use std::sync::Arc;

/// The memory tools write the member's own memory, which they see and undo on the Memory page;
/// they are built in, and run without asking (`docs/design/approvals.md`).
const MEMORY_HINTS: crate::domain::ToolHints = crate::domain::ToolHints {
    read_only: Some(false),
    destructive: Some(false),
    idempotent: None,
    open_world: Some(false),
};

use serde_json::{Value, json};

use crate::clock::Timestamp;
use crate::domain::{
    MEMORY_ENTRIES, MEMORY_ENTRY_CHARS, MEMORY_ITEM, MemberDataKind, Memory, SavedFrom,
};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::ports::{DirectoryStore, OrgStore, StoreError, ToolSpec};

/// The tool that saves a note.
pub const SAVE_TOOL: &str = "memory_save";
/// The tool that removes a note by its id.
pub const FORGET_TOOL: &str = "memory_forget";
/// Rounds of re-reading a memory that changed concurrently before giving up.
const ATTEMPTS: usize = 16;

/// The memory tools, as the agent is offered them.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: SAVE_TOOL.into(),
            description: format!(
                "Remember a short note about the member for later conversations: a lasting \
                 preference or fact they stated, or something they asked you to remember. At \
                 most {MEMORY_ENTRY_CHARS} characters; {MEMORY_ENTRIES} notes are kept at most."
            ),
            input_schema: json!({
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": MEMORY_ENTRY_CHARS,
                    "description": "The note, in the member's words."}},
                "required": ["text"],
            }),
            hints: MEMORY_HINTS,
        },
        ToolSpec {
            name: FORGET_TOOL.into(),
            description: "Forget a remembered note, by the id shown beside it.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "Such as m3."}},
                "required": ["id"],
            }),
            hints: MEMORY_HINTS,
        },
    ]
}

/// Whether `tool` is one of the memory tools.
pub fn is_memory_tool(tool: &str) -> bool {
    tool == SAVE_TOOL || tool == FORGET_TOOL
}

/// Reads a stored memory. Errors: a backend error naming the stored form as unreadable.
pub fn parse(stored: Option<&str>) -> Result<Memory, StoreError> {
    match stored {
        None => Ok(Memory::default()),
        Some(text) => Memory::parse(text)
            .map_err(|e| StoreError::backend(format!("a stored memory is unreadable: {e}"))),
    }
}

/// Applies `change` to the member's memory until it lands on the value it read; returns the
/// memory as written and what `change` returned. A change that changes nothing writes
/// nothing. Errors: `Gone` when the user is not a member; `Conflict` when the memory stayed
/// contended; the store's.
pub async fn change<R>(
    directory: &dyn DirectoryStore, org: &OrgId, user: &UserId,
    mut change: impl FnMut(&mut Memory) -> R,
) -> Result<(Memory, R), StoreError> {
    let kind = MemberDataKind::AgentMemory;
    for _ in 0..ATTEMPTS {
        let stored = directory
            .get_member_data(org, user, kind, MEMORY_ITEM)
            .await?;
        let mut memory = parse(stored.as_deref())?;
        let before = memory.clone();
        let out = change(&mut memory);
        if memory == before {
            return Ok((memory, out));
        }
        let next = memory.to_text();
        let swapped = directory
            .swap_member_data(org, user, kind, MEMORY_ITEM, stored.as_deref(), Some(&next))
            .await;
        match swapped {
            Ok(()) => return Ok((memory, out)),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Conflict)
}

/// Runs the memory tool `tool` on `input` for `user` in `org`, as the `tool_use` event `from`
/// asked at `at`; returns the tool's result for the agent, or the refusal it can read
/// (a malformed input, a save past a bound, an unknown id, memory switched off, a member
/// removed meanwhile). A step that runs again after a crash finds its save made and makes no
/// other, unless the member forgot the note in between. Errors: the store's (the step is
/// retried).
pub async fn run_tool(
    directory: &dyn DirectoryStore, org: &OrgId, user: &UserId, tool: &str, input: &Value,
    at: Timestamp, from: SavedFrom<'_>,
) -> Result<Result<Value, String>, StoreError> {
    match run(directory, org, user, tool, input, at, from).await {
        Err(StoreError::Gone) => Ok(Err("the member is no longer in the organisation".into())),
        other => other,
    }
}

async fn run(
    directory: &dyn DirectoryStore, org: &OrgId, user: &UserId, tool: &str, input: &Value,
    at: Timestamp, from: SavedFrom<'_>,
) -> Result<Result<Value, String>, StoreError> {
    let text_of = |field: &str| input.get(field).and_then(Value::as_str);
    match tool {
        SAVE_TOOL => {
            let Some(text) = text_of("text") else {
                return Ok(Err("memory_save needs a text".into()));
            };
            let (_, saved) = change(directory, org, user, |m| {
                m.save(text, at, from).map(|e| e.id.clone())
            })
            .await?;
            Ok(match saved {
                Ok(id) => Ok(json!({ "saved": id })),
                Err(refused) => Err(format!("Not saved: {refused}")),
            })
        }
        FORGET_TOOL => {
            let Some(id) = text_of("id") else {
                return Ok(Err("memory_forget needs the id of a note".into()));
            };
            // Off, the agent changes nothing, even a forget (the member's own page still does).
            let (_, forgotten) =
                change(directory, org, user, |m| (!m.off).then(|| m.forget(id))).await?;
            Ok(match forgotten {
                None => Err("Not forgotten: memory is switched off".into()),
                Some(true) => Ok(json!({ "forgotten": id })),
                Some(false) => Err(format!(
                    "No note {id} is kept (forgotten already, or never saved)."
                )),
            })
        }
        _ => Ok(Err(format!("there is no memory tool named {tool:?}"))),
    }
}

/// What a member sees of their memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryView {
    pub memory: Memory,
    /// The organisation lets its members' agent remember.
    pub org_on: bool,
}

/// A member's own memory: read it, erase it, switch it.
#[derive(Clone)]
pub struct Memories {
    directory: Arc<dyn DirectoryStore>,
    orgs: Arc<dyn OrgStore>,
}

impl Memories {
    pub fn new(directory: Arc<dyn DirectoryStore>, orgs: Arc<dyn OrgStore>) -> Self {
        Self { directory, orgs }
    }

    /// The member's memory and the organisation's switch. Errors: `NotFound` (organisation).
    pub async fn view(&self, org: &OrgId, user: &UserId) -> Result<MemoryView, CoreError> {
        let stored = self
            .directory
            .get_member_data(org, user, MemberDataKind::AgentMemory, MEMORY_ITEM)
            .await?;
        let memory = parse(stored.as_deref())?;
        self.with_org(org, memory).await
    }

    async fn with_org(&self, org: &OrgId, memory: Memory) -> Result<MemoryView, CoreError> {
        let settings = self.orgs.get_org(org).await?;
        let settings = settings.ok_or(CoreError::NotFound("organisation"))?;
        Ok(MemoryView {
            memory,
            org_on: !settings.memory_off,
        })
    }

    /// Switches the member's memory on or off; the notes are kept either way.
    /// Errors: `NotFound` (organisation), `Unauthenticated` (no longer a member).
    pub async fn switch(
        &self, org: &OrgId, user: &UserId, on: bool,
    ) -> Result<MemoryView, CoreError> {
        let (memory, ()) = self.change(org, user, |m| m.off = !on).await?;
        self.with_org(org, memory).await
    }

    /// Forgets the note `id`. Errors: `NotFound` (no such note).
    pub async fn forget(&self, org: &OrgId, user: &UserId, id: &str) -> Result<(), CoreError> {
        let (_, forgotten) = self.change(org, user, |m| m.forget(id)).await?;
        forgotten.then_some(()).ok_or(CoreError::NotFound("note"))
    }

    /// Forgets every note, keeping the switch; returns how many there were.
    pub async fn clear(&self, org: &OrgId, user: &UserId) -> Result<usize, CoreError> {
        let (_, cleared) = self
            .change(org, user, |m| std::mem::take(&mut m.entries).len())
            .await?;
        Ok(cleared)
    }

    async fn change<R>(
        &self, org: &OrgId, user: &UserId, f: impl FnMut(&mut Memory) -> R,
    ) -> Result<(Memory, R), CoreError> {
        match change(self.directory.as_ref(), org, user, f).await {
            Ok(done) => Ok(done),
            Err(StoreError::Gone) => Err(CoreError::Unauthenticated),
            Err(e) => Err(e.into()),
        }
    }
}
