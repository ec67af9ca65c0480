//! The organisation's documents: collections open to every member or to named groups, the
//! documents uploaded into them with their indexing status, and the formats the service reads.
//! The rules are in `docs/design/documents.md`; the one they all serve is that the store is the
//! truth and the index a cache, so access and existence are always decided here.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::{CollectionId, DocumentId, GroupId, OrgId, UserId};

/// Characters of a collection's or a document's name at most.
pub const DOCUMENT_NAME_MAX_CHARS: usize = 256;
/// Characters of a collection's description at most.
pub const DESCRIPTION_MAX_CHARS: usize = 1_000;
/// Groups one collection may be opened to at most.
pub const GROUPS_PER_COLLECTION: usize = 20;
/// Collections an organisation may have at most: the access check reads them all in one query.
pub const COLLECTIONS_PER_ORG: usize = 200;

/// Who may open a collection's documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "groups")]
pub enum Access {
    /// Every member of the organisation.
    Everyone,
    /// The members of any of these groups (and no one when it is empty).
    Groups(BTreeSet<GroupId>),
}

impl Access {
    /// Whether a member in `groups` may open what this access guards.
    pub fn opens_to(&self, groups: &[GroupId]) -> bool {
        match self {
            Self::Everyone => true,
            Self::Groups(open) => groups.iter().any(|g| open.contains(g)),
        }
    }
}

/// A collection of documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    pub org: OrgId,
    pub id: CollectionId,
    pub name: String,
    pub description: String,
    pub access: Access,
    /// Where its documents come from: uploads, or a folder the local service syncs.
    pub source: CollectionSource,
    /// 1 when created; one more at each change.
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Where a collection's documents come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CollectionSource {
    /// Admins upload them.
    Upload,
    /// The local service keeps it in step with a folder (`serve --docs DIR`): read-only in the
    /// admin API.
    Folder,
}

text_enum!(CollectionSource { Upload => "upload", Folder => "folder" });

/// Where a document is in its indexing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentStatus {
    /// Recorded, its original not yet stored (a browser uploading straight to S3).
    Uploading,
    /// Its original is stored and a worker will index it.
    Queued,
    /// Its passages are searchable.
    Indexed,
    /// It will not be indexed; `reason` says why and what to do.
    Failed,
}

text_enum!(DocumentStatus {
    Uploading => "uploading",
    Queued => "queued",
    Indexed => "indexed",
    Failed => "failed",
});

/// Attempts at indexing one generation before it ends `failed`.
pub const INDEX_ATTEMPTS: u32 = 3;

/// A document of a collection. Each upload (the first and every replacement) is a new
/// **generation**; its original and its passages carry it, so that what a slower worker or a
/// stale index holds of an older generation is never shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub org: OrgId,
    pub collection: CollectionId,
    pub id: DocumentId,
    /// The file's name as uploaded (its last path segment).
    pub name: String,
    pub format: Format,
    /// The original's size.
    pub bytes: u64,
    /// The original's SHA-256, lowercase hex.
    pub sha256: String,
    pub status: DocumentStatus,
    /// Why it failed, for a person to act on.
    pub reason: Option<String>,
    /// 1 at the first upload; one more at each replacement.
    pub generation: u64,
    /// Passages of the indexed generation.
    pub passages: u32,
    /// Attempts at indexing this generation so far.
    pub attempts: u32,
    /// Until when a worker holds it; another may take it after.
    pub lease_until: Option<Timestamp>,
    /// 1 when created; one more at each write, which is conditional on it.
    pub version: u64,
    /// Who uploaded this generation; `None` for a folder's.
    pub by: Option<UserId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Document {
    /// Whether a worker may take it at `now`: queued, with no live lease.
    pub fn claimable(&self, now: Timestamp) -> bool {
        self.status == DocumentStatus::Queued && self.lease_until.is_none_or(|t| t <= now)
    }

    /// The next version of it, written at `now`.
    pub fn next(&self, now: Timestamp) -> Self {
        Self {
            version: self.version + 1,
            updated_at: now,
            ..self.clone()
        }
    }
}

/// The `Content-Disposition` a document's original is downloaded with, wherever it is served
/// from: always an attachment (never rendered, so an uploaded HTML file runs nothing), named
/// `name`, as uploaded: in ASCII (`"` and `\` and any other character as `_`) and exactly in UTF-8
/// (`filename*`, RFC 8187's percent-encoding).
pub fn content_disposition(name: &str) -> String {
    let ascii: String = (name.chars())
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c,
            _ => '_',
        })
        .collect();
    let mut exact = String::new();
    for byte in name.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => exact.push(char::from(byte)),
            b'!' | b'#' | b'$' | b'&' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~' => {
                exact.push(char::from(byte))
            }
            _ => exact.push_str(&format!("%{byte:02X}")),
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{exact}")
}

/// A passage of a document as a search answers it, after the check against the store.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPassage {
    pub collection: CollectionId,
    pub document: DocumentId,
    pub generation: u64,
    /// Its place among its document's passages, from 0.
    pub ordinal: u32,
    pub headings: Vec<String>,
    pub page: Option<u32>,
    pub text: String,
    /// Higher is better; comparable within one search only.
    pub score: f32,
}

/// A passage a parser made: its text, the headings it sits under, its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub headings: Vec<String>,
    pub page: Option<u32>,
    pub text: String,
}

/// A format the service reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Text,
    Html,
    Pdf,
    Docx,
}

text_enum!(Format {
    Markdown => "markdown",
    Text => "text",
    Html => "html",
    Pdf => "pdf",
    Docx => "docx",
});

/// Why a file's format was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatRefusal {
    #[error("this format is not read: upload Markdown, text, HTML, PDF or DOCX")]
    Unsupported,
    #[error("the file's content is not {}: it may be damaged or misnamed", .0.media_type())]
    NotWhatItSays(Format),
}

impl Format {
    /// Its media type.
    pub const fn media_type(self) -> &'static str {
        match self {
            Self::Markdown => "text/markdown",
            Self::Text => "text/plain",
            Self::Html => "text/html",
            Self::Pdf => "application/pdf",
            Self::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        }
    }

    /// The file name extensions it is known by.
    pub const fn extensions(self) -> &'static [&'static str] {
        match self {
            Self::Markdown => &["md", "markdown"],
            Self::Text => &["txt", "text"],
            Self::Html => &["html", "htm"],
            Self::Pdf => &["pdf"],
            Self::Docx => &["docx"],
        }
    }

    /// The format a file named `name` claims by its extension.
    pub fn of_name(name: &str) -> Result<Self, FormatRefusal> {
        let extension = name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        Self::ALL
            .iter()
            .copied()
            .find(|f| f.extensions().contains(&extension.as_str()))
            .ok_or(FormatRefusal::Unsupported)
    }

    /// The format of a file named `name` whose content starts with `head`, if the service reads
    /// it. The extension names the format; the content must agree: a PDF starts `%PDF-`, a
    /// DOCX is a zip archive, and the text formats are UTF-8 without NUL bytes.
    pub fn detect(name: &str, head: &[u8]) -> Result<Self, FormatRefusal> {
        let format = Self::of_name(name)?;
        let agrees = match format {
            Self::Pdf => head.starts_with(b"%PDF-"),
            Self::Docx => head.starts_with(b"PK\x03\x04"),
            Self::Markdown | Self::Text | Self::Html => {
                !head.contains(&0) && utf8_prefix(head).is_some()
            }
        };
        if agrees {
            Ok(format)
        } else {
            Err(FormatRefusal::NotWhatItSays(format))
        }
    }
}

/// `head` as UTF-8, allowing a character cut at its end.
fn utf8_prefix(head: &[u8]) -> Option<&str> {
    match std::str::from_utf8(head) {
        Ok(text) => Some(text),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// An organisation's storage of originals against its allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storage {
    pub used_bytes: u64,
    pub allowance_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_is_named_by_its_extension_and_confirmed_by_its_content() {
        assert_eq!(Format::detect("a.PDF", b"%PDF-1.7"), Ok(Format::Pdf));
        assert_eq!(
            Format::detect("a.pdf", b"PK\x03\x04"),
            Err(FormatRefusal::NotWhatItSays(Format::Pdf))
        );
        assert_eq!(
            Format::detect("a.exe", b"MZ"),
            Err(FormatRefusal::Unsupported)
        );
        assert_eq!(
            Format::detect("notes.md", "# é".as_bytes()),
            Ok(Format::Markdown)
        );
        assert!(Format::detect("a.txt", b"a\0b").is_err());
    }

    #[test]
    fn an_original_downloads_as_an_attachment_under_its_name_in_ascii_and_exactly() {
        assert_eq!(
            content_disposition("Plan \"Q3\" été.md"),
            "attachment; filename=\"Plan _Q3_ _t_.md\"; \
             filename*=UTF-8''Plan%20%22Q3%22%20%C3%A9t%C3%A9.md"
        );
        assert_eq!(
            content_disposition("a;b\r\n.md"),
            "attachment; filename=\"a;b__.md\"; filename*=UTF-8''a%3Bb%0D%0A.md"
        );
    }

    #[test]
    fn a_collection_open_to_groups_opens_to_their_members_only() {
        let g = GroupId::generate();
        let access = Access::Groups([g.clone()].into());
        assert!(access.opens_to(std::slice::from_ref(&g)));
        assert!(!access.opens_to(&[GroupId::generate()]));
        assert!(!Access::Groups(BTreeSet::new()).opens_to(&[g]));
        assert!(Access::Everyone.opens_to(&[]));
    }
}
