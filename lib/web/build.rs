//! Embeds the built app (`app/dist`, committed; `npm run build` in `app/` makes it) into the
//! crate: `index.html` and every file of `assets/`, by name, each asset with its brotli
//! compression (quality 11, made once here, so that no binary carries brotli's encoder).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// `bytes` compressed with brotli at its best quality, when that is smaller.
fn brotli(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = brotli::CompressorWriter::new(Vec::new(), 4096, 11, 22);
    out.write_all(bytes).expect("writing to memory");
    let compressed = out.into_inner();
    (compressed.len() < bytes.len()).then_some(compressed)
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dist = Path::new(&manifest).join("../../app/dist");
    let dist = dist.canonicalize().unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build the app with `npm ci && npm run build` in app/",
            dist.display()
        )
    });
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut names: Vec<String> = std::fs::read_dir(dist.join("assets"))
        .expect("app/dist/assets exists")
        .map(|entry| {
            entry
                .expect("a readable entry")
                .file_name()
                .into_string()
                .expect("UTF-8 names")
        })
        .collect();
    names.sort();
    let mut out = String::new();
    let index = dist.join("index.html");
    println!("cargo:rerun-if-changed={}", index.display());
    writeln!(
        out,
        "pub static INDEX: &[u8] = include_bytes!({:?});",
        index.display().to_string()
    )
    .unwrap();
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    out.push_str("pub static ASSETS: &[Asset] = &[\n");
    for name in names {
        let path = dist.join("assets").join(&name);
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path).expect("a readable asset");
        let br = match brotli(&bytes) {
            Some(compressed) => {
                let br_path = Path::new(&out_dir).join(format!("{name}.br"));
                std::fs::write(&br_path, compressed).expect("OUT_DIR is writable");
                format!("Some(include_bytes!({:?}))", br_path.display().to_string())
            }
            None => "None".to_owned(),
        };
        writeln!(
            out,
            "    Asset {{ name: {name:?}, bytes: include_bytes!({:?}), brotli: {br} }},",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let target = Path::new(&out_dir).join("assets.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
