//! The table of functions: every row reads the secrets its parts need, and no other.

use knowledge_assembly::functions::{ALL, Identity, Integrations, Serves};

#[test]
fn every_function_reads_the_secrets_its_parts_need_and_no_other() {
    for row in ALL {
        let parts = row.parts;
        assert_eq!(row.secrets.provider_key, parts.agent, "{}", row.name);
        // Integration credentials and identity providers' client secrets are sealed.
        let seals = parts.integrations != Integrations::None || parts.identity != Identity::None;
        assert_eq!(row.secrets.sealing_key, seals, "{}", row.name);
        // Every session, `/api/auth` and admin route reads the session cookie; SCIM, the
        // document, the app's files, the Tasks and the sweep never do.
        let cookies = matches!(row.serves, Serves::Routes(_));
        assert_eq!(row.secrets.cookie_key, cookies, "{}", row.name);
    }
}

#[test]
fn function_names_are_unique_and_in_kebab_case() {
    let mut names: Vec<&str> = ALL.iter().map(|f| f.name).collect();
    assert!(
        names
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
    );
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ALL.len());
}

/// Where `scripts/binary_sizes.sh` has cargo-lambda's arm64 binaries (`<name>/bootstrap`).
const LAMBDA_DIR: &str = "KNOWLEDGE_LAMBDA_DIR";

#[test]
fn every_functions_arm64_binary_fits_the_budget_of_its_row() {
    let Some(dir) = std::env::var_os(LAMBDA_DIR) else {
        eprintln!(
            "skipped: {LAMBDA_DIR} is not set; scripts/binary_sizes.sh builds the arm64 \
             binaries and runs this check"
        );
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let mut over = Vec::new();
    for row in ALL {
        let path = dir.join(row.name).join("bootstrap");
        let bytes = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .len();
        println!(
            "{:<16} {bytes:>11} of {:>11} bytes",
            row.name, row.lambda.max_bytes
        );
        if bytes > u64::from(row.lambda.max_bytes) {
            over.push(format!(
                "{} is {bytes} bytes, over its {}",
                row.name, row.lambda.max_bytes
            ));
        }
    }
    assert!(over.is_empty(), "{}", over.join("; "));
}
