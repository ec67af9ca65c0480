"""moto's server with DynamoDB requests applied one at a time.

DynamoDB applies each conditional write and each transaction atomically. moto's server answers
requests on many threads and does not lock its DynamoDB backend: two concurrent conditional
writes can both pass their check, and a failed transaction rolls the table back to a copy taken
before another thread's write. The concurrency tests of the DynamoDB adapter would then test
moto's races instead of the adapter. Here each DynamoDB request holds one lock while moto
handles it, which is the atomicity DynamoDB promises; other services (Step Functions, Lambda,
which call back into this server) are not serialised.

Step Functions' optimized integrations take the API's parameters in their documented casing
(`"StateMachineArn"`, `"Name"`, `"Input"` for `arn:aws:states:::states:startExecution`). moto's
interpreter (LocalStack's, with its name mapping left out) hands them to boto3 as written, and
boto3 knows only its own member names (`stateMachineArn`), so the request fails with
`KeyError`. Here they are mapped onto the operation's members, as Step Functions does, so the
agent workflow's `Handover` state runs.

S3 checks a pre-signed request's signature, and the signature covers the headers it names
(`X-Amz-SignedHeaders`): a pre-signed upload signed for 1,234 bytes of `text/markdown` is
refused when another length or type is sent, and any request once it has expired. moto checks
no signature, so here pre-signed S3 requests (`X-Amz-Signature` in the query) signed with the
fixed local credentials the tests and the local CLI use are checked as S3 checks them, and
refused with S3's 403 `SignatureDoesNotMatch` or `AccessDenied`; others go to moto as they
are. And S3 applies a conditional write (`If-Match`, `If-None-Match` on `PUT`) atomically, as
it does a DynamoDB condition: those hold the same lock.

Once its socket accepts connections it prints "moto listening on http://HOST:PORT", the line
scripts/common.sh's start_moto waits for; PORT 0 takes a port the system picks, which that line
names.

Usage: python scripts/moto_server.py HOST PORT
"""

import datetime
import hashlib
import hmac
import os
import sys
import threading
from urllib.parse import parse_qsl, quote

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server


# The fixed credentials that sign against this server: the tests' and the local CLI's
# (lib/dynamo/src/table.rs), by access key id.
LOCAL_SECRETS = {"test": "test", "local": "local"}


class SerialDynamoDB:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        conditional_put = environ.get("REQUEST_METHOD") == "PUT" and (
            "HTTP_IF_MATCH" in environ or "HTTP_IF_NONE_MATCH" in environ
        )
        dynamodb = environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_")
        if not dynamodb and not conditional_put:
            return self.app(environ, start_response)
        with self.lock:
            # The body is produced inside the lock, so the whole request is one step.
            return list(self.app(environ, start_response))


class PresignedS3:
    """Checks the signature of pre-signed S3 requests (SigV4 in the query string)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        query = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        params = dict(query)
        secret = LOCAL_SECRETS.get(params.get("X-Amz-Credential", "").split("/")[0])
        if "X-Amz-Signature" not in params or secret is None:
            return self.app(environ, start_response)
        refusal = refused(environ, query, params, secret)
        if refusal is None:
            return self.app(environ, start_response)
        code, message = refusal
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
        ).encode()
        start_response(
            "403 Forbidden",
            [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
        )
        return [body]


def header(environ, name):
    """A request header's value as WSGI holds it, or None."""
    key = name.upper().replace("-", "_")
    if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        value = environ.get(key)
    else:
        value = environ.get("HTTP_" + key)
    return None if value in (None, "") and key != "HTTP_HOST" else value


def refused(environ, query, params, secret):
    """Why S3 would refuse this pre-signed request: (code, message), or None."""
    try:
        signed_at = datetime.datetime.strptime(params["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
        signed_at = signed_at.replace(tzinfo=datetime.timezone.utc)
        expires = int(params["X-Amz-Expires"])
        credential = params["X-Amz-Credential"].split("/")
        scope = "/".join(credential[1:])
        names = params["X-Amz-SignedHeaders"].split(";")
    except (KeyError, ValueError, IndexError):
        return ("AuthorizationQueryParametersError", "malformed pre-signed query")
    now = datetime.datetime.now(datetime.timezone.utc)
    if now > signed_at + datetime.timedelta(seconds=expires):
        return ("AccessDenied", "Request has expired")
    path = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ["PATH_INFO"]
    path = path.split("?", 1)[0]
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(query)
        if k != "X-Amz-Signature"
    )
    headers = []
    for name in names:
        value = environ.get("HTTP_HOST") if name == "host" else header(environ, name)
        if value is None:
            return ("SignatureDoesNotMatch", f"the signed header {name} was not sent")
        headers.append(f"{name}:{' '.join(value.split())}\n")
    canonical = "\n".join(
        [
            environ["REQUEST_METHOD"],
            path,
            canonical_query,
            "".join(headers),
            params["X-Amz-SignedHeaders"],
            params.get("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"),
        ]
    )
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            params["X-Amz-Date"],
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = ("AWS4" + secret).encode()
    for part in credential[1:]:
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, params["X-Amz-Signature"]):
        return (
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        )
    return None


def map_step_functions_parameters():
    import botocore.session
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_sfn as sfn,
    )

    model = botocore.session.get_session().get_service_model("stepfunctions")
    normalise = sfn.StateTaskServiceSfn._normalise_parameters

    def mapped(self, parameters, boto_service_name=None, service_action_name=None):
        normalise(self, parameters, boto_service_name, service_action_name)
        action = self.resource.api_action
        members = model.operation_model(action[:1].upper() + action[1:]).input_shape.members
        by_name = {name.lower(): name for name in members}
        for key in list(parameters):
            name = by_name.get(key.lower())
            if name is not None and name != key:
                parameters[name] = parameters.pop(key)

    sfn.StateTaskServiceSfn._normalise_parameters = mapped


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    map_step_functions_parameters()
    server = make_server(
        host,
        port,
        PresignedS3(SerialDynamoDB(DomainDispatcherApplication(create_backend_app))),
        threaded=True,
        request_handler=MotoRequestHandler,
    )
    # moto's Step Functions call its own Lambda at MOTO_PORT: the port bound, not 0.
    os.environ["MOTO_PORT"] = str(server.port)
    print(f"moto listening on http://{host}:{server.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
