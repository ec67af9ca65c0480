#!/usr/bin/env bash
# The functions' real binaries, sent their sample events (events/<name>.json) through a Lambda
# Runtime API emulator: the nearest thing to Lambda that runs here, without Docker or AWS
# (`sam local` needs both).
#   - cargo-lambda (from PyPI, the version pinned below, in .venv) serves the Runtime API and
#     the Invoke API on a free loopback port: `cargo lambda watch --only-lambda-apis`, which
#     builds nothing and watches no file;
#   - each function's binary (dev profile, built here by cargo) runs as Lambda would start it:
#     the environment template.yaml gives that function (read by scripts/lambda_events.py) and
#     nothing else from this shell, with the AWS SDK pointed at moto (scripts/moto_server.py on
#     another loopback port, started by scripts/common.sh's start_moto) for DynamoDB, Secrets
#     Manager and Step Functions;
#   - `cargo lambda invoke NAME --data-file FILE` sends each event, and each answer is checked
#     against what that function must answer (scripts/lambda_events.py, CHECKS).
# The run: moto gets the two key secrets, the agent state machine, and the table with the
# sample organisation and member (made by the `knowledge` binary, as an operator would), and a
# session cookie is minted on the signing key. Then openapi serves the committed
# docs/openapi.json; me signs the sample member in; create-session opens a session and starts
# its execution on moto; the workflow's Tasks are invoked in the order the state machine would,
# each with its sample event aimed at that session and run: load-turn (agent), call-agent (the
# built-in agent answers), finish-turn, load-turn again (done); transcript reads the answer; and
# titles renames the session. Every function exports its traces to a real OTLP receiver
# (scripts/otlp_receiver.py); once call-agent has answered, the turn's trace must be there
# already: the request, its AWS calls, LoadTurn and CallAgent joined to it, the model's call.
# Every wait is bounded; the emulator, moto and the functions are stopped on exit. On a failure
# it prints the function's log and stops (the later steps build on the earlier ones).
# Ends with "N passed, M failed"; exits non-zero on any failure.
# Usage: scripts/invoke_events.sh   (CARGO_TARGET_DIR is honoured, as cargo does)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/common.sh
. scripts/common.sh

# cargo-lambda's watch and invoke only; installed without its dependencies, since ziglang
# (about 400 MB) serves only cross-compiling builds (docs/deploy.md).
CARGO_LAMBDA_VERSION=1.9.2
# Bound, in seconds, on one invocation (a cold start included); on a server coming up it is
# scripts/common.sh's SERVER_TIMEOUT.
INVOKE_TIMEOUT=60
ORIGIN=https://app.example.com
ORG=org_sample
USER_ID=usr_sample
FUNCTIONS=(openapi me create-session load-turn call-agent finish-turn transcript titles)

bin="${CARGO_TARGET_DIR:-target}/debug"
work=$(mktemp -d)
server_pids=()
declare -A function_pid=()
passed=0

stop_all() {
  local pid stopped=()
  # Those still running are signalled, then waited for (one that exited already is not: bash
  # may have no record of it left).
  for pid in "${function_pid[@]}" "${server_pids[@]}"; do
    if kill "$pid" 2>/dev/null; then stopped+=("$pid"); fi
  done
  for pid in "${stopped[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# fail REASON [LOG...]: prints the reason, the end of each log that has anything, and the
# closing count, and exits non-zero.
fail() {
  local log
  echo "FAILED: $1"
  shift
  for log in "$@"; do
    if [ -s "$log" ]; then
      echo "--- ${log##*/}"
      tail -n 40 "$log"
    fi
  done
  echo "${passed} passed, 1 failed"
  exit 1
}

echo "-- cargo-lambda ${CARGO_LAMBDA_VERSION} and the Python environment in .venv"
python_env
installed=$(.venv/bin/cargo-lambda lambda --version 2>/dev/null || true)
if [ "${installed%% (*}" != "cargo-lambda ${CARGO_LAMBDA_VERSION}" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps \
    "cargo-lambda==${CARGO_LAMBDA_VERSION}"
fi
# `cargo lambda` finds the subcommand on PATH.
export PATH="$PWD/.venv/bin:$PATH"

echo "-- the binaries: ${FUNCTIONS[*]} and knowledge"
# --workspace --tests resolves features as `cargo test --workspace` does (dev-dependencies
# included), so after it only these binaries are compiled and linked; without them, tokio and
# everything above it would be built a second time with other features.
bin_args=()
for name in "${FUNCTIONS[@]}" knowledge; do bin_args+=(--bin "$name"); done
cargo build --locked --workspace --tests "${bin_args[@]}"

echo "-- moto and the Lambda Runtime API emulator on loopback"
up=yes
start_moto "$work/moto.log" || up=no
server_pids+=("$moto_pid")
[ "$up" = yes ] || fail "moto did not start"
endpoint=$moto_url
# The emulator takes no port 0 and prints no "listening on": a free port, and a connection to
# it is its sign.
port=$(free_port)
cargo lambda watch --only-lambda-apis --invoke-address 127.0.0.1 --invoke-port "$port" \
  >"$work/watch.log" 2>&1 &
server_pids+=($!)
await_server "cargo lambda watch" "$!" "$work/watch.log" \
  .venv/bin/python -c \
  'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$port" \
  || fail "cargo lambda watch did not start"

# The functions export their traces to a real OTLP receiver.
up=yes
start_server "the OTLP receiver" "$work/otlp.log" .venv/bin/python scripts/otlp_receiver.py \
  || up=no
server_pids+=("$server_pid")
[ "$up" = yes ] || fail "the OTLP receiver did not start"
receiver=$server_url

echo "-- the deployment on moto: secrets, state machine, table, the sample member and a cookie"
table="knowledge-invoke-$$"
.venv/bin/python scripts/lambda_events.py deploy "$endpoint" >"$work/deployed" \
  || fail "the secrets and the state machine could not be created on moto" "$work/moto.log"
declare -A deployed=()
while read -r key value; do deployed[$key]=$value; done <"$work/deployed"
# The operator's CLI on the table; region and credentials given, so the SDK asks no instance
# metadata service.
knowledge=(env AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  AWS_EC2_METADATA_DISABLED=true "$bin/knowledge" --data-dir "$work/data"
  --store dynamodb --dynamodb-endpoint "$endpoint" --dynamodb-table "$table")
"${knowledge[@]}" org create --id "$ORG" --name "Sample" --plan business >/dev/null \
  || fail "knowledge org create failed" "$work/moto.log"
"${knowledge[@]}" member add --org "$ORG" --user "$USER_ID" --role viewer >/dev/null \
  || fail "knowledge member add failed" "$work/moto.log"
# Minted on the key in the signing secret, as the deployed functions check it.
cookie=$(KNOWLEDGE_SIGNING_KEY="${deployed[signing_key]}" "$bin/knowledge" --data-dir "$work/data" \
  cookie --org "$ORG" --user "$USER_ID" --origin "$ORIGIN") || fail "knowledge cookie failed"
case "$cookie" in
  __Host-ks_session=*) ;;
  *) fail "knowledge cookie printed no __Host-ks_session cookie: ${cookie}" ;;
esac
signed_in="REPLACE_WITH_OUTPUT_OF_knowledge_cookie=${cookie#__Host-ks_session=}"

echo "-- the functions, each with its environment from template.yaml"
mkdir -p "$work/home"
for name in "${FUNCTIONS[@]}"; do
  .venv/bin/python scripts/lambda_events.py env "$name" \
    Table="$table" AppOrigin="$ORIGIN" SigningKeySecretArn="${deployed[signing_key_arn]}" \
    SealingKeySecretArn="${deployed[sealing_key_arn]}" \
    AgentStateMachine="${deployed[state_machine_arn]}" TracesEndpoint="$receiver" \
    >"$work/$name.env" \
    || fail "no environment for ${name} from template.yaml"
  mapfile -t variables <"$work/$name.env"
  # As Lambda starts it: its variables, the runtime's, and credentials; nothing else (HOME is
  # empty, so no ~/.aws is read).
  env -i HOME="$work/home" \
    AWS_LAMBDA_FUNCTION_NAME="$name" AWS_LAMBDA_FUNCTION_VERSION="\$LATEST" \
    AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:${port}/.rt/${name}" \
    AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
    AWS_ENDPOINT_URL="$endpoint" AWS_EC2_METADATA_DISABLED=true \
    "${variables[@]}" "$bin/$name" >"$work/$name.log" 2>&1 &
  function_pid[$name]=$!
done

# invoke NAME CASE EVENT [NAME=VALUE...]: sends the event file to the function and checks its
# answer as CASE (scripts/lambda_events.py check); what the check prints for the later steps is
# left in $work/CASE.values.
invoke() {
  local name=$1 case=$2 event=$3 pid deadline=$((SECONDS + INVOKE_TIMEOUT))
  shift 3
  echo "cargo lambda invoke ${name} --data-file ${event}"
  cargo lambda invoke "$name" --invoke-address 127.0.0.1 --invoke-port "$port" \
    --data-file "$event" >"$work/$case.out" 2>"$work/$case.err" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if ! kill -0 "${function_pid[$name]}" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      fail "${name} exited (a failed cold start?)" "$work/$name.log"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill "$pid" 2>/dev/null || true
      fail "${name} did not answer within ${INVOKE_TIMEOUT} s" "$work/$name.log" "$work/watch.log"
    fi
    sleep 0.1
  done
  if ! wait "$pid"; then
    cat "$work/$case.err"
    fail "cargo lambda invoke ${name} failed" "$work/$name.log"
  fi
  if ! .venv/bin/python scripts/lambda_events.py check "$case" "$work/$case.out" "$@" \
    >"$work/$case.values"; then
    echo "the answer: $(head -c 2000 "$work/$case.out")"
    fail "${name}'s answer is not what ${case} expects" "$work/$name.log"
  fi
  passed=$((passed + 1))
}

# event NAME OLD=NEW...: events/NAME.json with each OLD replaced, as $work/NAME.json.
event() {
  local name=$1
  shift
  .venv/bin/python scripts/lambda_events.py event "$name" "$work/$name.json" "$@" \
    || fail "events/${name}.json could not be prepared"
}

echo "-- the events"
event me "$signed_in"
event create-session "$signed_in"
invoke openapi openapi events/openapi.json
invoke me me "$work/me.json"
invoke create-session create-session "$work/create-session.json" \
  endpoint="$endpoint" state_machine_arn="${deployed[state_machine_arn]}"
read -r session run trace <"$work/create-session.values"
# The task events and the transcript aimed at the session just created and its run; the
# execution the task events name started now (one that started long ago would hand over).
aimed=("ses_0123456789abcdef0123456789abcdef=${session}"
  "run_0123456789abcdef0123456789abcdef=${run}"
  "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01=${trace}")
started="2026-01-01T00:00:00.000Z=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)"
for name in load-turn call-agent finish-turn; do event "$name" "${aimed[@]}" "$started"; done
# The sample reads after its third event; this session's turn is three events long, so the
# transcript is read after the question: the answer and the idle status.
event transcript "$signed_in" "${aimed[0]}" evt_000000000003=evt_000000000001
invoke load-turn load-turn "$work/load-turn.json"
invoke call-agent call-agent "$work/call-agent.json"
# Written before the invocation answered: the turn's embedded metrics in the function's log.
.venv/bin/python scripts/lambda_events.py metrics "$work/call-agent.log" \
  || fail "call-agent wrote no embedded metrics of its turn" "$work/call-agent.log"
passed=$((passed + 1))
# Exported before the invocations returned: the turn's trace so far, checked without a wait.
.venv/bin/python scripts/lambda_events.py traces "$receiver" "$trace" "$work/call-agent.log" \
  || fail "the turn's trace is not in the OTLP receiver" "$work/otlp.log" "$work/call-agent.log"
passed=$((passed + 1))
invoke finish-turn finish-turn "$work/finish-turn.json"
invoke load-turn load-turn-done "$work/load-turn.json"
invoke transcript transcript "$work/transcript.json"
# Renamed, beside the interface's endpoints.
event titles "$signed_in" "${aimed[0]}"
invoke titles titles "$work/titles.json"

echo "${passed} passed, 0 failed"
