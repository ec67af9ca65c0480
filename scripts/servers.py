"""Starts a test server and waits until it listens: the Python side of scripts/common.sh's
start_server, with the same contract, for app/e2e's `knowledge serve`.

A server here prints "listening on http://HOST:PORT" once its socket accepts connections (the
knowledge service does, and scripts/moto_server.py). Asked for port 0 it binds one the system
picks, and the line names it: no port is picked ahead and raced for. The wait ends at that line,
at the server's exit, or after `timeout` seconds, whichever comes first.
"""

import re
import socket
import subprocess
import time
from pathlib import Path

LISTENING = re.compile(r"listening on (http://\S+)")
# Bound, in seconds, on a server coming up.
TIMEOUT = 30.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for a server that cannot be given port 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv: list[str], log: Path, env: dict | None = None, timeout: float = TIMEOUT,
          ready: re.Pattern = LISTENING):
    """Starts `argv` with its output in `log` and returns `(process, url)` once it printed its
    "listening on" line (or a line `ready` matches, for a server others wrote: the url is then
    its first group, if it has one); raises AssertionError, with the output, when it exits first
    or does not print the line within `timeout` seconds (it is stopped then)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + timeout
    while True:
        output = Path(log).read_text(errors="replace")
        found = ready.search(output)
        if found:
            return proc, found.group(1) if ready.groups else None
        if proc.poll() is not None:
            raise AssertionError(f"{argv[0]} exited ({proc.returncode}) before it listened:\n{output}")
        if time.monotonic() >= deadline:
            proc.terminate()
            proc.wait(timeout=10)
            raise AssertionError(f"{argv[0]} did not listen within {timeout:.0f} s:\n{output}")
        time.sleep(0.1)
