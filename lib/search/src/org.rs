//! One organisation's index: its schema, a document's passages replaced in one commit, and a
//! search filtered to a set of collections.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use tantivy::collector::{Count, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{
    BooleanQuery, Occur, Query, QueryParser, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
    Value as _,
};
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term,
    Warmer,
};

use crate::dense::{self, Vectors};
use crate::{ANALYZER, Committed, DocumentKey, Hit, NewPassage, SearchError, analyzer, words};

/// The file that says an index was made anew and its documents are not yet queued again.
pub(crate) const RESET_MARK: &str = "made-anew";
/// The memory a commit's writer may hold: tantivy's least.
const WRITER_BYTES: usize = 15_000_000;
/// Passages each half of a hybrid search ranks before the two are fused: a passage only one
/// half finds still reaches the answer from anywhere in that half's first hundred.
const FUSION_DEPTH: usize = 100;

#[derive(Clone, Copy)]
struct Fields {
    collection: Field,
    document: Field,
    generation: Field,
    ordinal: Field,
    /// Stored, for the hit; searched through `contents`.
    headings: Field,
    page: Field,
    /// Stored, for the hit; searched through `contents`.
    text: Field,
    /// What BM25 reads: the passage's text and its headings as one field, as Anserini indexes
    /// a title and its abstract. Scored as two fields (each with its own length normalisation,
    /// summed), a word of a short heading outweighed the passage's own words: 0.621 nDCG@10 on
    /// SciFact with headings weighted twice, 0.660 weighted as the text, 0.692 as one field
    /// (`docs/performance.md`).
    contents: Field,
    /// The passage's vector, when a model made one (`dense::to_bytes`).
    vector: Field,
    /// The name of the model that made the vector: a query's vector is compared only with the
    /// vectors of its own model.
    model: Field,
}

/// A document to write: its key, its passages and, when a model made them, one vector per
/// passage.
pub(crate) type Written<'a> = (DocumentKey<'a>, &'a [NewPassage<'a>], &'a [Vec<f32>]);

/// The query's vector and the name of the model that made it.
pub(crate) type Meaning<'a> = (&'a str, Arc<[f32]>);

/// One change of a commit: the passages a term names deleted, and a document's added.
struct Change<'a> {
    delete: Term,
    document: Option<Written<'a>>,
}

pub(crate) struct OrgIndex {
    /// Where it lives; `None` in memory.
    folder: Option<PathBuf>,
    /// Whether its folder held an index of another schema, made anew when it was opened.
    pub(crate) reset: bool,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    /// Every live segment's vectors, kept by the reader's warmer (which holds it weakly).
    vectors: Arc<Vectors>,
    /// The index's one writer (tantivy allows one), made at the first write and kept: making
    /// one per commit costs its threads and its arena every time.
    writer: Mutex<Option<IndexWriter>>,
}

impl OrgIndex {
    /// The index in `folder` (created if it is new), or in memory.
    pub(crate) fn open(folder: Option<&Path>) -> Result<Self, SearchError> {
        let marked = folder.is_some_and(|f| f.join(RESET_MARK).is_file());
        let mut schema = Schema::builder();
        let searched = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            collection: schema.add_text_field("collection", STRING | STORED),
            document: schema.add_text_field("document", STRING | STORED),
            generation: schema.add_u64_field("generation", INDEXED | STORED),
            ordinal: schema.add_u64_field("ordinal", INDEXED | STORED),
            headings: schema.add_text_field("headings", STORED),
            page: schema.add_u64_field("page", STORED),
            text: schema.add_text_field("text", STORED),
            contents: schema.add_text_field("contents", searched),
            vector: schema.add_bytes_field("vector", STORED),
            model: schema.add_text_field("model", STRING),
        };
        let schema = schema.build();
        let mut reset = false;
        let index = match folder {
            Some(folder) => {
                let io = |source| SearchError::Io {
                    path: folder.to_owned(),
                    source,
                };
                std::fs::create_dir_all(folder).map_err(io)?;
                let open = || {
                    let directory = MmapDirectory::open(folder)
                        .map_err(|e| io(std::io::Error::other(e.to_string())))?;
                    Ok::<_, SearchError>(Index::open_or_create(directory, schema.clone()))
                };
                match open()? {
                    // Written by a version of the service with another schema (before the
                    // passages' vectors, say): the index derives from the originals, so it is
                    // made anew and its organisation's documents are indexed again
                    // (`PassageIndex::was_reset`).
                    Err(tantivy::TantivyError::SchemaError(why)) => {
                        tracing::warn!(folder = %folder.display(), %why, "an index of another schema is made anew");
                        std::fs::remove_dir_all(folder).map_err(io)?;
                        std::fs::create_dir_all(folder).map_err(io)?;
                        // Kept until the documents are queued again (`PassageIndex::requeued`),
                        // so that a process that dies in between leaves the reset known.
                        std::fs::write(folder.join(RESET_MARK), b"").map_err(io)?;
                        reset = true;
                        open()??
                    }
                    opened => opened?,
                }
            }
            None => Index::create_in_ram(schema),
        };
        index.tokenizers().register(ANALYZER, analyzer());
        let vectors = Arc::new(Vectors::new(fields.vector));
        let warmer: Weak<dyn Warmer> = Arc::downgrade(&vectors) as Weak<dyn Warmer>;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .warmers(vec![warmer])
            .try_into()?;
        Ok(Self {
            folder: folder.map(Path::to_owned),
            reset: reset || marked,
            index,
            reader,
            fields,
            vectors,
            writer: Mutex::new(None),
        })
    }

    /// Ends the writer once its merges are done, and answers the index as committed: its
    /// `meta.json` and the files of its segments. In memory, an error.
    pub(crate) fn settle(&self) -> Result<Committed, SearchError> {
        let Some(folder) = &self.folder else {
            return Err(SearchError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other("an index in memory has no files"),
            });
        };
        let mut held = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(writer) = held.take() {
            writer.wait_merging_threads()?;
        }
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| SearchError::Io { path, source }
        };
        let meta_path = folder.join("meta.json");
        let meta = std::fs::read_to_string(&meta_path).map_err(io(&meta_path))?;
        let mut files = BTreeSet::new();
        for file in self.index.load_metas()?.list_segment_files() {
            // Some components a segment may have are not written for every schema.
            if folder.join(&file).exists()
                && let Some(name) = file.to_str()
            {
                files.insert(name.to_owned());
            }
        }
        drop(held);
        self.reader.reload()?;
        Ok(Committed { meta, files })
    }

    /// Deletes what each change's term names and adds its document's passages, all in one
    /// commit, answering how many documents were written. A document whose index holds a newer
    /// generation than its key's is left out, checked under the writer's lock, so that no other
    /// commit of this process comes between the check and the write. Nothing left, nothing is
    /// committed. A failed write or commit drops the writer (tantivy rolls back what it held),
    /// so that the next write starts from what was last committed.
    fn commit(&self, changes: &[Change<'_>], model: Option<&str>) -> Result<usize, SearchError> {
        let mut held = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let changes = self.not_older(changes)?;
        if changes.is_empty() {
            return Ok(0);
        }
        let writer = match held.as_mut() {
            Some(writer) => writer,
            None => held.insert(self.index.writer_with_num_threads(1, WRITER_BYTES)?),
        };
        let written = self
            .write(writer, &changes, model)
            .and_then(|()| Ok(writer.commit()?));
        if let Err(error) = written {
            *held = None;
            return Err(error);
        }
        drop(held);
        self.reader.reload()?;
        Ok(changes.iter().filter(|c| c.document.is_some()).count())
    }

    /// The changes that do not take a document back to an older generation. Called under the
    /// writer's lock, after which every write of this process is committed: the reader, reloaded
    /// here, sees them all.
    fn not_older<'c>(&self, changes: &'c [Change<'c>]) -> Result<Vec<&'c Change<'c>>, SearchError> {
        if changes.iter().all(|c| c.document.is_none()) {
            return Ok(changes.iter().collect());
        }
        self.reader.reload()?;
        let searcher = self.reader.searcher();
        let mut kept = Vec::with_capacity(changes.len());
        for change in changes {
            match change.document {
                Some((key, _, _)) if self.holds_newer(&searcher, key)? => {}
                _ => kept.push(change),
            }
        }
        Ok(kept)
    }

    /// Whether the index holds passages of `key`'s document of a generation after `key`'s.
    fn holds_newer(&self, searcher: &Searcher, key: DocumentKey<'_>) -> Result<bool, SearchError> {
        let f = self.fields;
        let document = TermQuery::new(
            Term::from_field_text(f.document, key.document),
            IndexRecordOption::Basic,
        );
        let newer = RangeQuery::new(
            Bound::Excluded(Term::from_field_u64(f.generation, key.generation)),
            Bound::Unbounded,
        );
        let query = BooleanQuery::new(vec![
            (Occur::Must, Box::new(document) as Box<dyn Query>),
            (Occur::Must, Box::new(newer)),
        ]);
        Ok(searcher.search(&query, &Count)? > 0)
    }

    fn write(
        &self, writer: &mut IndexWriter, changes: &[&Change<'_>], model: Option<&str>,
    ) -> Result<(), SearchError> {
        let f = self.fields;
        for change in changes {
            writer.delete_term(change.delete.clone());
            let Some((key, passages, vectors)) = change.document else {
                continue;
            };
            for (ordinal, passage) in passages.iter().enumerate() {
                let mut doc = TantivyDocument::default();
                doc.add_text(f.collection, key.collection);
                doc.add_text(f.document, key.document);
                doc.add_u64(f.generation, key.generation);
                doc.add_u64(f.ordinal, ordinal as u64);
                for heading in passage.headings {
                    doc.add_text(f.headings, heading);
                }
                if let Some(page) = passage.page {
                    doc.add_u64(f.page, u64::from(page));
                }
                doc.add_text(f.text, passage.text);
                doc.add_text(f.contents, passage.text);
                for heading in passage.headings {
                    doc.add_text(f.contents, heading);
                }
                if let (Some(model), Some(vector)) = (model, vectors.get(ordinal)) {
                    doc.add_bytes(f.vector, &dense::to_bytes(vector));
                    doc.add_text(f.model, model);
                }
                writer.add_document(doc)?;
            }
        }
        Ok(())
    }

    /// Answers how many of `documents` were written (those whose index held no newer
    /// generation). Their vectors, where they have them, are `model`'s.
    pub(crate) fn replace(
        &self, documents: &[Written<'_>], model: Option<&str>,
    ) -> Result<usize, SearchError> {
        let changes: Vec<Change<'_>> = documents
            .iter()
            .map(|&(key, passages, vectors)| Change {
                delete: Term::from_field_text(self.fields.document, key.document),
                document: Some((key, passages, vectors)),
            })
            .collect();
        self.commit(&changes, model)
    }

    pub(crate) fn remove(&self, document: &str) -> Result<(), SearchError> {
        self.commit(
            &[Change {
                delete: Term::from_field_text(self.fields.document, document),
                document: None,
            }],
            None,
        )
        .map(drop)
    }

    pub(crate) fn remove_collection(&self, collection: &str) -> Result<(), SearchError> {
        self.commit(
            &[Change {
                delete: Term::from_field_text(self.fields.collection, collection),
                document: None,
            }],
            None,
        )
        .map(drop)
    }

    /// The best passages for `query` within `collections`, at most `limit`: by BM25 alone, or,
    /// given the query's `meaning`, BM25's ranking and the vectors' fused by reciprocal rank
    /// (then a hit's score is its fused score).
    pub(crate) fn search(
        &self, query: &str, meaning: Option<Meaning<'_>>, collections: &[&str], limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        let f = self.fields;
        let parser = QueryParser::for_index(&self.index, vec![f.contents]);
        let (asked, _ignored) = parser.parse_query_lenient(&words(query));
        let within = || -> Box<dyn Query> {
            Box::new(TermSetQuery::new(
                collections
                    .iter()
                    .map(|c| Term::from_field_text(f.collection, c)),
            ))
        };
        let query = BooleanQuery::new(vec![(Occur::Must, asked), (Occur::Must, within())]);
        let searcher = self.reader.searcher();
        let found: Vec<(f32, DocAddress)> = match meaning {
            None => searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?,
            Some((model, vector)) => {
                let depth = limit.max(FUSION_DEPTH);
                let words: Vec<DocAddress> = (searcher
                    .search(&query, &TopDocs::with_limit(depth).order_by_score())?)
                .into_iter()
                .map(|(_, address)| address)
                .collect();
                let of_model = TermQuery::new(
                    Term::from_field_text(f.model, model),
                    IndexRecordOption::Basic,
                );
                let filter = BooleanQuery::new(vec![
                    (Occur::Must, within()),
                    (Occur::Must, Box::new(of_model) as Box<dyn Query>),
                ]);
                let meant = self.vectors.rank(&searcher, &filter, vector, depth)?;
                dense::fuse(&[&words, &meant], limit)
            }
        };
        let mut hits = Vec::with_capacity(found.len());
        for (score, address) in found {
            hits.push(self.hit(&searcher.doc(address)?, score));
        }
        Ok(hits)
    }

    /// How many passages have no vector of `model`.
    pub(crate) fn without_model(&self, model: Option<&str>) -> Result<u64, SearchError> {
        let searcher = self.reader.searcher();
        let all = searcher.num_docs();
        let Some(model) = model else {
            return Ok(all);
        };
        let of_model = TermQuery::new(
            Term::from_field_text(self.fields.model, model),
            IndexRecordOption::Basic,
        );
        Ok(all.saturating_sub(searcher.search(&of_model, &Count)? as u64))
    }

    /// The passages of `document`'s `generation` whose places are `from` to `from + limit - 1`,
    /// in order.
    pub(crate) fn passages(
        &self, document: &str, generation: u64, from: u32, limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        let f = self.fields;
        let to = u64::from(from).saturating_add(limit as u64);
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.document, document),
                    IndexRecordOption::Basic,
                )) as Box<dyn Query>,
            ),
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_u64(f.generation, generation),
                    IndexRecordOption::Basic,
                )),
            ),
            (
                Occur::Must,
                Box::new(RangeQuery::new(
                    Bound::Included(Term::from_field_u64(f.ordinal, u64::from(from))),
                    Bound::Excluded(Term::from_field_u64(f.ordinal, to)),
                )),
            ),
        ]);
        let searcher = self.reader.searcher();
        let found = searcher.search(&query, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
        let mut hits = Vec::with_capacity(found.len());
        for (_, address) in found {
            hits.push(self.hit(&searcher.doc(address)?, 0.0));
        }
        hits.sort_by_key(|h| h.ordinal);
        Ok(hits)
    }

    /// A stored passage as a hit of `score`.
    fn hit(&self, doc: &TantivyDocument, score: f32) -> Hit {
        let f = self.fields;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let number = |field| doc.get_first(field).and_then(|v| v.as_u64());
        Hit {
            collection: text(f.collection),
            document: text(f.document),
            generation: number(f.generation).unwrap_or_default(),
            ordinal: number(f.ordinal).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            headings: doc
                .get_all(f.headings)
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            page: number(f.page).and_then(|n| u32::try_from(n).ok()),
            text: text(f.text),
            score,
        }
    }
}
