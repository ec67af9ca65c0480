"""The Python half of scripts/invoke_events.sh: the deployment on moto, each function's
environment as template.yaml sets it, the sample events made ready to send, and the check of
each function's answer.

Usage (the shell script calls these; each exits non-zero with a message naming what is wrong):
  lambda_events.py deploy ENDPOINT
      Creates on moto at ENDPOINT the two key secrets and the agent state machine, and prints
      `name value` lines: signing_key, signing_key_arn, sealing_key_arn, state_machine_arn.
  lambda_events.py env FUNCTION NAME=VALUE...
      Prints the environment Lambda gives FUNCTION under template.yaml, one NAME=VALUE a line:
      the Globals' and the function's own Variables, and what Lambda sets from MemorySize and
      LoggingConfig. Each NAME=VALUE argument stands for a parameter or a resource that the
      template refers to (`!Ref Table` takes Table=...); a parameter not given takes its
      Default, the pseudo parameters a stack named `knowledge` would have, and any other
      reference fails; `!Sub` of such references is read too.
  lambda_events.py event NAME OUT OLD=NEW...
      Writes events/NAME.json to OUT with every OLD replaced by NEW (each OLD must be there).
  lambda_events.py metrics LOG
      Checks that the function's log LOG holds the embedded metrics of a turn answered, in the
      namespace the template gives a stack (`Knowledge/<stack>`), as CloudWatch would read them.
  lambda_events.py traces RECEIVER TRACEPARENT LOG
      Checks that the OTLP receiver at RECEIVER (scripts/otlp_receiver.py) holds the turn's
      trace as the functions exported it before their invocations returned: the request that
      started it (TRACEPARENT names its span), that request's DynamoDB and Step Functions
      calls, the LoadTurn and CallAgent Tasks joined to it, and the model's call within
      CallAgent with the GenAI attributes; and that a JSON line of the function's log LOG
      names the trace and a span of it.
  lambda_events.py check CASE RESPONSE [NAME=VALUE...]
      Checks the function's answer in the file RESPONSE as CASE expects (see CHECKS); prints
      what later steps need, if anything, and a summary on standard error.
"""

import json
import re
import secrets
import sys
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REGION = "us-east-1"
ACCOUNT = "123456789012"
ORG = "org_sample"
USER = "usr_sample"
HANDLERS = ["LoadTurn", "CallAgent", "RunTool", "FinishTurn", "Terminate"]


class Failed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failed(message)


# --- moto ---------------------------------------------------------------------------------


def client(service, endpoint):
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def deploy(endpoint):
    secretsmanager = client("secretsmanager", endpoint)
    suffix = secrets.token_hex(4)
    signing_key = secrets.token_hex(32)
    signing = secretsmanager.create_secret(
        Name=f"knowledge/signing-key-{suffix}", SecretString=signing_key
    )
    sealing = secretsmanager.create_secret(
        Name=f"knowledge/sealing-key-{suffix}", SecretString=secrets.token_hex(32)
    )
    # The Tasks' placeholders substituted as the template does. Nothing enables executing on
    # this moto, so an execution that create-session starts is only recorded; the script
    # invokes the Tasks itself, in the order the state machine would.
    definition = (ROOT / "infra/statemachine/agent.asl.json").read_text()
    for handler in HANDLERS:
        arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{handler}"
        definition = definition.replace("${%sFunctionArn}" % handler, arn)
    expect("${" not in definition, "infra/statemachine/agent.asl.json has a placeholder left")
    machine = client("stepfunctions", endpoint).create_state_machine(
        name=f"agent-{suffix}",
        definition=definition,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/agent",
    )
    print("signing_key", signing_key)
    print("signing_key_arn", signing["ARN"])
    print("sealing_key_arn", sealing["ARN"])
    print("state_machine_arn", machine["stateMachineArn"])


def execution_input(endpoint, state_machine_arn, run_id):
    """The input of the execution named `run_id`, the only one of the state machine."""
    sfn = client("stepfunctions", endpoint)
    executions = sfn.list_executions(stateMachineArn=state_machine_arn)["executions"]
    names = [e["name"] for e in executions]
    expect(names == [run_id], f"the state machine's executions are {names}, not [{run_id}]")
    described = sfn.describe_execution(executionArn=executions[0]["executionArn"])
    return json.loads(described["input"])


# --- the template -------------------------------------------------------------------------


def template():
    class Loader(yaml.SafeLoader):
        pass

    def tag(loader, suffix, node):
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {suffix: value}

    # CloudFormation's short forms (!Ref X) read as their long forms ({"Ref": X}).
    Loader.add_multi_constructor("!", tag)
    return yaml.load((ROOT / "template.yaml").read_text(), Loader=Loader)


NO_VALUE = object()
# The pseudo parameters, as a stack of this name in this region would have them.
PSEUDO = {"AWS::StackName": "knowledge", "AWS::Region": "us-east-1"}


def resolve(value, given, doc, where):
    """`value` as CloudFormation makes it, for the references in `given` and the parameters'
    defaults; NO_VALUE for AWS::NoValue."""
    if isinstance(value, (str, int, float)):
        return str(value)
    expect(isinstance(value, dict) and len(value) == 1, f"{where}: cannot read {value!r}")
    ((function, argument),) = value.items()
    if function == "Ref":
        if argument == "AWS::NoValue":
            return NO_VALUE
        if argument in given:
            return given[argument]
        if argument in PSEUDO:
            return PSEUDO[argument]
        parameter = doc.get("Parameters", {}).get(argument)
        expect(
            parameter is not None and "Default" in parameter,
            f"{where}: !Ref {argument} has no value here; give it as {argument}=...",
        )
        return str(parameter["Default"])
    if function == "If":
        condition, then, otherwise = argument
        chosen = then if holds(doc["Conditions"][condition], given, doc, where) else otherwise
        return resolve(chosen, given, doc, where)
    if function == "Sub" and isinstance(argument, str):
        # ${Name} is !Ref Name; ${Resource.Attribute} (!GetAtt) is not understood here.
        return re.sub(
            r"\$\{([A-Za-z0-9:]+)\}",
            lambda m: resolve({"Ref": m.group(1)}, given, doc, where),
            argument,
        )
    raise Failed(f"{where}: !{function} is not understood here")


def holds(condition, given, doc, where):
    ((function, argument),) = condition.items()
    if function == "Not":
        return not holds(argument[0], given, doc, where)
    if function == "Equals":
        a, b = (resolve(x, given, doc, where) for x in argument)
        return a == b
    raise Failed(f"{where}: a condition uses !{function}, not understood here")


def environment(function, given):
    doc = template()
    resource = "".join(w.capitalize() for w in function.split("-")) + "Function"
    properties = doc["Resources"].get(resource, {}).get("Properties")
    expect(properties is not None, f"template.yaml has no {resource}")
    defaults = doc["Globals"]["Function"]
    variables = dict(defaults.get("Environment", {}).get("Variables", {}))
    variables.update(properties.get("Environment", {}).get("Variables", {}))
    # What Lambda itself sets from the function's settings.
    variables["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = properties.get(
        "MemorySize", defaults.get("MemorySize", 128)
    )
    logging = {**defaults.get("LoggingConfig", {}), **properties.get("LoggingConfig", {})}
    if "LogFormat" in logging:
        variables["AWS_LAMBDA_LOG_FORMAT"] = logging["LogFormat"]
    if "ApplicationLogLevel" in logging:
        variables["AWS_LAMBDA_LOG_LEVEL"] = logging["ApplicationLogLevel"]
    env = {}
    for name, value in variables.items():
        resolved = resolve(value, given, doc, f"{resource} {name}")
        if resolved is not NO_VALUE:
            expect("\n" not in resolved, f"{resource} {name}: a value with a line break")
            env[name] = resolved
    return env


# --- events and answers -------------------------------------------------------------------


def prepare_event(name, out, replacements):
    text = (ROOT / "events" / f"{name}.json").read_text()
    for old, new in replacements:
        expect(old in text, f"events/{name}.json does not contain {old}")
        text = text.replace(old, new)
    json.loads(text)
    Path(out).write_text(text)


def sample(name):
    return json.loads((ROOT / "events" / f"{name}.json").read_text())


def http_answer(response, status):
    """The body, parsed as JSON, of the API Gateway (HTTP API, payload 2.0) response
    `response`, which must have `status`."""
    expect(
        isinstance(response, dict) and "statusCode" in response,
        f"not an API Gateway response: {response}",
    )
    body = response.get("body") or ""
    expect(
        response["statusCode"] == status,
        f"statusCode {response['statusCode']}, expected {status}; body: {body[:500]}",
    )
    expect(not response.get("isBase64Encoded"), "a base64-encoded body where JSON was expected")
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    content_type = headers.get("content-type", "")
    expect(content_type.startswith("application/json"), f"content-type {content_type!r}")
    return json.loads(body)


def check_openapi(response, _):
    # The function serves the document built into its binary: the committed one.
    body = http_answer(response, 200)
    committed = json.loads((ROOT / "docs/openapi.json").read_text())
    expect(body == committed, "the served document differs from docs/openapi.json")
    return f"docs/openapi.json, {len(body['paths'])} paths"


def check_me(response, _):
    body = http_answer(response, 200)
    expect(body.get("user", {}).get("id") == USER, f"user is not {USER}: {body}")
    expect(body.get("org", {}).get("id") == ORG, f"org is not {ORG}: {body}")
    orgs = [o.get("id") for o in body.get("orgs", [])]
    expect(orgs == [ORG], f"orgs are {orgs}, not [{ORG}]")
    return f"{USER} signed in to {ORG}"


def check_create_session(response, values):
    body = http_answer(response, 200)
    session, run = body.get("id", ""), body.get("runId", "")
    expect(session.startswith("ses_") and run.startswith("run_"), f"no session and run: {body}")
    started = execution_input(values["endpoint"], values["state_machine_arn"], run)
    # What the state machine hands LoadTurn (its Parameters pick these fields of the
    # execution's input) is what events/load-turn.json holds, aimed at this session and run;
    # its `execution` comes from the context object, not the input.
    # Its `trace` is the request's: the one thing in it not known beforehand.
    trace = started.get("trace") or ""
    expect(re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", trace), f"no sampled trace: {started}")
    expected = {"session": {"user": USER, "org": ORG, "session": session}, "runId": run}
    expected["trace"] = trace
    handed = {key: started.get(key) for key in sample("load-turn") if key != "execution"}
    expect(handed == expected, f"the execution's input is {started}, expected {expected} in it")
    print(session, run, trace)
    return f"session {session}, its execution {run} started, in trace {trace[3:35]}"


def step_answer(response, next_step, following):
    """A Task's output that sends the run to `next_step`; the `turn` it hands on is the one in
    the sample event of the `following` Task, if given."""
    expect(isinstance(response, dict), f"not a step's output: {response}")
    expect(response.get("next") == next_step, f"next is not {next_step!r}: {response}")
    expect(not response.get("cancelled"), f"the run is cancelled: {response}")
    if following is not None:
        expected = sample(following)["turn"]
        turn = response.get("turn")
        expect(turn == expected, f"turn {turn}, but events/{following}.json has {expected}")
    return f"next: {next_step}"


def check_transcript(response, _):
    body = http_answer(response, 200)
    kinds = [e.get("type") for e in body.get("events", [])]
    expect(kinds == ["agent_message", "status_idle"], f"events after the question: {kinds}")
    # The built-in agent, with nothing connected to search, says so.
    answer = body["events"][0].get("payload", {}).get("text", "")
    expect("No integrations are connected" in answer, f"not the answer with nothing connected: {answer!r}")
    over = body.get("hasMore") is False and body.get("workflowRunId") is None
    expect(over, f"the run is not over: {body}")
    return "the agent's answer to the question, then the session idle"


def check_titles(response, _):
    body = http_answer(response, 200)
    wanted = json.loads(sample("titles")["body"])["title"]
    expect(body == {"ok": True, "title": wanted}, f"not renamed to {wanted!r}: {body}")
    return f"renamed to {wanted!r}"


def check_metrics(log):
    """The function's log holds the embedded metrics of the turn it answered: a line that
    CloudWatch reads as `turns` with `outcome` answered, in the stack's namespace."""
    namespace = "Knowledge/" + PSEUDO["AWS::StackName"]
    for line in Path(log).read_text().splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        directives = doc.get("_aws", {}).get("CloudWatchMetrics", []) if isinstance(doc, dict) else []
        for d in directives:
            names = [m["Name"] for m in d.get("Metrics", [])]
            if (
                d.get("Namespace") == namespace
                and "turns" in names
                and ["outcome"] in d.get("Dimensions", [])
                and doc.get("outcome") == "answered"
                and doc.get("turns", 0) >= 1
            ):
                return "the turn answered, in its embedded metrics"
    raise Failed(f"{log}: no embedded metric of a turn answered in {namespace}")


def check_traces(receiver, traceparent, log):
    """The turn's trace, as far as the functions invoked so far exported it, and a line of
    LOG in it (see the usage)."""
    with urllib.request.urlopen(f"{receiver}/spans", timeout=10) as answer:
        spans = json.load(answer)
    _, trace, request_id, _ = traceparent.split("-")
    mine = [s for s in spans if s["traceId"] == trace]
    by_id = {s["spanId"]: s for s in mine}
    names = sorted(s["name"] for s in mine)
    request = by_id.get(request_id)
    expect(request is not None, f"no span {request_id} of trace {trace}: {names}")
    expect(request["name"] == "POST /api/managed-agents/session", f"the request is {request}")
    expect(request["parentSpanId"] == "", f"the request is not the root: {request}")
    calls = [s for s in mine if s["parentSpanId"] == request_id and "rpc.service" in s["attributes"]]
    services = sorted({s["attributes"]["rpc.service"] for s in calls})
    expect(services == ["DynamoDB", "SFN"], f"the request's AWS calls are {services}: {names}")
    for step in ["LoadTurn", "CallAgent"]:
        found = [s for s in mine if s["name"] == step]
        expect(found and all(s["parentSpanId"] == request_id for s in found), f"{step}: {names}")
    chats = [s for s in mine if s["attributes"].get("gen_ai.operation.name") == "chat"]
    expect(len(chats) == 1, f"not one model call: {names}")
    chat = chats[0]
    expect(by_id.get(chat["parentSpanId"], {}).get("name") == "CallAgent", f"{chat}")
    expect(chat["attributes"].get("gen_ai.request.model") == "builtin", f"{chat}")
    expect(chat["attributes"].get("gen_ai.provider.name") == "builtin", f"{chat}")
    expect(chat["resource"].get("faas.name") == "call-agent", f"not from call-agent: {chat}")
    usage = [chat["attributes"].get(f"gen_ai.usage.{d}_tokens") for d in ("input", "output")]
    expect(all(isinstance(n, int) for n in usage), f"no token counts: {chat}")
    logged = []
    for line in Path(log).read_text().splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("span"), dict):
            logged.append(doc["span"])
    named = [s for s in logged if s.get("trace_id") == trace and s.get("span_id") in by_id]
    expect(named, f"no log line of {log} names a span of trace {trace}: {logged[:5]}")
    return f"{len(mine)} spans: the request, {len(calls)} AWS calls, LoadTurn, CallAgent, its model call; {len(named)} log lines name them"


CHECKS = {
    "openapi": check_openapi,
    "me": check_me,
    "create-session": check_create_session,
    "load-turn": lambda r, _: step_answer(r, "agent", "call-agent"),
    "call-agent": lambda r, _: step_answer(r, "finish", "finish-turn"),
    "finish-turn": lambda r, _: step_answer(r, "load", None),
    "load-turn-done": lambda r, _: step_answer(r, "done", None),
    "transcript": check_transcript,
    "titles": check_titles,
}


def pairs(arguments):
    out = []
    for a in arguments:
        expect("=" in a, f"{a}: expected NAME=VALUE")
        out.append(tuple(a.split("=", 1)))
    return out


def main(argv):
    expect(argv, "no command; see the usage at the top of this file")
    command, *rest = argv
    if command == "deploy":
        deploy(*rest)
    elif command == "env":
        function, *given = rest
        for name, value in environment(function, dict(pairs(given))).items():
            print(f"{name}={value}")
    elif command == "event":
        name, out, *replacements = rest
        prepare_event(name, out, pairs(replacements))
    elif command == "metrics":
        (log,) = rest
        print(f"metrics: {check_metrics(log)}", file=sys.stderr)
    elif command == "traces":
        receiver, traceparent, log = rest
        print(f"traces: {check_traces(receiver, traceparent, log)}", file=sys.stderr)
    elif command == "check":
        case, path, *given = rest
        expect(case in CHECKS, f"no check named {case}")
        text = Path(path).read_text()
        try:
            response = json.loads(text)
        except json.JSONDecodeError:
            raise Failed(f"not JSON: {text[:500]}")
        summary = CHECKS[case](response, dict(pairs(given)))
        print(f"{case}: {summary}", file=sys.stderr)
    else:
        raise Failed(f"unknown command {command}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
