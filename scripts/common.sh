# Shell functions that scripts/test, scripts/invoke_events.sh and scripts/fuzz_api.sh share;
# sourced from the repository root.

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

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
  .venv/bin/python -c \
    'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
