//! The functions' binaries: one line each, `knowledge_aws::main!(ROW)`, and their `[[bin]]`
//! entries in `functions/Cargo.toml`.

use std::fmt::Write;
use std::path::Path;

use knowledge_assembly::functions::ALL;

use crate::{Derived, pascal};

/// The row's constant: `create-session` is `CREATE_SESSION`.
pub fn constant(name: &str) -> String {
    name.to_uppercase().replace('-', "_")
}

/// Each row's binary, and the removal of any binary without a row.
pub fn sources(root: &Path) -> std::io::Result<Vec<Derived>> {
    let mut files: Vec<Derived> = ALL
        .iter()
        .map(|row| Derived {
            path: format!("functions/src/bin/{}.rs", row.name).into(),
            text: Some(format!(
                "//! The `{name}` Lambda function (`{pascal}Function` in template.yaml); its row is\n\
                 //! `knowledge_assembly::functions::{row}`. Written by `cargo xtask derive`.\n\
                 \n\
                 knowledge_aws::main!({row});\n",
                name = row.name,
                pascal = pascal(row.name),
                row = constant(row.name),
            )),
        })
        .collect();
    for entry in std::fs::read_dir(root.join("functions/src/bin"))? {
        let path = Path::new("functions/src/bin").join(entry?.file_name());
        if !files.iter().any(|f| f.path == path) {
            files.push(Derived { path, text: None });
        }
    }
    Ok(files)
}

/// The `[[bin]]` entries, by name: no test harness each, or `cargo test --workspace` would link
/// one executable of ~60 MB per function, with no test in it.
pub fn manifest_entries() -> String {
    let mut names: Vec<&str> = ALL.iter().map(|row| row.name).collect();
    names.sort_unstable();
    names.iter().fold(String::new(), |mut out, name| {
        let _ = write!(out, "[[bin]]\nname = \"{name}\"\ntest = false\n");
        out
    })
}
