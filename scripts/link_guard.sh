#!/usr/bin/env bash
# The link guard: each Lambda function links only the optional parts it uses (`Parts::of`,
# lib/aws/src/parts.rs, evaluated at compile time from its row in lib/assembly/src/functions/rows.rs), which is what keeps every binary under
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
#   rusqlite: the local service's embedded store (never on AWS)
#   tantivy: the documents' index (only the functions that read or write it: search,
#     documents, the indexer; the admin function sends the indexer its removals instead)
#   knowledge_ingest: the parsers of documents (only the indexer)
#   aws_sdk_s3, crc_fast: the documents' bucket's client and the checksums it computes (the
#     functions that read or write the bucket; the admin function only pre-signs uploads,
#     with the SDK's signer)
#   aws_sdk_sqs: the indexer's queue (only the admin function sends to it; the indexer is
#     polled)
#   knowledge_providers::openai: the agent's provider (only create-session and CallAgent)
#   knowledge_http::admin: the admin API's handlers (only the admin function's routes; the
#     member's documents routes share the admin wire's id parsers, so for search and
#     documents the guard names the admin's documents handlers)
#   knowledge_http::scim: SCIM's handlers (only the SCIM function)
#   knowledge_oauth: the integrations' authorization servers' client (only the functions that
#     connect, use or revoke OAuth grants: admin, integrations, oauth-callback, scim, the agent
#     and tool steps; sso's sign-in reaches its providers through knowledge_oidc)
declare -A forbidden=(
  [message]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_http::admin knowledge_http::scim::users knowledge_oauth::endpoint knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [transcript]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_http::admin knowledge_http::scim::users knowledge_oauth::endpoint knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [load-turn]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_oauth::endpoint knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [sweep]="openidconnect rmcp tantivy rusqlite knowledge_providers::openai knowledge_oauth::endpoint knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [create-session]="openidconnect rmcp tantivy rusqlite knowledge_oauth::endpoint knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [sso-callback]="rmcp tantivy rusqlite knowledge_providers::openai knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [call-agent]="openidconnect tantivy rusqlite knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [admin]="rmcp tantivy rusqlite knowledge_providers::openai knowledge_http::scim::users knowledge_ingest aws_sdk_s3 crc_fast"
  [test-integration]="openidconnect tantivy rusqlite knowledge_providers::openai knowledge_http::scim::users knowledge_ingest aws_sdk_s3 aws_sdk_sqs"
  [search]="openidconnect rmcp rusqlite knowledge_providers::openai knowledge_http::admin::documents knowledge_http::scim::users knowledge_oauth::endpoint knowledge_ingest aws_sdk_sqs"
  [documents]="openidconnect rmcp rusqlite knowledge_providers::openai knowledge_http::admin::documents knowledge_http::scim::users knowledge_oauth::endpoint knowledge_ingest aws_sdk_sqs"
  [indexer]="openidconnect rmcp rusqlite knowledge_providers::openai knowledge_http::admin knowledge_http::scim::users knowledge_oauth::endpoint aws_sdk_sqs"
)

bin_args=()
for name in "${!forbidden[@]}"; do bin_args+=(--bin "$name"); done
# The packages whose binaries the build links, by name: a binary of another package named as a
# function would be linked to the same target/debug/<name>, and the symbols read would be
# whichever was linked last.
owners=$(cargo build --locked --workspace --tests "${bin_args[@]}" \
  --message-format=json-render-diagnostics \
  | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and "bin" in m["target"]["kind"]:
        print(m["target"]["name"], m["package_id"].split("#")[-1].split("@")[0])
')

passed=0
failed=0
for name in $(printf '%s\n' "${!forbidden[@]}" | sort); do
  others=$(awk -v n="$name" '$1 == n && $2 != "knowledge-functions" { print $2 }' <<<"$owners")
  if [ -n "$others" ]; then
    echo "FAIL $name is also a binary of $others: rename it, or target/debug/$name is not the function's"
    failed=$((failed + 1))
    continue
  fi
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
# The indexer reads each file in a child of its own binary (knowledge_ingest::isolated): started
# with the child's argument, the binary answers the file's passages before Lambda's runtime
# starts, and exits.
answer=$(printf '# Hi\n\nA line of text.\n' \
  | timeout 20 "$target/indexer" __knowledge-parse markdown 536870912 60000 2>&1) || true
if grep -q '^{"passages":\[{' <<<"$answer"; then
  echo "ok   indexer reads a file as its own parser child"
  passed=$((passed + 1))
else
  echo "FAIL indexer as a parser child answered: $answer"
  failed=$((failed + 1))
fi
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
