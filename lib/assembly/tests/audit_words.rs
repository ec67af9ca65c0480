//! The browser app names every audit action the service writes: in words (`app/src/audit.ts`'s
//! `ACTIONS`) and in the audit log's filter (`app/src/admin.ts`'s `AUDIT_ACTIONS`). Both lists
//! are the app's own, so a new action without its words would show as its raw name and could
//! not be filtered on: this keeps them in step with the core's `AuditAction`.

use std::collections::BTreeSet;
use std::path::Path;

use knowledge_core::domain::AuditAction;

fn app_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The quoted names that open the lines between `start` and `end` (`'member.added'` or
/// `'member.added': '…'`).
fn names(text: &str, start: &str, end: &str) -> BTreeSet<String> {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start}")) + start.len();
    let to = from + text[from..].find(end).unwrap_or_else(|| panic!("no {end}"));
    text[from..to]
        .lines()
        .filter_map(|line| line.trim().strip_prefix('\''))
        .filter_map(|rest| rest.split('\'').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_app_names_every_audit_action_the_service_writes_and_no_other() {
    let core: BTreeSet<String> = AuditAction::ALL
        .iter()
        .map(|a| a.as_str().to_owned())
        .collect();
    let words = names(&app_file("app/src/audit.ts"), "export const ACTIONS", "};");
    assert_eq!(
        words, core,
        "app/src/audit.ts's ACTIONS against the core's AuditAction"
    );
    let filter = names(
        &app_file("app/src/admin.ts"),
        "export const AUDIT_ACTIONS = [",
        "] as const",
    );
    assert_eq!(
        filter, core,
        "app/src/admin.ts's AUDIT_ACTIONS against the core's AuditAction"
    );
}
