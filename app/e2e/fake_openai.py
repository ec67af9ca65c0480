"""A fake OpenAI Chat Completions server on loopback whose answers wait for the test: each
completion is held until the test releases one (or 30 s pass), so a turn stays in flight for
exactly as long as a test needs it to. It speaks the real wire format (`GET /v1/models` for the
health check, `POST /v1/chat/completions`) and answers "Answer to: <the last question>".

Made with `hold=False` it answers at once, and calls tools the way a model does: asked to
"Greet <name>" while a tool named `<integration>_greet` is offered, it calls that tool with the
name; asked to "Note <text>" while `<integration>_create_note` is offered, it writes that note; asked to "Remember <note>" while `memory_save` is offered, it saves the note; given the
tool's result, it answers "The tool said: <result>". The system prompt of each request is kept
in `systems`.

Made with `pace=<seconds>` (and `hold=False`), a request that asks for a stream gets its answer
("Answer to: <question>" and twenty words more) as server-sent events, one word every `pace`
seconds, and the instant of each first word is kept in `first_words` (`time.time()`); with
`stream=False` it answers such a request whole, after as long, as a server that does not
stream (the app's figure before drafts)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def tool_step(request: dict, last_question: str):
    """The reply of a model that calls a greet tool, or None to answer plainly."""
    messages = request["messages"]
    if messages and messages[-1]["role"] == "tool":
        return {"role": "assistant", "content": f"The tool said: {messages[-1]['content']}"}
    offered = [t["function"]["name"] for t in request.get("tools", [])]
    greet = next((name for name in offered if name.endswith("_greet")), None)
    note = next((name for name in offered if name.endswith("_create_note")), None)
    words = last_question.split()
    if note and len(words) >= 2 and words[0].lower() == "note":
        call = {"id": "call_n", "type": "function",
                "function": {"name": note, "arguments": json.dumps({"text": last_question.split(" ", 1)[1]})}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if "memory_save" in offered and len(words) >= 2 and words[0].lower() == "remember":
        note = last_question.split(" ", 1)[1]
        call = {"id": "call_m", "type": "function",
                "function": {"name": "memory_save", "arguments": json.dumps({"text": note})}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if greet and len(words) >= 2 and words[0].lower() == "greet":
        call = {"id": "call_1", "type": "function",
                "function": {"name": greet, "arguments": json.dumps({"name": words[1]})}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return None


class FakeOpenAi:
    def __init__(self, hold: bool = True, pace: float | None = None, stream: bool = True):
        self.first_words = []
        self.systems = []
        self.gate = threading.Semaphore(0)
        # Off: the health check (GET /v1/models) answers 503, as a provider that is down.
        self.healthy = True
        # On: every completion answers 500 at once, as a provider failing mid-turn.
        self.failing = False
        self.waiting = threading.Semaphore(0)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send_json(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_paced(self, model, words, streaming):
                """The answer `words`, one every `pace` seconds: as events, or whole at the end."""
                if not streaming:
                    # The model's first word is ready now; the server sends it with the rest.
                    fake.first_words.append(time.time())
                    time.sleep(pace * len(words))
                    return self.send_json(200, {
                        "id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": " ".join(words)}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": len(words), "total_tokens": 30},
                    })
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for i, word in enumerate(words):
                    if i > 0:
                        time.sleep(pace)
                    piece = word if i == 0 else " " + word
                    chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if i == 0:
                        fake.first_words.append(time.time())
                end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                usage = {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": len(words), "total_tokens": 30}}
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self):
                if not fake.healthy:
                    self.send_json(503, {"error": {"message": "down", "type": "server_error"}})
                    return
                self.send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.systems.append(next((m["content"] for m in request["messages"] if m["role"] == "system"), ""))
                questions = [m for m in request["messages"] if m["role"] == "user"]
                last = questions[-1]["content"] if questions else ""
                if isinstance(last, list):
                    last = " ".join(part.get("text", "") for part in last)
                if fake.failing:
                    self.send_json(500, {"error": {"message": "overloaded", "type": "server_error"}})
                    return
                fake.waiting.release()
                if hold:
                    fake.gate.acquire(timeout=30)
                    message = None
                else:
                    message = tool_step(request, last)
                message = message or {"role": "assistant", "content": f"Answer to: {last}"}
                if pace is not None and not message.get("tool_calls"):
                    words = f"Answer to: {last} " + " ".join(f"word{i}" for i in range(1, 21))
                    return self.send_paced(request["model"], words.split(" "), request.get("stream") and stream)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                self.send_json(200, {
                    "id": "chatcmpl-fake", "object": "chat.completion", "model": request["model"],
                    "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                })

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def asked(self, timeout=20):
        """Waits until a completion request arrives (and is being held)."""
        assert self.waiting.acquire(timeout=timeout), "the agent was not asked"

    def release(self):
        """Lets one held completion answer."""
        self.gate.release()

    def env(self) -> dict:
        return {
            "KNOWLEDGE_AGENT": "openai",
            "KNOWLEDGE_MODEL": "fake",
            "KNOWLEDGE_PRICES": json.dumps({"*": {"inputUsdPerMTok": 0, "outputUsdPerMTok": 0}}),
            "OPENAI_BASE_URL": self.base,
            "OPENAI_API_KEY": "fake-key",
        }

    def stop(self):
        for _ in range(8):
            self.gate.release()
        self.server.shutdown()
