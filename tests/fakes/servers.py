"""Local fake servers on 127.0.0.1 (random port) for tests: an OpenAI-compatible API and Tavily.

They speak the real wire formats, so the real clients (langchain-openai / openai-python and
tavily-python) are exercised end to end over HTTP. Each test scripts the replies.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Uvicorn(uvicorn.Server):
    """A uvicorn server that says when it listens (``ready``), instead of being polled."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.ready.set()


class _Server:
    """Runs a FastAPI app under uvicorn in a background thread until ``stop()``."""

    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self._server = _Uvicorn(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self) -> _Server:
        self._thread.start()
        if not self._server.ready.wait(timeout=20):
            raise RuntimeError("fake server did not start")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@dataclass
class Reply:
    """One scripted reply.

    ``content`` is the assistant text (a JSON string for structured output); ``status`` other than 200 sends
    an OpenAI-style error; ``delay_s`` waits first.
    """

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    prompt_tokens: int = 11
    completion_tokens: int = 7


Script = Callable[[str, dict], Reply]
"""(kind, request body) -> Reply. kind is the json_schema name (e.g. ``RelevanceGrade``) for
structured output, ``text`` for plain chat, ``stream`` for streaming chat."""


@dataclass
class FakeOpenAI:
    """An OpenAI-compatible server.

    Chat completions (json_schema structured output, SSE streaming with a usage chunk) and embeddings (float
    or base64).
    """

    script: Script | None = None
    embedding_dim: int = 16
    echo_key_status: int = 0
    """When set (e.g. 401), every endpoint answers with this status and an error body that
    echoes the caller's key, as a careless or hostile server would."""
    requests: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    _server: _Server | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1"

    def kinds(self) -> list[str]:
        """The kind of every chat request received so far, in order."""
        return [self._kind(r) for r in self.requests if "messages" in r]

    @staticmethod
    def _kind(body: dict) -> str:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return fmt["json_schema"].get("name", "json_schema")
        return "stream" if body.get("stream") else "text"

    def start(self) -> FakeOpenAI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            if self.echo_key_status:
                return _echo_key(request, self.echo_key_status)
            kind = self._kind(body)
            reply = (self.script or default_script)(kind, body)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.status != 200:
                return JSONResponse(
                    {"error": {"message": f"scripted {reply.status}", "type": "server_error", "code": None}},
                    status_code=reply.status,
                )
            if body.get("stream"):
                return StreamingResponse(_sse(body, reply), media_type="text/event-stream")
            return JSONResponse(_completion(body, reply))

        @app.post("/v1/embeddings")
        async def embeddings(request: Request):
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            if self.echo_key_status:
                return _echo_key(request, self.echo_key_status)
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = []
            for i, text in enumerate(texts):
                vec = fake_vector(str(text), self.embedding_dim)
                if body.get("encoding_format") == "base64":
                    emb: Any = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
                else:
                    emb = vec
                data.append({"object": "embedding", "index": i, "embedding": emb})
            return {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake"),
                "usage": {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)},
            }

        self._server = _Server(app).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.stop()


def _echo_key(request: Request, status: int) -> JSONResponse:
    """An OpenAI-style error whose message repeats the Authorization header in full."""
    auth = request.headers.get("authorization", "")
    key = auth.split(" ", 1)[-1]
    return JSONResponse(
        {
            "error": {
                "message": f"Incorrect API key provided: {key}. You sent the header '{auth}'.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
        status_code=status,
    )


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector from the words of ``text`` (bag of hashed words)."""
    vec = [0.0] * dim
    for word in text.lower().split():
        vec[sum(map(ord, word)) % dim] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


def _completion(body: dict, reply: Reply) -> dict:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": None,
                "message": {"role": "assistant", "content": reply.content, "refusal": None},
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


async def _sse(body: dict, reply: Reply):
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
    }
    words = reply.content.split(" ")
    for i, word in enumerate(words):
        piece = word if i == 0 else " " + word
        chunk = {
            **base,
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None, "logprobs": None}],
        }
        yield f"data: {json.dumps(chunk)}\n\n"
        await asyncio.sleep(0)
    last = {"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": None}
    yield f"data: {json.dumps({**base, 'choices': [last]})}\n\n"
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


def user_text(body: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def standalone_reply(prompt: str) -> dict:
    """A literal contextualizer.

    The follow-up in ``<question>`` with the first question of ``<conversation>`` appended as context (a model
    that always carries the thread's topic).
    """
    question = re.search(r"<question>(.*?)</question>", prompt, re.S)
    first = re.search(r"<user>(.*?)</user>", prompt, re.S)
    q = question.group(1).strip() if question else ""
    if not first:
        return {"question": q, "reasoning": "No earlier turn."}
    return {"question": f"{q.rstrip(' ?')} (context: {first.group(1).strip().rstrip(' ?')})?",
            "reasoning": "Carried the first turn's question as context."}


def default_script(kind: str, body: dict) -> Reply:
    """A cooperative model: every chunk relevant, answers cite [1], checks pass."""
    if kind == "RelevanceGrade":
        return Reply(
            json.dumps(
                {"relevant": True, "score": "high", "reasoning": "The chunk discusses the question's topic."}
            )
        )
    if kind == "RewrittenQuery":
        return Reply(
            json.dumps(
                {
                    "query": "dense passage retriever training",
                    "strategy": "expand_terms",
                    "reasoning": "Add retriever terms.",
                }
            )
        )
    if kind == "GroundingCheck":
        return Reply(
            json.dumps(
                {
                    "grounded": True,
                    "ungrounded_claims": [],
                    "confidence": 0.9,
                    "reasoning": "Every claim is in the cited chunk.",
                }
            )
        )
    if kind == "Decomposition":
        return Reply(
            json.dumps({"kind": "single", "sub_questions": [], "reasoning": "One search answers it."})
        )
    if kind == "AnswerGrade":
        return Reply(json.dumps({"useful": True, "reasoning": "It answers the question."}))
    if kind == "StandaloneQuestion":
        return Reply(json.dumps(standalone_reply(user_text(body))))
    if kind == "RouteQuery":
        return Reply(json.dumps({"datasource": "kb", "retrieval_mode": "default", "hops": "one",
                                 "reasoning": "The documents cover the question."}))
    if kind in ("stream", "text"):
        return Reply(
            "The retriever is a DPR bi-encoder trained jointly with the generator [1].", completion_tokens=17
        )
    return Reply(status=400)


class BlackHole:
    """A server on 127.0.0.1 that accepts connections and never answers (nor closes them)."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections.append(conn)

    def start(self) -> BlackHole:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self.connections:
            conn.close()
        self._sock.close()


@dataclass
class FakeTavily:
    """A Tavily-compatible /search endpoint.

    ``results`` are returned; ``status`` other than 200 answers with that status (401 bad key, 429 rate
    limit); ``delay_s`` waits first.
    """

    results: list[dict] = field(
        default_factory=lambda: [
            {
                "url": "https://example.org/tungsten",
                "title": "Tungsten",
                "content": "Tungsten boils at 5,930 degrees Celsius at sea level pressure.",
                "score": 0.91,
            },
            {
                "url": "https://example.org/metals",
                "title": "Refractory metals",
                "content": "Refractory metals such as tungsten have very high boiling points.",
                "score": 0.72,
            },
        ]
    )
    status: int = 200
    delay_s: float = 0.0
    echo_key: bool = False
    """With a non-200 ``status``: the error detail repeats the caller's key and header."""
    requests: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    _server: _Server | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def start(self) -> FakeTavily:
        app = FastAPI()

        @app.post("/search")
        async def search(request: Request):
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.status != 200:
                message = f"scripted {self.status}"
                if self.echo_key:
                    auth = request.headers.get("authorization", "")
                    message = (
                        f"Unauthorized: missing or invalid API key "
                        f"{body.get('api_key') or auth.split(' ', 1)[-1]} ({auth})"
                    )
                return JSONResponse({"detail": {"error": message}}, status_code=self.status)
            return {
                "query": body.get("query"),
                "results": self.results[: body.get("max_results") or 5],
                "response_time": 0.01,
            }

        self._server = _Server(app).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.stop()
