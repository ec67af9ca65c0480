//! The code map of `docs/architecture.md` ("The modules") against the tree: every path it names
//! exists, and every module that exists is named, so that a module added, moved or removed
//! without its line in the map fails here. The map has a heading per crate (`` #### `lib/core` ``)
//! and a bullet per module whose first code span is its path under the crate's `src/`
//! (`` - `domain/audit.rs`: … ``); a module directory may be named for its `mod.rs` (`domain/`).
//! Modules are the `.rs` files under `lib/*/src` and `xtask/src`, and the files under `app/src`;
//! a module's own unit tests split out beside it (`tests.rs`) are not. And no module is longer
//! than a person can hold in mind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The map: each crate's directory (from the repository's root) with the paths its bullets name.
fn map(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = text
        .find("\n### The modules\n")
        .expect("docs/architecture.md has a section '### The modules'");
    let mut crates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text[start + 1..].lines().skip(1) {
        if line.starts_with("## ") || line.starts_with("### ") {
            break;
        }
        if let Some(heading) = line.strip_prefix("#### ") {
            let name = heading.trim().trim_matches('`').to_string();
            current = Some(name.clone());
            crates.entry(name).or_default();
        } else if let Some(item) = line.trim_start().strip_prefix("- `") {
            let crate_dir = current
                .as_ref()
                .unwrap_or_else(|| panic!("a module before any crate's heading: {line}"));
            let path = item.split('`').next().unwrap_or_default().to_string();
            let named = crates.get_mut(crate_dir).expect("its heading was seen");
            assert!(
                named.insert(path.clone()),
                "{crate_dir}: `{path}` is named twice"
            );
        }
    }
    crates
}

/// The modules under `src`, as paths relative to it (`/` separated).
fn modules(src: &Path, rust: bool) -> BTreeSet<String> {
    fn walk(dir: &Path, base: &Path, rust: bool, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, base, rust, out);
                continue;
            }
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if (rust && !name.ends_with(".rs")) || name == "tests.rs" {
                continue;
            }
            let relative = path.strip_prefix(base).expect("under src");
            let parts: Vec<_> = relative.iter().map(|p| p.to_string_lossy()).collect();
            out.insert(parts.join("/"));
        }
    }
    let mut out = BTreeSet::new();
    walk(src, src, rust, &mut out);
    out
}

/// The crates the map must describe, by directory from the repository's root.
fn crates(root: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(root.join("lib"))
        .expect("lib/")
        .map(|e| e.expect("an entry of lib/").path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| format!("lib/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    found.extend(
        ["xtask", "app"]
            .into_iter()
            .filter(|dir| root.join(dir).join("src").is_dir())
            .map(String::from),
    );
    found.sort();
    found
}

/// What is wrong with the map against the tree, one line each.
fn mismatches(root: &Path, text: &str) -> Vec<String> {
    let map = map(text);
    let mut wrong = Vec::new();
    for dir in crates(root) {
        let Some(named) = map.get(&dir) else {
            wrong.push(format!("{dir}: no heading '#### `{dir}`' in the map"));
            continue;
        };
        let src = root.join(&dir).join("src");
        let existing = modules(&src, dir != "app");
        for module in &existing {
            let as_dir = module
                .strip_suffix("mod.rs")
                .filter(|d| d.is_empty() || d.ends_with('/'));
            if !named.contains(module) && !as_dir.is_some_and(|d| named.contains(d)) {
                wrong.push(format!("{dir}/src/{module}: exists, not named in the map"));
            }
        }
    }
    for (dir, named) in &map {
        let src = root.join(dir).join("src");
        for path in named {
            let target = src.join(path);
            let exists = if path.ends_with('/') {
                target.is_dir()
            } else {
                target.is_file()
            };
            if !exists {
                wrong.push(format!(
                    "{dir}/src/{path}: named in the map, does not exist"
                ));
            }
        }
    }
    wrong
}

#[test]
fn the_code_map_names_every_module_and_only_modules_that_exist() {
    let root = root();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the map");
    let wrong = mismatches(&root, &text);
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's code map ('### The modules') and the tree differ:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_module_missing_from_the_map_or_a_path_that_is_gone_is_found() {
    let root = root();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the map");
    let without = text.replace("- `ids.rs`", "- `gone.rs`");
    let wrong = mismatches(&root, &without);
    assert!(
        wrong.contains(&"lib/core/src/ids.rs: exists, not named in the map".to_string()),
        "{wrong:?}"
    );
    assert!(
        wrong.contains(&"lib/core/src/gone.rs: named in the map, does not exist".to_string()),
        "{wrong:?}"
    );
}

/// The most lines a module of the code may hold: a file a person can hold in mind.
const MAX_LINES: usize = 500;

/// The modules over [`MAX_LINES`], one line each, but the generated types of the app
/// (`openapi.d.ts`, derived from docs/openapi.json) and the test doubles (`testing/`).
fn oversized(root: &Path) -> Vec<String> {
    let mut over = Vec::new();
    for krate in crates(root) {
        let src = root.join(&krate).join("src");
        for module in modules(&src, krate != "app") {
            if module.ends_with(".d.ts") || module.starts_with("testing/") {
                continue;
            }
            let text = std::fs::read_to_string(src.join(&module)).unwrap_or_default();
            let lines = text.lines().count();
            if lines > MAX_LINES {
                over.push(format!("{krate}/src/{module}: {lines} lines"));
            }
        }
    }
    over
}

#[test]
fn no_module_of_the_code_is_longer_than_a_person_can_hold_in_mind() {
    let over = oversized(&root());
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines (split it along its seams): {}",
        over.join("; ")
    );
}
