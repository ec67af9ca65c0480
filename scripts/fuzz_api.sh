#!/usr/bin/env bash
# Fuzzes the local service with schemathesis against the committed docs/openapi.json, with the
# settings of scripts/schemathesis.toml: about 100 examples per operation, the document's links
# followed (stateful phase), and these checks: no server error, every status code, content
# type and response body as documented. Several members'
# cookies, admins' for the admin routes (and the organisation's SCIM token) are handed out by
# scripts/schemathesis_hooks.py.
#   scripts/fuzz_api.sh path/to/knowledge
# Starts the service on a loopback port (scripts/common.sh's start_server) over a fresh data
# directory and stops it; exits non-zero on any failure. Needs .venv with
# scripts/requirements.txt (scripts/test makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/common.sh
. scripts/common.sh
knowledge=$1
dir=$(mktemp -d)
pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  stop_server "$pid"
  if [ -n "${FUZZ_KEEP_LOG:-}" ]; then cp "$dir/serve.log" "$FUZZ_KEEP_LOG"; fi
  rm -rf "$dir"
}
trap cleanup EXIT

k() { "$knowledge" --data-dir "$dir" "$@"; }
k org create --id org_fuzz --name "Fuzzing" --plan business >/dev/null
# SCIM needs SSO switched on; no test reaches this provider.
echo fuzz-secret | k sso set --org org_fuzz --issuer https://idp.example.com --client-id fuzz >/dev/null
members=8
cookies=""
for i in $(seq 1 "$members"); do
  user=$(printf 'usr_fuzz%02d' "$i")
  k member add --org org_fuzz --user "$user" --role viewer >/dev/null
  cookies+="$(k cookie --org org_fuzz --user "$user" --ttl 7200)"$'\n'
done
# The admin routes get the cookies of admins of an organisation of their own, so that their 2xx
# paths are fuzzed too without their changes (a new SCIM token, SSO off, a quota of 0) taking
# the other operations' organisation away from them.
k org create --id org_fuzzadmin --name "Fuzzing the admin API" --plan business >/dev/null
admin_cookies=""
for i in 1 2 3; do
  user="usr_fuzzadmin$i"
  k member add --org org_fuzzadmin --user "$user" --role admin >/dev/null
  admin_cookies+="$(k cookie --org org_fuzzadmin --user "$user" --ttl 7200)"$'\n'
done
token=$(k scim token --org org_fuzz)

# On a port the system picks; the service's "listening on" line names it.
status=0
start_server "the service" "$dir/serve.log" \
  env KNOWLEDGE_ADDR=127.0.0.1:0 "$knowledge" --data-dir "$dir" serve || status=1
pid=$server_pid
[ "$status" -eq 0 ] || exit 1
url=$server_url

FUZZ_COOKIES="$cookies" FUZZ_ADMIN_COOKIES="$admin_cookies" FUZZ_SCIM_TOKEN="$token" SCHEMATHESIS_HOOKS=scripts/schemathesis_hooks.py \
  .venv/bin/schemathesis --config-file scripts/schemathesis.toml run docs/openapi.json \
  --url "$url" --header "Origin: ${url}" --no-color || status=$?
echo "the service's answers by status: $(grep -o 'status=[0-9]*' "$dir/serve.log" | sort | uniq -c | awk '{printf "%s %s,", $2, $1}')"
if [ "$status" -ne 0 ]; then
  echo "the service's log:"; tail -n 50 "$dir/serve.log"
fi
exit "$status"
