//! The files derived from the rows of functions (`knowledge_assembly::functions`) and from the
//! routes' declarations: what they hold, and writing or checking them. Each is either whole
//! (a binary's one line, the OpenAPI document) or a marked part of a file whose rest is written
//! by hand (`template.yaml`, `functions/Cargo.toml`, `functions/README.md`).

mod binaries;
mod readme;
mod splice;
pub mod template;

use std::path::{Path, PathBuf};

/// A file as the rows derive it.
#[derive(Debug)]
pub struct Derived {
    /// From the repository's root.
    pub path: PathBuf,
    /// Its whole text, or `None` for a file that must not exist (a binary without a row).
    pub text: Option<String>,
}

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ is in the repository")
        .to_path_buf()
}

/// Every derived file, as the rows and the routes make it now.
///
/// # Errors
/// A file with a marked part that cannot be read, or whose markers are missing.
pub fn derive(root: &Path) -> Result<Vec<Derived>, String> {
    let read =
        |path: &str| std::fs::read_to_string(root.join(path)).map_err(|e| format!("{path}: {e}"));
    let mut files = vec![
        Derived {
            path: "docs/openapi.json".into(),
            text: Some(knowledge_assembly::functions::document_json()),
        },
        Derived {
            path: "template.yaml".into(),
            text: Some(splice::yaml(
                "template.yaml",
                &read("template.yaml")?,
                &template::functions(),
            )?),
        },
        Derived {
            path: "functions/Cargo.toml".into(),
            text: Some(splice::yaml(
                "functions/Cargo.toml",
                &read("functions/Cargo.toml")?,
                &binaries::manifest_entries(),
            )?),
        },
        Derived {
            path: "functions/README.md".into(),
            text: Some(splice::markdown(
                "functions/README.md",
                &read("functions/README.md")?,
                &readme::tables(),
            )?),
        },
    ];
    files.extend(binaries::sources(root).map_err(|e| format!("functions/src/bin: {e}"))?);
    Ok(files)
}

/// The derived files that differ from what is committed.
///
/// # Errors
/// As [`derive`].
pub fn stale(root: &Path) -> Result<Vec<Derived>, String> {
    Ok(derive(root)?
        .into_iter()
        .filter(|file| {
            let now = std::fs::read_to_string(root.join(&file.path)).ok();
            now != file.text
        })
        .collect())
}

/// Writes the stale files (and removes those that must not exist); returns their paths.
///
/// # Errors
/// As [`derive`], or a file that cannot be written.
pub fn write(root: &Path) -> Result<Vec<PathBuf>, String> {
    let stale = stale(root)?;
    for file in &stale {
        let path = root.join(&file.path);
        let done = match &file.text {
            Some(text) => std::fs::write(&path, text),
            None => std::fs::remove_file(&path),
        };
        done.map_err(|e| format!("{}: {e}", file.path.display()))?;
    }
    Ok(stale.into_iter().map(|f| f.path).collect())
}

/// The name in PascalCase: `create-session` is `CreateSession`.
pub fn pascal(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| w[..1].to_uppercase() + &w[1..])
        .collect()
}
