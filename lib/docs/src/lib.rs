//! `TantivyDocs`: the built-in `docs` integration. It indexes a folder of Markdown and text
//! files in memory with tantivy, split into passages at headings (Markdown) or blank lines
//! (text), and offers the agent one tool, `search_docs`, that returns the best passages with
//! their source file and heading.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use knowledge_core::ports::{CancelSignal, Integration, IntegrationError, ToolSpec};
use knowledge_search::{ANALYZER, analyzer, words};
use serde_json::{Value, json};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value as _,
};
use tantivy::{Index, IndexReader, TantivyDocument, doc};

/// The tool's name, as the agent sees it.
pub const TOOL: &str = "search_docs";
/// Passages a search returns when the input does not say.
const DEFAULT_LIMIT: u64 = 5;
/// Passages a search returns at most.
const MAX_LIMIT: u64 = 10;
/// Hits scoring under this share of the best hit are noise, not answers.
const RELATIVE_CUTOFF: f32 = 0.3;
/// Files larger than this are skipped, not indexed.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// Files indexed at most; a folder with more is refused rather than silently cut.
const MAX_FILES: usize = 10_000;
/// Passages longer than this are split at paragraph breaks.
const MAX_PASSAGE_CHARS: usize = 1_500;
/// Why a folder could not be indexed.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    #[error("docs folder {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("docs folder {0} holds more than {MAX_FILES} files")]
    TooManyFiles(PathBuf),
    #[error("docs index")]
    Index(#[from] tantivy::TantivyError),
}

/// A passage of a file: its section heading (empty before the first) and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub heading: String,
    pub text: String,
}

#[derive(Clone, Copy)]
struct Fields {
    source: Field,
    heading: Field,
    body: Field,
}

/// An in-memory index of a docs folder. Cheap to clone.
#[derive(Clone)]
pub struct TantivyDocs {
    inner: Arc<Inner>,
}

struct Inner {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    files: usize,
    passages: usize,
}

impl TantivyDocs {
    /// Indexes every `.md`, `.markdown` and `.txt` file under `dir` (hidden entries and
    /// symbolic links are skipped). Errors: the folder cannot be read, or holds too many files.
    pub fn open(dir: &Path) -> Result<Self, DocsError> {
        let mut files = vec![];
        collect(dir, dir, &mut files)?;
        files.sort();

        let mut schema = Schema::builder();
        let text = TextOptions::default().set_stored().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            source: schema.add_text_field("source", STRING | STORED),
            heading: schema.add_text_field("heading", text.clone()),
            body: schema.add_text_field("body", text),
        };
        let index = Index::create_in_ram(schema.build());
        index.tokenizers().register(ANALYZER, analyzer());
        let mut writer = index.writer(15_000_000)?;
        let mut passages = 0;
        for (source, path) in &files {
            let content = std::fs::read_to_string(path).map_err(|source| DocsError::Io {
                path: path.clone(),
                source,
            })?;
            let markdown = path.extension().is_none_or(|e| e != "txt");
            for p in split(&content, markdown) {
                writer.add_document(doc!(
                    fields.source => source.as_str(),
                    fields.heading => p.heading,
                    fields.body => p.text,
                ))?;
                passages += 1;
            }
        }
        writer.commit()?;
        let reader = index.reader()?;
        Ok(Self {
            inner: Arc::new(Inner {
                index,
                reader,
                fields,
                files: files.len(),
                passages,
            }),
        })
    }

    pub fn files(&self) -> usize {
        self.inner.files
    }

    pub fn passages(&self) -> usize {
        self.inner.passages
    }

    /// The best passages for a free-text query, best first: `{source, heading, text, score}`.
    /// Any text is a valid query; punctuation and operators are read leniently.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Value>, tantivy::TantivyError> {
        let Inner {
            index,
            reader,
            fields,
            ..
        } = self.inner.as_ref();
        let mut parser = QueryParser::for_index(index, vec![fields.heading, fields.body]);
        parser.set_field_boost(fields.heading, 2.0);
        // Query syntax is not for users: words only (`knowledge_search::words`).
        let (query, _ignored) = parser.parse_query_lenient(&words(query));
        let searcher = reader.searcher();
        let hits = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
        let best = hits.first().map_or(0.0, |(score, _)| *score);
        let mut found = vec![];
        for (score, address) in hits {
            if score <= 0.0 || score < best * RELATIVE_CUTOFF {
                break;
            }
            let d: TantivyDocument = searcher.doc(address)?;
            let text = |f: Field| {
                d.get_first(f)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            found.push(json!({
                "source": text(fields.source),
                "heading": text(fields.heading),
                "text": text(fields.body),
                "score": (f64::from(score) * 1000.0).round() / 1000.0,
            }));
        }
        Ok(found)
    }
}

/// Gathers `(relative source, path)` of the files to index under `dir`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), DocsError> {
    let io = |source| DocsError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let meta = entry.metadata().map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file()
            && meta.len() <= MAX_FILE_BYTES
            && path
                .extension()
                .is_some_and(|e| e == "md" || e == "markdown" || e == "txt")
        {
            if out.len() == MAX_FILES {
                return Err(DocsError::TooManyFiles(root.to_owned()));
            }
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let source = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push((source, path));
        }
    }
    Ok(())
}

/// Splits a file into passages: at each Markdown heading (outside code fences), then at
/// paragraph breaks when a section is long. Text files are split at paragraphs, under the
/// file's first line as heading.
pub fn split(content: &str, markdown: bool) -> Vec<Passage> {
    let mut sections: Vec<(String, String)> = vec![];
    let mut heading = String::new();
    let mut body = String::new();
    let mut fenced = false;
    for line in content.lines() {
        let trimmed = line.trim_start();
        if markdown && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            fenced = !fenced;
        }
        let title = markdown && !fenced && trimmed.starts_with('#');
        if title {
            let text = trimmed.trim_start_matches('#');
            if text.is_empty() || text.starts_with(' ') {
                sections.push((std::mem::take(&mut heading), std::mem::take(&mut body)));
                heading = text.trim().to_owned();
                continue;
            }
        }
        body.push_str(line);
        body.push('\n');
    }
    sections.push((heading, body));
    if !markdown {
        let first = content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if let Some((h, _)) = sections.first_mut() {
            *h = first.trim().to_owned();
        }
    }
    let mut passages = vec![];
    for (heading, body) in sections {
        let paragraphs: Vec<&str> = body
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty() && (markdown || *p != heading))
            .collect();
        let mut text = String::new();
        for p in paragraphs {
            let long = markdown && text.chars().count() + p.chars().count() > MAX_PASSAGE_CHARS;
            if !text.is_empty() && (long || !markdown) {
                passages.push(Passage {
                    heading: heading.clone(),
                    text: std::mem::take(&mut text),
                });
            }
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(p);
        }
        if !text.is_empty() {
            passages.push(Passage { heading, text });
        }
    }
    passages
}

fn invalid(message: &str) -> IntegrationError {
    IntegrationError::Invalid(message.to_owned())
}

#[async_trait]
impl Integration for TantivyDocs {
    fn name(&self) -> &str {
        "docs"
    }

    async fn tools(&self) -> Result<Vec<ToolSpec>, IntegrationError> {
        Ok(vec![ToolSpec {
            name: TOOL.into(),
            description: "Search the organisation's documents (Markdown and text files) for the \
                          passages most relevant to a query. Returns the best passages, best \
                          first, each with its source file and section heading."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": "Passages to return (default 5)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            hints: knowledge_core::domain::ToolHints::READ_ONLY,
        }])
    }

    /// Errors: `Invalid` for another tool or an input that does not match the schema. A search
    /// is short and local, so a cancel does not interrupt it.
    async fn call(
        &self, tool: &str, input: &Value, _cancelled: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError> {
        if tool != TOOL {
            return Err(invalid("the docs integration has no such tool"));
        }
        let query = input
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
            .ok_or_else(|| invalid("query must be a non-empty string"))?
            .to_owned();
        let limit = match input.get("limit") {
            None => DEFAULT_LIMIT,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| invalid("limit must be an integer from 1 to 10"))?,
        };
        let docs = self.clone();
        let found = tokio::task::spawn_blocking(move || docs.search(&query, limit as usize))
            .await
            .map_err(|e| IntegrationError::Unavailable(e.to_string()))?
            .map_err(|e| IntegrationError::Unavailable(e.to_string()))?;
        Ok(Value::Array(found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn markdown_splits_at_headings_but_not_inside_code_fences() {
        let passages = split(
            "Intro line.\n\n# One\n\nFirst.\n\n```sh\n# not a heading\n```\n\n## Two\n\nSecond.\n",
            true,
        );
        let headings: Vec<&str> = passages.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(headings, ["", "One", "Two"]);
        assert!(passages[1].text.contains("# not a heading"));
    }

    #[test]
    fn text_files_split_at_paragraphs_under_their_first_line() {
        let passages = split("Title\n\nFirst paragraph.\n\nSecond paragraph.\n", false);
        assert_eq!(
            passages,
            [
                Passage {
                    heading: "Title".into(),
                    text: "First paragraph.".into()
                },
                Passage {
                    heading: "Title".into(),
                    text: "Second paragraph.".into()
                },
            ]
        );
    }

    #[test]
    fn search_finds_the_relevant_section_by_stem_and_names_its_source() {
        let dir = folder(&[
            (
                "guide/cancel.md",
                "# Cancelling\n\nA POST stops a running answer; cancelling is immediate.\n",
            ),
            ("limits.txt", "Limits\n\nTen sessions per minute.\n"),
            (
                ".hidden/secret.md",
                "# Cancelling secrets\n\ncancel cancel cancel\n",
            ),
            ("image.png", "not text"),
        ]);
        let docs = TantivyDocs::open(dir.path()).unwrap();
        assert_eq!(docs.files(), 2);
        let hits = docs.search("How do I cancel sessions?", 5).unwrap();
        assert_eq!(hits[0]["source"], "guide/cancel.md");
        assert_eq!(hits[0]["heading"], "Cancelling");
    }

    #[test]
    fn query_syntax_in_a_question_neither_fails_nor_matches_everything() {
        let dir = folder(&[("a.md", "# A\n\nalpha\n"), ("b.md", "# B\n\nbeta\n")]);
        let docs = TantivyDocs::open(dir.path()).unwrap();
        for q in [
            "a:b:c \\ {}",
            "error: alpha!",
            "\"unbalanced",
            "*",
            "AND OR NOT",
        ] {
            let hits = docs.search(q, 5).unwrap();
            assert!(hits.len() <= 1, "{q}: {hits:?}");
        }
        assert_eq!(
            docs.search("error: alpha!", 5).unwrap()[0]["source"],
            "a.md"
        );
    }

    #[tokio::test]
    async fn the_tool_refuses_input_that_breaks_its_schema() {
        let dir = folder(&[("a.md", "# A\n\nalpha\n")]);
        let docs = TantivyDocs::open(dir.path()).unwrap();
        for input in [
            json!({}),
            json!({"query": " "}),
            json!({"query": "a", "limit": 0}),
        ] {
            assert!(matches!(
                docs.call(TOOL, &input, std::pin::pin!(std::future::pending()))
                    .await,
                Err(IntegrationError::Invalid(_))
            ));
        }
        let found = docs
            .call(
                TOOL,
                &json!({"query": "alpha", "limit": 1}),
                std::pin::pin!(std::future::pending()),
            )
            .await
            .unwrap();
        assert_eq!(found.as_array().unwrap().len(), 1);
    }
}
