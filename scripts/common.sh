# Shell functions that scripts/test, scripts/invoke_events.sh, scripts/fuzz_api.sh and
# scripts/binary_sizes.sh share, sourced from the repository root: the Python environment, and
# starting a server (moto, the knowledge service) and waiting, bounded, until it listens.
# scripts/servers.py is the same for Python (app/e2e).
# shellcheck shell=bash

# Bound, in seconds, on a server coming up.
SERVER_TIMEOUT=30

# python_env: the Python virtual environment in .venv with scripts/requirements.txt installed.
# .venv/.installed marks the last complete install; requirements newer than it are installed
# again.
python_env() {
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  if [ ! -e .venv/.installed ] || [ scripts/requirements.txt -nt .venv/.installed ]; then
    .venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements.txt
    touch .venv/.installed
  fi
}

# free_port: a TCP port free on 127.0.0.1 now, for a server that cannot be given port 0.
free_port() {
  .venv/bin/python -c \
    'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# await_server NAME PID LOG CHECK...: polls CHECK every 0.1 s until it succeeds. Returns 1,
# after printing why and the end of LOG, when PID exits first or SERVER_TIMEOUT seconds pass.
await_server() {
  local name=$1 pid=$2 log=$3 deadline=$((SECONDS + SERVER_TIMEOUT))
  shift 3
  until "$@" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "${name} exited before it was up; its output:"
      tail -n 40 "$log"
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "${name} was not up within ${SERVER_TIMEOUT} s; its output:"
      tail -n 40 "$log"
      return 1
    fi
    sleep 0.1
  done
}

# start_server NAME LOG CMD...: starts CMD in the background, its output in LOG, and waits
# (await_server) for its line "listening on http://HOST:PORT", which the knowledge service and
# scripts/moto_server.py print once their socket accepts connections; given port 0, they bind
# one the system picks and that line names it. Sets server_pid (set even on a failure, for
# stop_server) and server_url, the URL of that line; returns 1 when the server is not up.
start_server() {
  local name=$1 log=$2 line
  shift 2
  "$@" >"$log" 2>&1 &
  server_pid=$!
  server_url=
  await_server "$name" "$server_pid" "$log" grep -q "listening on http://" "$log" || return 1
  line=$(grep -o -m 1 "listening on http://[^ ]*" "$log")
  server_url=${line#listening on }
}

# stop_server PID: stops a server started here (SIGTERM) and waits for it; nothing when PID is
# empty or the process is gone.
stop_server() {
  if [ -n "${1:-}" ]; then
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}

# start_moto LOG: moto (scripts/moto_server.py: DynamoDB, Step Functions, Secrets Manager, S3, SQS) on a
# loopback port of its own, its output in LOG; sets moto_pid and moto_url. The one place any
# script starts moto; returns 1 when it is not up (moto_pid is set, for stop_server).
start_moto() {
  local status=0
  start_server moto "$1" .venv/bin/python scripts/moto_server.py 127.0.0.1 0 || status=1
  # shellcheck disable=SC2034 # for the caller
  moto_pid=$server_pid moto_url=$server_url
  return "$status"
}
