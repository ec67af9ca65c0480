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

Once its socket accepts connections it prints "moto listening on http://HOST:PORT", the line
scripts/common.sh's start_moto waits for; PORT 0 takes a port the system picks, which that line
names.

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
from werkzeug.serving import make_server


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
        SerialDynamoDB(DomainDispatcherApplication(create_backend_app)),
        threaded=True,
        request_handler=MotoRequestHandler,
    )
    # moto's Step Functions call its own Lambda at MOTO_PORT: the port bound, not 0.
    os.environ["MOTO_PORT"] = str(server.port)
    print(f"moto listening on http://{host}:{server.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
