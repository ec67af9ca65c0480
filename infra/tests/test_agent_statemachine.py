"""The agent's state machine, infra/statemachine/agent.asl.json, as Step Functions runs it.

The definition is loaded into moto's Step Functions stand-in (a moto server whose address
is in MOTO_ENDPOINT, e.g. http://127.0.0.1:5000; scripts/test starts one) with its
placeholders substituted by five moto Lambda functions, and executions are run to
completion. Moto runs no Lambda code here: each invocation takes the next result of one
queue shared by all functions (a JSON string is the step's output; any other item makes
that invocation fail with the error "Exception"), so a test queues, in order, what every
Task of the path it walks returns, and checks the path, the Lambda inputs, and that the
execution consumed exactly what it queued.
"""

import io
import json
import os
import re
import time
import uuid
import zipfile
from datetime import datetime
from pathlib import Path

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

DEFINITION = Path(__file__).resolve().parents[1] / "statemachine" / "agent.asl.json"

ACCOUNT = "123456789012"
REGION = "us-east-1"

# Each Task's handler, as named by its placeholder ${<Handler>FunctionArn}, and the moto
# Lambda function standing in for it.
FUNCTIONS = {
    "LoadTurn": "load-turn",
    "CallAgent": "call-agent",
    "RunTool": "run-tool",
    "FinishTurn": "finish-turn",
    "Terminate": "terminate",
}
PLACEHOLDER = re.compile(r"^\$\{([A-Za-z]+)FunctionArn\}$")
# The one Task that is not a function: the handover starts the next execution of this machine,
# request-response (Express supports no .sync integration).
START_EXECUTION = "arn:aws:states:::states:startExecution"

SESSION = {"user": "usr_a", "org": "org_a", "session": "ses_0123456789abcdef0123456789abcdef"}
RUN_ID = "run_0123456789abcdef0123456789abcdef"
# The run's trace travels in the input; every Task and the next execution must get it.
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
INPUT = {"session": SESSION, "runId": RUN_ID, "trace": TRACE}

# A queued item that is not a string makes moto's invocation fail, with this error name.
FAIL = {"fail": "this invocation"}
MOTO_LAMBDA_ERROR = "Exception"

EXECUTION_TIMEOUT_SECONDS = 60


def turn(step):
    return {"userSeq": 1, "step": step}


class StartedAt:
    """Equal to an RFC 3339 `$$.Execution.StartTime` within the millisecond of `start` (the
    API reports the start to the millisecond, the context object to the microsecond)."""

    def __init__(self, start):
        self.start = start

    def __eq__(self, text):
        given = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return abs((given - self.start).total_seconds()) < 0.001

    def __repr__(self):
        return f"StartedAt({self.start.isoformat()})"


def context_of(execution):
    """What every Task passes its step about the execution it runs in: `$$.Execution`'s id,
    name and start, which the steps' claim on the run compares."""
    return {
        "id": execution["executionArn"],
        "name": execution["name"],
        "startedAt": StartedAt(execution["startDate"]),
    }


def load_definition():
    return json.loads(DEFINITION.read_text())


def tasks(definition):
    return {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}


class Moto:
    """The moto server's clients, the five functions, and a way to run the definition."""

    def __init__(self, endpoint):
        self.endpoint = endpoint.rstrip("/")
        config = Config(retries={"total_max_attempts": 1})
        kwargs = dict(
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=config,
        )
        self.iam = boto3.client("iam", **kwargs)
        self.awslambda = boto3.client("lambda", **kwargs)
        self.sfn = boto3.client("stepfunctions", **kwargs)
        self.arns = {}
        self.role_arn = None

    def api(self, path, body=None):
        response = requests.post(f"{self.endpoint}/moto-api/{path}", json=body, timeout=10)
        response.raise_for_status()
        return response

    def set_up(self):
        """Switches Lambda to its Docker-free stand-in and lets Step Functions really execute,
        before creating anything (resources created before the switch are not seen after it),
        then creates the role and the functions unless a previous run on this server did."""
        self.api("config", {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}})
        role_name = "agent-statemachine-test"
        try:
            role = self.iam.get_role(RoleName=role_name)
        except self.iam.exceptions.NoSuchEntityException:
            role = self.iam.create_role(
                RoleName=role_name,
                AssumeRolePolicyDocument=json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    }
                ),
            )
        self.role_arn = role["Role"]["Arn"]
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
        for handler, function in FUNCTIONS.items():
            try:
                configuration = self.awslambda.get_function(FunctionName=function)["Configuration"]
            except self.awslambda.exceptions.ResourceNotFoundException:
                configuration = self.awslambda.create_function(
                    FunctionName=function,
                    Runtime="python3.12",
                    Role=self.role_arn,
                    Handler="handler.handler",
                    Code={"ZipFile": code.getvalue()},
                )
            self.arns[handler] = configuration["FunctionArn"]
        self.drain()

    def queue(self, results):
        items = [item if item is FAIL else json.dumps(item) for item in results]
        self.api(
            "static/lambda-simple/response",
            {"results": items, "region": REGION, "account_id": ACCOUNT},
        )

    def take_queued(self):
        """Invokes a function once and returns the queued item it took, None when the queue
        was empty (the invocation then echoes its input)."""
        probe = json.dumps({"probe": uuid.uuid4().hex})
        try:
            response = self.awslambda.invoke(FunctionName=FUNCTIONS["LoadTurn"], Payload=probe)
        except ClientError as error:
            return f"a failing item ({error})"
        payload = response["Payload"].read().decode()
        return None if payload == probe else payload

    def drain(self):
        """Empties the queue; returns what it held."""
        taken = []
        for _ in range(1000):
            item = self.take_queued()
            if item is None:
                return taken
            taken.append(item)
        raise AssertionError("moto's Lambda result queue does not drain")

    def definition_text(self):
        def substitute(match):
            return self.arns[match.group(1)]

        text = re.sub(r"\$\{([A-Za-z]+)FunctionArn\}", substitute, DEFINITION.read_text())
        assert "${" not in text, "a placeholder is left unsubstituted"
        return text

    def run(self, test_name, results):
        """Runs one execution on `results`; returns its status, the states it entered in
        order, and every Lambda it scheduled as (function name, input) in order."""
        execution = self.start(test_name, results)
        status, entered, scheduled = self.follow(execution)
        self.settled(results, scheduled)
        return status, entered, scheduled

    def start(self, test_name, results):
        """Creates the machine (an Express one, which moto runs as Standard) with `results`
        queued, and starts its first execution, named after the run; returns its ARN."""
        left = self.drain()
        assert not left, f"moto's Lambda result queue held {left} before the execution"
        self.machine = self.sfn.create_state_machine(
            name=f"agent-{test_name}-{uuid.uuid4().hex[:8]}"[:80],
            definition=self.definition_text(),
            roleArn=self.role_arn,
            type="EXPRESS",
        )["stateMachineArn"]
        self.queue(results)
        return self.sfn.start_execution(
            stateMachineArn=self.machine, name=RUN_ID, input=json.dumps(INPUT)
        )["executionArn"]

    def settled(self, results, scheduled):
        """Checks that the executions consumed exactly the queued `results`."""
        left = self.drain()
        assert not left, f"the execution left {left} queued, unconsumed"
        assert len(scheduled) == len(results), f"queued {len(results)} results, {len(scheduled)} invocations"

    def follow(self, execution):
        """Waits for `execution` to end; returns its status, the states it entered in order,
        and every Lambda it scheduled as (function name, input) in order."""
        deadline = time.monotonic() + EXECUTION_TIMEOUT_SECONDS
        while True:
            described = self.sfn.describe_execution(executionArn=execution)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                self.sfn.stop_execution(executionArn=execution)
                self.drain()
                raise AssertionError(f"the execution did not end within {EXECUTION_TIMEOUT_SECONDS} s")
            time.sleep(0.1)

        events = []
        kwargs = {"executionArn": execution, "maxResults": 1000}
        while True:
            page = self.sfn.get_execution_history(**kwargs)
            events.extend(page["events"])
            if not page.get("nextToken"):
                break
            kwargs["nextToken"] = page["nextToken"]
        events.sort(key=lambda event: event["id"])

        functions = {arn: FUNCTIONS[handler] for handler, arn in self.arns.items()}
        entered = [
            event["stateEnteredEventDetails"]["name"] for event in events if event["type"].endswith("StateEntered")
        ]
        scheduled = [
            (
                functions[event["lambdaFunctionScheduledEventDetails"]["resource"]],
                json.loads(event["lambdaFunctionScheduledEventDetails"]["input"]),
            )
            for event in events
            if event["type"] == "LambdaFunctionScheduled"
        ]
        self.last_execution = described
        return described["status"], entered, scheduled


@pytest.fixture(scope="session")
def moto():
    endpoint = os.environ.get("MOTO_ENDPOINT")
    if not endpoint:
        pytest.fail("MOTO_ENDPOINT is not set: start moto_server and point it there, or run scripts/test")
    moto = Moto(endpoint)
    moto.set_up()
    return moto


def test_every_task_resource_is_a_substitution_placeholder_but_the_handover():
    handlers = set()
    for name, state in tasks(load_definition()).items():
        if name == "Handover":
            assert state["Resource"] == START_EXECUTION
            continue
        match = PLACEHOLDER.match(state["Resource"])
        assert match, f"{name}'s Resource {state['Resource']!r} is not a ${{...FunctionArn}} placeholder"
        handlers.add(match.group(1))
    assert handlers == set(FUNCTIONS)


def test_a_turn_with_a_tool_call_runs_to_success(moto):
    steps = [
        {"cancelled": False, "next": "agent", "turn": turn(0)},  # LoadTurn
        {"cancelled": False, "next": "tool", "turn": turn(1)},  # CallAgent
        {"cancelled": False, "next": "agent", "turn": turn(2)},  # RunTool
        {"cancelled": False, "next": "finish", "turn": turn(3)},  # CallAgent
        {"cancelled": False, "next": "load"},  # FinishTurn
        {"cancelled": False, "next": "done"},  # LoadTurn
    ]
    status, entered, scheduled = moto.run("tool-call", steps)

    assert status == "SUCCEEDED", moto.last_execution
    assert entered == [
        "LoadTurn", "Route",
        "CallAgent", "Route",
        "RunTool", "Route",
        "CallAgent", "Route",
        "FinishTurn", "Route",
        "LoadTurn", "Route",
        "Done",
    ]
    assert [function for function, _ in scheduled] == [
        "load-turn", "call-agent", "run-tool", "call-agent", "finish-turn", "load-turn",
    ]
    execution = moto.last_execution
    for index, (function, given) in enumerate(scheduled):
        expected = {**INPUT, "execution": context_of(execution)}
        if function != "load-turn":
            expected["turn"] = steps[index - 1]["turn"]
        assert given == expected, f"invocation {index} of {function}"
    assert json.loads(moto.last_execution["output"]) == {**INPUT, "step": steps[-1]}


def test_a_cancelled_step_routes_to_terminate(moto):
    steps = [
        {"cancelled": False, "next": "agent", "turn": turn(0)},  # LoadTurn
        {"cancelled": True, "next": "terminate"},  # CallAgent
        {"cancelled": False, "next": "done"},  # Terminate
    ]
    status, entered, scheduled = moto.run("cancelled", steps)

    assert status == "SUCCEEDED", moto.last_execution
    assert entered == ["LoadTurn", "Route", "CallAgent", "Route", "Terminate", "Done"]
    function, given = scheduled[-1]
    assert function == "terminate"
    assert given == {**INPUT, "execution": context_of(moto.last_execution)}
    assert "failure" not in given


def attempts_on_moto_failure(state):
    """How many times the state invokes its Lambda when every attempt fails the way moto
    fails: once, plus the retries of the first retrier matching moto's error name."""
    matching = {MOTO_LAMBDA_ERROR, "States.ALL", "States.TaskFailed"}
    for retrier in state.get("Retry", []):
        if matching & set(retrier["ErrorEquals"]):
            return 1 + retrier.get("MaxAttempts", 3)
    return 1


def test_a_step_failing_for_good_fails_the_turn_not_the_run(moto):
    attempts = attempts_on_moto_failure(tasks(load_definition())["CallAgent"])
    steps = (
        [{"cancelled": False, "next": "agent", "turn": turn(0)}]  # LoadTurn
        + [FAIL] * attempts  # CallAgent, every attempt
        + [{"cancelled": False, "next": "load"}]  # FailTurn
        + [{"cancelled": False, "next": "done"}]  # LoadTurn
    )
    status, entered, scheduled = moto.run("failing-step", steps)

    assert status == "SUCCEEDED", moto.last_execution
    assert entered == ["LoadTurn", "Route", "CallAgent", "FailTurn", "Route", "LoadTurn", "Route", "Done"]
    assert [function for function, _ in scheduled] == (
        ["load-turn"] + ["call-agent"] * attempts + ["finish-turn", "load-turn"]
    )
    function, given = scheduled[1 + attempts]
    assert function == "finish-turn"
    assert {key: value for key, value in given.items() if key != "failure"} == {
        **INPUT,
        "turn": turn(0),
        "execution": context_of(moto.last_execution),
    }
    assert given["failure"]["Error"] == MOTO_LAMBDA_ERROR


def test_a_step_near_the_time_limit_hands_the_run_to_a_new_execution_of_the_machine(moto):
    successor = f"{RUN_ID}-1"
    steps = [
        {"cancelled": False, "next": "handover", "handover": successor},  # LoadTurn, first execution
        {"cancelled": False, "next": "done"},  # LoadTurn, the successor
    ]
    first = moto.start("handover", steps)
    status, entered, scheduled = moto.follow(first)

    assert status == "SUCCEEDED", moto.last_execution
    assert entered == ["LoadTurn", "Route", "Handover", "Done"]
    started = moto.sfn.list_executions(stateMachineArn=moto.machine)["executions"]
    names = sorted(execution["name"] for execution in started)
    assert names == sorted([RUN_ID, successor])
    (next_arn,) = [e["executionArn"] for e in started if e["name"] == successor]
    assert json.loads(moto.sfn.describe_execution(executionArn=next_arn)["input"]) == INPUT
    next_status, next_entered, next_scheduled = moto.follow(next_arn)
    assert next_status == "SUCCEEDED", moto.last_execution
    assert next_entered == ["LoadTurn", "Route", "Done"]
    assert next_scheduled == [("load-turn", {**INPUT, "execution": context_of(moto.last_execution)})]
    moto.settled(steps, scheduled + next_scheduled)


def test_a_cancel_beats_a_handover_at_the_same_transition(moto):
    steps = [
        {"cancelled": True, "next": "handover", "handover": f"{RUN_ID}-1"},  # LoadTurn
        {"cancelled": False, "next": "done"},  # Terminate
    ]
    status, entered, _ = moto.run("cancel-beats-handover", steps)

    assert status == "SUCCEEDED", moto.last_execution
    assert entered == ["LoadTurn", "Route", "Terminate", "Done"]
    assert [e["name"] for e in moto.sfn.list_executions(stateMachineArn=moto.machine)["executions"]] == [RUN_ID]
