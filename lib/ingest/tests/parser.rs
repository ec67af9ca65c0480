//! The core's `Parser` port on ingest: an original into the core's passages, a refusal into
//! its reason.

use bytes::Bytes;
use knowledge_core::domain::{Format, Passage};
use knowledge_core::ports::Parser;
use knowledge_ingest::{Bounds, Ingest};

#[tokio::test]
async fn an_original_becomes_the_cores_passages_with_their_headings() {
    let markdown = "# Handbook\n\nWelcome.\n\n## Leave\n\nTwenty-five days.\n";
    let passages = Ingest::default()
        .parse(Format::Markdown, Bytes::from(markdown))
        .await
        .unwrap();
    assert_eq!(
        passages,
        [
            Passage {
                headings: vec!["Handbook".to_owned()],
                page: None,
                text: "Handbook\n\nWelcome.".to_owned(),
            },
            Passage {
                headings: vec!["Handbook".to_owned(), "Leave".to_owned()],
                page: None,
                text: "Leave\n\nTwenty-five days.".to_owned(),
            },
        ]
    );
}

#[tokio::test]
async fn a_refusal_is_its_reason_in_words() {
    let small = Ingest {
        bounds: Bounds {
            max_bytes: 10,
            ..Bounds::DEFAULT
        },
    };
    let refused = small
        .parse(Format::Text, Bytes::from_static(b"eleven bytes"))
        .await;
    assert_eq!(refused, Err("the file is larger than 10 bytes".to_owned()));
    let refused = Ingest::default()
        .parse(Format::Pdf, Bytes::from_static(b"%PDF-1.4\nnot a pdf"))
        .await
        .unwrap_err();
    assert!(
        refused.starts_with("the file could not be read"),
        "{refused}"
    );
}
