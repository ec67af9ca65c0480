//! Real PDFs for tests, written by lopdf as a PDF writer would (the `samples` feature): each
//! page's text drawn with a standard font, so that the text layer holds it.

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

/// A PDF of one page per text, each drawn with a standard font.
pub fn pdf(pages: &[&str]) -> Document {
    pdf_of(pages.iter().map(|text| {
        let mut operations = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 720.into()]),
        ];
        if !text.is_empty() {
            operations.push(Operation::new("Tj", vec![Object::string_literal(*text)]));
        }
        operations.push(Operation::new("ET", vec![]));
        operations
    }))
}

/// A PDF of one page per list of content operations, drawn in US Letter with the standard
/// font Helvetica as `F1` in the page tree's resources.
pub fn pdf_of(pages: impl IntoIterator<Item = Vec<Operation>>) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for operations in pages {
        let content = Content { operations };
        let stream = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => stream,
        });
        kids.push(page.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc
}

/// The PDF's bytes as a file holds them.
pub fn bytes(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A PDF of one page per text, as a file's bytes.
pub fn pdf_file(pages: &[&str]) -> Vec<u8> {
    bytes(pdf(pages))
}

/// A PDF of one page whose content stream, compressed (`FlateDecode`), expands to `expanded`
/// bytes of spaces: a decompression bomb about 160 times smaller than what it expands to. The
/// stream is written bit by bit as DEFLATE's fixed codes (a space, then copies of 258 bytes at
/// distance 1), so that making it costs nothing near what reading it does.
pub fn flate_bomb_pdf(expanded: usize) -> Vec<u8> {
    let mut doc = pdf(&["x"]);
    let page = doc.get_pages()[&1];
    let content = doc.add_object(Stream::new(
        dictionary! { "Filter" => "FlateDecode" },
        zlib_of_spaces(expanded),
    ));
    let page = doc.get_object_mut(page).unwrap().as_dict_mut().unwrap();
    page.set("Contents", content);
    bytes(doc)
}

/// A zlib stream of `n` spaces (at least one).
fn zlib_of_spaces(n: usize) -> Vec<u8> {
    let copies = (n.max(1) - 1) / 258;
    let mut bits = Bits::default();
    bits.out.extend([0x78, 0x01]);
    bits.put(1, 1); // the final block
    bits.put(1, 2); // fixed codes
    bits.code(0x30 + u32::from(b' '), 8); // the literal ' '
    for _ in 0..copies {
        bits.code(0b1100_0101, 8); // length 258 (code 285)
        bits.code(0, 5); // distance 1 (code 0)
    }
    bits.code(0, 7); // end of block
    bits.flush();
    let total = (1 + copies * 258) as u64;
    let (mut a, mut b) = (1u64, 0u64);
    // Adler-32 of `total` spaces, in closed form.
    let space = u64::from(b' ');
    a = (a + total % 65_521 * space) % 65_521;
    b = (b
        + total % 65_521
        + space * (u128::from(total) * u128::from(total + 1) / 2 % 65_521) as u64)
        % 65_521;
    bits.out.extend(((b << 16) | a).to_be_bytes()[4..].iter());
    bits.out
}

/// DEFLATE's bit order: values from their lowest bit, Huffman codes from their highest.
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    len: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.len;
        self.len += count;
        while self.len >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.len -= 8;
        }
    }

    fn code(&mut self, code: u32, count: u32) {
        let reversed = code.reverse_bits() >> (32 - count);
        self.put(reversed, count);
    }

    fn flush(&mut self) {
        if self.len > 0 {
            self.out.push(self.acc as u8);
            self.acc = 0;
            self.len = 0;
        }
    }
}
