//! The organisation's generated documents and the members' queries: deterministic from a
//! seed, never from evaluation data. Words are English function words (about two in five
//! tokens, as in running English text) and pseudo-words made of syllables, drawn with Zipf's
//! law over a vocabulary of [`VOCABULARY`] ranks; each document also leans on a topic of its
//! own (forty mid-frequency words it uses far more often than the rest), so that documents
//! differ the way a handbook's chapters do and a search has something to rank.

use std::collections::HashSet;

/// Content words in the vocabulary.
pub const VOCABULARY: usize = 30_000;
/// Words of a topic.
const TOPIC_WORDS: usize = 40;

/// English function words, most frequent first: most are the analyzer's stop words.
const FUNCTION: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "with", "was", "on",
    "be", "by", "this", "are", "or", "from", "at", "an", "which", "not", "have", "but", "has",
    "all", "can", "will", "their", "more", "one", "other", "its", "when", "also", "into", "only",
    "may", "each", "such", "these", "any", "must", "should", "before", "after",
];
const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
    "cl", "dr", "fr", "gr", "pl", "st", "tr", "sh", "ch", "th", "qu",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"];
const CODAS: &[&str] = &[
    "", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "x",
];

/// SplitMix64: small, fast, and the same numbers on every machine.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.range(0, from.len() - 1)]
    }
}

/// The words, and Zipf's cumulative weights over their ranks.
pub struct Words {
    content: Vec<String>,
    cumulative: Vec<f64>,
}

impl Words {
    /// The same vocabulary for the same seed.
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut seen: HashSet<String> = FUNCTION.iter().map(|w| (*w).to_owned()).collect();
        let mut content = Vec::with_capacity(VOCABULARY);
        while content.len() < VOCABULARY {
            let syllables = 1 + (rng.unit() * rng.unit() * 4.0) as usize;
            let mut word = String::new();
            for _ in 0..syllables {
                word.push_str(rng.pick(ONSETS));
                word.push_str(rng.pick(VOWELS));
                word.push_str(rng.pick(CODAS));
            }
            if word.len() >= 3 && seen.insert(word.clone()) {
                content.push(word);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=VOCABULARY)
            .map(|rank| {
                total += 1.0 / (rank as f64).powf(1.07);
                total
            })
            .collect();
        Self {
            content,
            cumulative,
        }
    }

    /// The content word of `rank` (0 the most frequent).
    pub fn ranked(&self, rank: usize) -> &str {
        &self.content[rank]
    }

    /// A content word drawn by Zipf's law.
    fn zipf(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative[VOCABULARY - 1];
        let at = rng.unit() * total;
        let rank = self.cumulative.partition_point(|c| *c < at);
        &self.content[rank.min(VOCABULARY - 1)]
    }

    /// A topic: mid-frequency words (ranks 200 to 20,000), as a subject's own terms are.
    fn topic(&self, rng: &mut Rng) -> Vec<&str> {
        (0..TOPIC_WORDS)
            .map(|_| self.ranked(rng.range(200, 20_000)))
            .collect()
    }

    /// One word of running text about `topic`.
    fn word<'a>(&'a self, rng: &mut Rng, topic: &[&'a str]) -> &'a str {
        let roll = rng.unit();
        if roll < 0.4 {
            // Function words fall off fast too: the first dozen are most of them.
            let at = (rng.unit() * rng.unit() * FUNCTION.len() as f64) as usize;
            FUNCTION[at]
        } else if roll < 0.52 {
            rng.pick(topic)
        } else {
            self.zipf(rng)
        }
    }

    fn sentence(&self, rng: &mut Rng, topic: &[&str], out: &mut String) -> usize {
        let words = rng.range(8, 24);
        for i in 0..words {
            let word = self.word(rng, topic);
            if i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
            }
        }
        out.push_str(". ");
        words
    }

    fn title(&self, rng: &mut Rng, topic: &[&str]) -> String {
        let n = rng.range(2, 5);
        let words: Vec<&str> = (0..n)
            .map(|i| match i % 2 {
                0 => rng.pick(topic),
                _ => self.zipf(rng),
            })
            .collect();
        words.join(" ")
    }

    /// Document `n` of the organisation: Markdown of 300 to 3,000 words (log-uniform: more
    /// short documents than long ones), a title, sections and a few subsections.
    pub fn markdown(&self, seed: u64, n: usize) -> String {
        let mut rng = Rng::new(seed ^ (n as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let target = (300.0 * 10f64.powf(rng.unit())) as usize;
        let topic = self.topic(&mut rng);
        let mut out = format!("# {}\n\n", self.title(&mut rng, &topic));
        let sections = (target / 400).clamp(2, 7);
        let per_section = target / sections;
        let mut written = 0;
        for _ in 0..sections {
            out.push_str(&format!("## {}\n\n", self.title(&mut rng, &topic)));
            let mut in_section = 0;
            while in_section < per_section {
                if in_section > 0 && rng.unit() < 0.15 {
                    out.push_str(&format!("### {}\n\n", self.title(&mut rng, &topic)));
                }
                for _ in 0..rng.range(3, 7) {
                    in_section += self.sentence(&mut rng, &topic, &mut out);
                }
                out.push_str("\n\n");
            }
            written += in_section;
        }
        debug_assert!(written >= target.min(300));
        out
    }

    /// `count` lines of prose about one topic, each about `chars` characters: a PDF's page.
    pub fn lines(&self, rng: &mut Rng, topic_seed: u64, count: usize, chars: usize) -> Vec<String> {
        let topic = self.topic(&mut Rng::new(topic_seed));
        let mut lines = Vec::with_capacity(count);
        let mut line = String::new();
        while lines.len() < count {
            let word = self.word(rng, &topic);
            if line.len() + word.len() + 1 > chars {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines
    }
}

/// What a query is like: a few topic words, a question in a member's words, or common words
/// only (the most passages to score).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Terms,
    Question,
    Common,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Terms => "topic terms",
            Kind::Question => "question",
            Kind::Common => "common words",
        }
    }
}

pub struct Query {
    pub text: String,
    pub kind: Kind,
}

/// `count` queries, a third of each kind, about the topics of the first `documents`
/// documents (the same topics as [`Words::markdown`] draws).
pub fn queries(words: &Words, seed: u64, documents: usize, count: usize) -> Vec<Query> {
    let mut rng = Rng::new(seed ^ 0x5151);
    (0..count)
        .map(|i| {
            let n = rng.range(0, documents - 1);
            let mut doc = Rng::new(seed ^ (n as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
            doc.unit();
            let topic = words.topic(&mut doc);
            let kind = [Kind::Terms, Kind::Question, Kind::Common][i % 3];
            let text = match kind {
                Kind::Terms => {
                    let n = rng.range(2, 3);
                    (0..n)
                        .map(|_| rng.pick(&topic))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
                Kind::Question => format!(
                    "how do I {} the {} for {} {}",
                    words.ranked(rng.range(0, 500)),
                    rng.pick(&topic),
                    words.ranked(rng.range(0, 2_000)),
                    rng.pick(&topic)
                ),
                Kind::Common => (0..4)
                    .map(|_| words.ranked(rng.range(0, 30)))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            Query { text, kind }
        })
        .collect()
}
