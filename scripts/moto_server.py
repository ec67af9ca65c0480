"""moto's server with DynamoDB requests applied one at a time.

DynamoDB applies each conditional write and each transaction atomically. moto's server answers
requests on many threads and does not lock its DynamoDB backend: two concurrent conditional
writes can both pass their check, and a failed transaction rolls the table back to a copy taken
before another thread's write. The concurrency tests of the DynamoDB adapter would then test
moto's races instead of the adapter. Here each DynamoDB request holds one lock while moto
handles it, which is the atomicity DynamoDB promises; other services (Step Functions, Lambda,
which call back into this server) are not serialised.

Usage: python scripts/moto_server.py HOST PORT
"""

import os
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


class SerialDynamoDB:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            return self.app(environ, start_response)
        with self.lock:
            # The body is produced inside the lock, so the whole request is one step.
            return list(self.app(environ, start_response))


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    # moto's Step Functions call its own Lambda at MOTO_PORT.
    os.environ["MOTO_PORT"] = str(port)
    run_simple(
        host,
        port,
        SerialDynamoDB(DomainDispatcherApplication(create_backend_app)),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
