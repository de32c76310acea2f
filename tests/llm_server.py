"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages and OpenAI Chat
Completions formats, answering from a script: the LLM tests point the real SDKs at it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLMServer:
    """`script` is a list of replies used in order (the last one repeats), each one of
    ("text", str), ("status", code, body, headers), ("sleep", seconds, str), ("trickle",
    seconds) (headers at once, then one byte every `seconds`, never a whole answer),
    ("content", value) (a reply whose content is any JSON value, not only text), ("big", bytes)
    (a text reply of that many bytes, sent in pieces), or a callable taking the request's
    messages and returning a str."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self.cut_off = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return None

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with server._lock:
                    server.requests.append({"path": self.path,
                                            "headers": {k.lower(): v for k, v in self.headers.items()},
                                            "body": body})
                    step = server.script[min(len(server.requests) - 1, len(server.script) - 1)]
                if callable(step):
                    step = ("text", step(body["messages"]))
                if step[0] == "sleep":
                    time.sleep(step[1])
                    step = ("text", step[2])
                if step[0] == "trickle":
                    self._trickle(step[1])
                    return
                if step[0] == "status":
                    _, code, text, headers = (list(step) + [None, None])[:4]
                    payload = json.dumps({"error": {"type": "error", "message": text or "err"}})
                    self._send(code, payload, headers or {})
                    return
                if step[0] == "content":
                    self._send(200, json.dumps(self._reply(None, body, step[1])), {})
                    return
                if step[0] == "big":
                    self._big(step[1], body)
                    return
                self._send(200, json.dumps(self._reply(step[1], body)), {})

            def _big(self, size, body):
                reply = json.dumps(self._reply("@" * size, body)).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(reply)))
                    self.end_headers()
                    for i in range(0, len(reply), 1 << 16):
                        self.wfile.write(reply[i:i + (1 << 16)])
                except (BrokenPipeError, ConnectionResetError):
                    server.cut_off = True  # the client stopped reading, as it should

            def _reply(self, text, body, content=None):
                if self.path.endswith("/messages"):
                    return {"id": "msg_1", "type": "message", "role": "assistant",
                            "model": body.get("model", "m"),
                            "content": [{"type": "text", "text": text}] if content is None
                            else content,
                            "stop_reason": "end_turn", "stop_sequence": None,
                            "usage": {"input_tokens": 1, "output_tokens": 1}}
                return {"id": "c1", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "m"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant",
                                                 "content": text if content is None
                                                 else content}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                  "total_tokens": 2}}

            def _trickle(self, seconds):
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", "1000000")
                    self.end_headers()
                    self.wfile.flush()
                    while not server.stopping.is_set():
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        server.stopping.wait(seconds)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def _send(self, code, payload, headers):
                data = payload.encode()
                try:
                    self.send_response(code)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
