//! The embedded store's tables and indexes, and the migration of files written by earlier versions.

use rusqlite::Connection;

pub(crate) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS orgs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    plan TEXT NOT NULL,
    status TEXT NOT NULL,
    monthly_query_quota INTEGER,
    cost_cap_micros INTEGER,
    created_at INTEGER NOT NULL,
    scim_token_sha256 TEXT,
    sso TEXT,
    scim_token_at INTEGER,
    memory_off INTEGER NOT NULL DEFAULT 0,
    member_caps TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS sso_domains (
    domain TEXT PRIMARY KEY,
    org_id TEXT NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS members (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL DEFAULT 0,
    profile TEXT,
    user_name_key TEXT,
    version INTEGER NOT NULL DEFAULT 1,
    signed_out_at INTEGER,
    identity TEXT,
    identity_key TEXT,
    caps TEXT,
    PRIMARY KEY (org_id, user_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS member_data (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (org_id, user_id, kind, name)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS org_groups (
    org_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    display_name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    external_id TEXT,
    source TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, group_id)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS org_groups_name ON org_groups (org_id, name_key);
CREATE TABLE IF NOT EXISTS group_members (
    org_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    PRIMARY KEY (org_id, group_id, user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS group_members_by_user ON group_members (org_id, user_id, group_id);
CREATE TABLE IF NOT EXISTS collections (
    org_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    access TEXT NOT NULL,
    source TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, collection_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS documents (
    org_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    name TEXT NOT NULL,
    format TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    generation INTEGER NOT NULL,
    passages INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until INTEGER,
    version INTEGER NOT NULL,
    by_user TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, collection_id, document_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS documents_queued ON documents (updated_at, lease_until)
    WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS documents_uploading ON documents (updated_at)
    WHERE status = 'uploading';
CREATE TABLE IF NOT EXISTS org_storage (
    org_id TEXT PRIMARY KEY,
    used_bytes INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS integrations (
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    org_grant TEXT,
    rules TEXT,
    PRIMARY KEY (org_id, name)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    org_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    id TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    by_user TEXT,
    detail TEXT,
    PRIMARY KEY (org_id, at, id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    cancelled_at INTEGER,
    run_id TEXT,
    deleting INTEGER NOT NULL DEFAULT 0,
    pending TEXT NOT NULL,
    turn TEXT,
    exec TEXT,
    stale_at INTEGER,
    draft TEXT,
    next_seq INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (user_id, org_id, session_id)
) STRICT, WITHOUT ROWID;
DROP INDEX IF EXISTS sessions_by_update;
CREATE INDEX IF NOT EXISTS sessions_recent ON sessions (user_id, org_id, updated_at DESC, session_id DESC);
CREATE INDEX IF NOT EXISTS sessions_running ON sessions (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_deleting ON sessions (user_id, org_id, session_id) WHERE deleting = 1;
CREATE TABLE IF NOT EXISTS events (
    user_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, org_id, session_id, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tickets (
    hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    payload TEXT
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rate_windows (
    key TEXT PRIMARY KEY,
    hits TEXT NOT NULL,
    version INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage (
    org_id TEXT NOT NULL,
    month TEXT NOT NULL,
    queries INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    PRIMARY KEY (org_id, month)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS member_usage (
    org_id TEXT NOT NULL,
    month TEXT NOT NULL,
    user_id TEXT NOT NULL,
    queries INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    PRIMARY KEY (org_id, month, user_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS member_usage_days (
    org_id TEXT NOT NULL,
    month TEXT NOT NULL,
    user_id TEXT NOT NULL,
    day INTEGER NOT NULL,
    questions INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    PRIMARY KEY (org_id, month, user_id, day)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS member_usage_models (
    org_id TEXT NOT NULL,
    month TEXT NOT NULL,
    user_id TEXT NOT NULL,
    model TEXT NOT NULL,
    calls INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    PRIMARY KEY (org_id, month, user_id, model)
) STRICT, WITHOUT ROWID;
"#;

/// Brings a data directory written by an earlier version up to the current schema.
pub(crate) fn migrate(c: &Connection) -> rusqlite::Result<()> {
    for (table, column, decl) in [
        ("sessions", "turn", "TEXT"),
        ("orgs", "scim_token_sha256", "TEXT"),
        ("members", "updated_at", "INTEGER NOT NULL DEFAULT 0"),
        ("members", "profile", "TEXT"),
        ("members", "user_name_key", "TEXT"),
        ("members", "version", "INTEGER NOT NULL DEFAULT 1"),
        ("members", "signed_out_at", "INTEGER"),
        ("members", "identity", "TEXT"),
        ("members", "identity_key", "TEXT"),
        ("orgs", "sso", "TEXT"),
        ("audit", "by_user", "TEXT"),
        ("orgs", "scim_token_at", "INTEGER"),
        ("sessions", "exec", "TEXT"),
        ("sessions", "stale_at", "INTEGER"),
        ("integrations", "org_grant", "TEXT"),
        ("tickets", "payload", "TEXT"),
        ("sessions", "draft", "TEXT"),
        ("audit", "detail", "TEXT"),
        ("orgs", "memory_off", "INTEGER NOT NULL DEFAULT 0"),
        ("orgs", "member_caps", "TEXT"),
        ("members", "caps", "TEXT"),
        ("integrations", "rules", "TEXT"),
    ] {
        let present: bool = c.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
            [table, column],
            |r| r.get(0),
        )?;
        if !present {
            c.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))?;
        }
    }
    // A flag set by hand before single sign-on was configured for real; `sso` replaces it.
    let flag: bool = c.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('orgs') WHERE name = 'sso_enabled')",
        [],
        |r| r.get(0),
    )?;
    if flag {
        c.execute_batch("ALTER TABLE orgs DROP COLUMN sso_enabled")?;
    }
    c.execute_batch(
        "CREATE UNIQUE INDEX IF NOT EXISTS members_user_name
             ON members (org_id, user_name_key) WHERE user_name_key IS NOT NULL;
         CREATE UNIQUE INDEX IF NOT EXISTS members_identity
             ON members (org_id, identity_key) WHERE identity_key IS NOT NULL;
         CREATE INDEX IF NOT EXISTS members_by_user ON members (user_id, org_id);
         CREATE INDEX IF NOT EXISTS sessions_stale ON sessions (stale_at)
             WHERE stale_at IS NOT NULL;
         -- Runs written before the column: stale as claims without a lease are, 330 s after
         -- their session's last change.
         UPDATE sessions SET stale_at = updated_at + 330000
             WHERE run_id IS NOT NULL AND deleting = 0 AND stale_at IS NULL;",
    )
}
