//! Embeds the built app (`app/dist`, committed; `npm run build` in `app/` makes it) into the
//! crate: `index.html` and every file of `assets/`, by name.

use std::fmt::Write as _;
use std::path::Path;

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
    out.push_str("pub static ASSETS: &[(&str, &[u8])] = &[\n");
    for name in names {
        let path = dist.join("assets").join(&name);
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            out,
            "    ({name:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let target =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("assets.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
