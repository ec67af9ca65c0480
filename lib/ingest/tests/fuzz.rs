//! The parsers fuzzed for panics and for time: valid files of every format, mutated thousands of
//! ways from fixed seeds (bytes flipped, cut, repeated, spliced), each parse ending in passages
//! or a refusal, within a time bound, and no panic ever escaping `parse`. A seed that fails
//! names itself, so the case can be replayed.

use std::time::{Duration, Instant};

mod common;

use common::{bytes, docx, pdf};
use knowledge_ingest::{Bounds, Format, parse};

/// Mutations tried per format.
const CASES: u64 = 300;
/// The longest one parse of a mutated small file may take, in a debug build on a busy machine.
const SLOWEST: Duration = Duration::from_secs(5);

/// xorshift64*: a fixed, dependency-free sequence from each seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `file` changed in one to four ways.
fn mutate(file: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = file.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len());
        match rng.below(5) {
            0 => out[at] ^= 1 << rng.below(8),
            1 => out.truncate(at.max(1)),
            2 => {
                let len = rng.below(64).min(out.len() - at);
                let piece = out[at..at + len].to_vec();
                for _ in 0..rng.below(50) {
                    out.splice(at..at, piece.iter().copied());
                }
            }
            3 => {
                let from = rng.below(out.len());
                let len = rng.below(32).min(out.len() - from);
                let piece = out[from..from + len].to_vec();
                out.splice(at..at, piece);
            }
            _ => out[at] = [b'<', b'>', b'(', b')', b'/', 0, 0xff, b'&'][rng.below(8)],
        }
        if out.is_empty() {
            out.push(b' ');
        }
    }
    out
}

fn fuzz(format: Format, file: &[u8]) {
    let bounds = Bounds {
        max_time: Duration::from_secs(2),
        ..Bounds::DEFAULT
    };
    assert!(
        parse(format, file, &bounds).is_ok(),
        "{format:?}: the seed file itself"
    );
    for seed in 1..=CASES {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let case = mutate(file, &mut rng);
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(|| parse(format, &case, &bounds));
        let took = started.elapsed();
        assert!(
            outcome.is_ok(),
            "{format:?} seed {seed}: a panic escaped parse"
        );
        assert!(took < SLOWEST, "{format:?} seed {seed}: took {took:?}");
    }
}

#[test]
fn mutated_pdfs_end_in_passages_or_a_refusal_in_time() {
    fuzz(Format::Pdf, &bytes(pdf(&["Fuzzed text (with parens)"])));
}

#[test]
fn mutated_docx_files_end_in_passages_or_a_refusal_in_time() {
    fuzz(Format::Docx, &docx());
}

#[test]
fn mutated_html_ends_in_passages_or_a_refusal_in_time() {
    let html = "<html><head><script>if (a < b) {}</script></head><body><h1>T&amp;C</h1>\
                <p>One <b>two</b></p><table><tr><td>cell</td></tr></table></body></html>";
    fuzz(Format::Html, html.as_bytes());
}

#[test]
fn mutated_markdown_ends_in_passages_or_a_refusal_in_time() {
    let markdown = "# Title\n\nSome *text* with `code` and [a link](http://x).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nblock\n```\n";
    fuzz(Format::Markdown, markdown.as_bytes());
}
