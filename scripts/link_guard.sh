#!/usr/bin/env bash
# The link guard: each Lambda function links only the optional parts it uses (`Parts::of`,
# lib/aws/src/parts.rs, evaluated at compile time from its row in lib/assembly/src/functions.rs), which is what keeps every binary under
# 10 MB. This builds some functions' binaries (dev profile, features resolved as
# `cargo test --workspace` resolves them, so nothing else is rebuilt) and reads their symbols
# with `nm`: the linker drops every function nothing names (--gc-sections) in a debug build as
# in a release one, so a symbol of a crate there means the function calls into it. A function
# that starts linking a part it does not use fails here, naming the part.
# Ends with "N passed, M failed"; exits non-zero on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}/debug"

# function: the crates whose code it must not link.
#   openidconnect: signing in (only sso-login and sso-callback; the admin function discovers)
#   rmcp: the MCP client (only the agent and tool steps, and test-integration: an admin's test)
#   tantivy, rusqlite: the local service's docs search and embedded store (never on AWS)
#   knowledge_providers::openai: the agent's provider (only create-session and CallAgent)
#   knowledge_http::admin: the admin API's handlers (only the admin function's routes)
#   knowledge_http::scim: SCIM's handlers (only the SCIM function)
#   knowledge_oauth: the integrations' authorization servers' client (only the functions that
#     connect, use or revoke OAuth grants: admin, integrations, oauth-callback, scim, the agent
#     and tool steps; sso's sign-in reaches its providers through knowledge_oidc)
declare -A forbidden=(
  [message]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_http::admin knowledge_http::scim::users knowledge_oauth::endpoint"
  [transcript]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_http::admin knowledge_http::scim::users knowledge_oauth::endpoint"
  [load-turn]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_oauth::endpoint"
  [sweep]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_oauth::endpoint"
  [create-session]="openidconnect rmcp tantivy rusqlite knowledge_oauth::endpoint"
  [sso-callback]="rmcp tantivy rusqlite knowledge_providers::openai"
  [call-agent]="openidconnect tantivy rusqlite"
  [admin]="rmcp tantivy rusqlite knowledge_providers::openai knowledge_http::scim::users"
  [test-integration]="openidconnect tantivy rusqlite knowledge_providers::openai knowledge_http::scim::users"
)

bin_args=()
for name in "${!forbidden[@]}"; do bin_args+=(--bin "$name"); done
cargo build --locked --workspace --tests "${bin_args[@]}"

passed=0
failed=0
for name in $(printf '%s\n' "${!forbidden[@]}" | sort); do
  symbols=$(nm -C "$target/$name")
  bad=""
  for part in ${forbidden[$name]}; do
    if grep -q "${part}::\|${part}$" <<<"$symbols"; then
      bad="$bad $part"
    fi
  done
  if [ -z "$bad" ]; then
    echo "ok   $name links none of: ${forbidden[$name]}"
    passed=$((passed + 1))
  else
    echo "FAIL $name links:$bad"
    failed=$((failed + 1))
  fi
done
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
