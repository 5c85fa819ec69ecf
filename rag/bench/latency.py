"""``python -m rag bench latency``: each preset's wall time against a model server with a fixed delay.

A local OpenAI-compatible server (the standard library's threading HTTP server on 127.0.0.1, a free port)
waits ``delay_ms`` before each chat reply and answers like a cooperative model: every chunk relevant,
one-hop plans, grounded and useful answers, the knowledge base as the route. Each preset runs the same
questions over a small knowledge base (the sample documents under ``docs/``, offline hashing embeddings)
with a fresh grade cache and retrieval cache per run, so no preset profits from another's calls, and no
checkpoints (``bench checkpoints`` measures those). Reported
per preset: p50 and p95 wall time (ms), p50 time to the first answer token (ms) and mean LLM calls, each
also as a ratio to Naive RAG measured in the same run.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rag.config import PRESETS, Settings, preset_options
from rag.engines.llm import GradeCache, LLMEngine
from rag.engines.local import LocalEngine
from rag.graph.prefetch import RETRIEVAL_CACHE
from rag.run import make_context, run_question
from rag.samples import load_samples
from rag.store.bm25 import lexical_stats
from rag.store.chroma import open_knowledge_base

BENCH_QUESTIONS = (
    "What does grade_documents do with the relevant chunks?",
    "How does Retrace split a page into chunks?",
    "What is reciprocal rank fusion?",
    "What does the grounding check verify?",
    "Where does Retrace store each knowledge base?",
    "What are the default chunk size and overlap?",
    "How does the offline embedding represent a text?",
    "What happens when the rewrite budget is spent?",
)
"""Questions about the sample documents (docs/), asked of every preset."""

TARGET_P50_VS_NAIVE = 2.5
"""Issue 13: Full's p50 wall time at most this many times naive's."""
TARGET_TTFT_VS_NAIVE = 2.0
"""Issue 13: Full's time to first token at most this many times naive's."""

_REPLIES = {
    "RelevanceGrade": {"relevant": True, "score": "high", "reasoning": "It answers the question."},
    "RewrittenQuery": {"query": "retrace graph nodes", "strategy": "expand_terms",
                       "reasoning": "Add specific terms."},
    "GroundingCheck": {"grounded": True, "ungrounded_claims": [], "confidence": 0.9,
                       "reasoning": "Every claim is in its cited chunk."},
    "AnswerGrade": {"useful": True, "reasoning": "It answers the question."},
    "Decomposition": {"kind": "single", "sub_questions": [], "reasoning": "One search suffices."},
    "RouteQuery": {"datasource": "kb", "retrieval_mode": "default", "hops": "one",
                   "reasoning": "The documents cover it."},
    "StandaloneQuestion": {"question": "", "reasoning": "It stands alone."},
}
ANSWER = "Retrace grades each retrieved chunk and keeps the relevant ones as evidence [1]."


def cooperative_reply(kind: str) -> str:
    """The reply of a cooperative model to a request of ``kind`` (a json_schema name, else a plain answer)."""
    return json.dumps(_REPLIES[kind]) if kind in _REPLIES else ANSWER


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the OpenAI client expects
    server: _Server

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        self.server.count()
        fmt = body.get("response_format") or {}
        schema = fmt.get("json_schema") or {}
        kind = schema.get("name", "json") if fmt.get("type") == "json_schema" else "text"
        time.sleep(self.server.delay_s)
        content = cooperative_reply(kind)
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()),
                "model": body.get("model", "bench")}
        usage = {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
        if body.get("stream"):
            self._stream(base, content, usage, bool((body.get("stream_options") or {}).get("include_usage")))
            return
        payload = json.dumps({**base, "object": "chat.completion", "usage": usage, "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": content, "refusal": None}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, base: dict, content: str, usage: dict, with_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(obj: dict | str) -> None:
            data = f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        chunk = {**base, "object": "chat.completion.chunk"}
        for i, word in enumerate(content.split(" ")):
            send({**chunk, "choices": [{"index": 0, "delta": {"content": word if i == 0 else " " + word},
                                        "finish_reason": None}]})
        send({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if with_usage:
            send({**chunk, "choices": [], "usage": usage})
        send("[DONE]")
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up (a discarded speculative answer, a closed pool) is not worth printing."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay_s = delay_s
        self.calls = 0
        self._lock = threading.Lock()

    def count(self) -> None:
        with self._lock:
            self.calls += 1


class DelayedChatServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that waits ``delay_ms`` before each reply.

    Streamed or not; ``calls`` counts chat requests. Use as a context manager.
    """

    def __init__(self, delay_ms: float) -> None:
        """A server (not started yet) that waits ``delay_ms`` milliseconds per call."""
        self._server = _Server(delay_ms / 1000)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="bench-llm")

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of the server (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        """Chat requests served so far."""
        return self._server.calls

    def __enter__(self) -> DelayedChatServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@dataclass
class PresetLatency:
    """Figures of one preset: wall time and time to first token in ms, LLM calls per run, ratios to naive."""

    preset: str
    runs: int
    wall_ms_p50: float
    wall_ms_p95: float
    ttft_ms_p50: float
    llm_calls_mean: float
    wall_p50_vs_naive: float = 0.0
    wall_p95_vs_naive: float = 0.0
    ttft_vs_naive: float = 0.0
    calls_vs_naive: float = 0.0
    paths: list[str] = field(default_factory=list)
    """Every distinct path the preset's runs took."""


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_latency(delay_ms: float = 300, questions: int = 5, repeats: int = 3,
                presets: Sequence[str] = ("naive", "crag", "self-rag", "full"),
                data_dir: Path | None = None,
                on_progress: Callable[[int, int], None] | None = None) -> list[PresetLatency]:
    """Run each preset ``repeats`` times on the first ``questions`` of BENCH_QUESTIONS.

    Against a server that waits ``delay_ms`` per call; naive first, as the baseline; runs one after
    another (no contention between them). ``data_dir``: where the sample knowledge base is built (default
    a temporary directory). Raises ValueError for an unknown preset or fewer than 1 question or repeat.
    """
    if questions < 1 or repeats < 1:
        raise ValueError("--questions and --repeats must be at least 1")
    unknown = [p for p in presets if p not in PRESETS]
    if unknown:
        raise ValueError(f"unknown preset {unknown[0]!r}; choose from {', '.join(PRESETS)}")
    order = ["naive"] + [p for p in presets if p != "naive"]
    asked = [BENCH_QUESTIONS[i % len(BENCH_QUESTIONS)] for i in range(questions)]
    tmp = tempfile.TemporaryDirectory(prefix="retrace-latency-") if data_dir is None else None
    root = Path(tmp.name) if tmp else Path(data_dir or ".")
    try:
        with DelayedChatServer(delay_ms) as server:
            settings = Settings.from_env({"OPENAI_API_KEY": "sk-bench-local",
                                          "OPENAI_BASE_URL": server.base_url,
                                          "RAG_EMBEDDING_MODEL": "hashing",
                                          "RAG_SEMANTIC_CACHE_THRESHOLD": "off"},  # cold retrievals
                                         data_dir=root)
            kb = open_knowledge_base(settings, "bench-latency")
            load_samples(kb)
            stats = lexical_stats(kb)

            def one(preset: str, question: str) -> tuple[float, float, int, str]:
                RETRIEVAL_CACHE.clear()
                engine = LLMEngine(settings, LocalEngine(stats), cache=GradeCache(),
                                   timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries)
                first: list[float] = []
                before = server.calls
                started = time.perf_counter()
                run = run_question(question, make_context(settings, kb, engine=engine, checkpoints=False),
                                   preset_options(preset),
                                   on_token=lambda _t: None if first else first.append(time.perf_counter()))
                wall = (time.perf_counter() - started) * 1000
                ttft = (first[0] - started) * 1000 if first else wall
                return wall, ttft, server.calls - before, " > ".join(run.path)

            one("naive", asked[0])  # warm-up: imports, HTTP connections, the BM25 index
            return _measure(order, asked, repeats, one, on_progress)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _measure(order: list[str], asked: list[str], repeats: int, one: Callable,
             on_progress: Callable[[int, int], None] | None) -> list[PresetLatency]:
    """Each preset's figures; the presets' runs are interleaved, so load drifts hit every preset alike."""
    samples: dict[str, list[tuple[float, float, int, str]]] = {p: [] for p in order}
    total, done = len(order) * len(asked) * repeats, 0
    for _ in range(repeats):
        for question in asked:
            for preset in order:
                samples[preset].append(one(preset, question))
                done += 1
                if on_progress:
                    on_progress(done, total)
    results = []
    for preset in order:
        walls, ttfts = [s[0] for s in samples[preset]], [s[1] for s in samples[preset]]
        results.append(PresetLatency(
            preset=preset, runs=len(walls), wall_ms_p50=round(statistics.median(walls), 1),
            wall_ms_p95=round(_quantile(walls, 0.95), 1), ttft_ms_p50=round(statistics.median(ttfts), 1),
            llm_calls_mean=round(statistics.mean(s[2] for s in samples[preset]), 2),
            paths=sorted({s[3] for s in samples[preset]})))
    base = results[0]
    for r in results:
        r.wall_p50_vs_naive = round(r.wall_ms_p50 / base.wall_ms_p50, 2)
        r.wall_p95_vs_naive = round(r.wall_ms_p95 / base.wall_ms_p95, 2)
        r.ttft_vs_naive = round(r.ttft_ms_p50 / base.ttft_ms_p50, 2)
        r.calls_vs_naive = round(r.llm_calls_mean / base.llm_calls_mean, 2) if base.llm_calls_mean else 0.0
    return results


def format_latency(results: Sequence[PresetLatency], delay_ms: float) -> str:
    """A plain-text table of the figures, with Full's targets (met or not)."""
    head = ("preset", "runs", "p50 ms", "p95 ms", "TTFT p50 ms", "LLM calls", "p50 vs naive", "p95 vs naive",
            "TTFT vs naive", "calls vs naive")
    rows = [head] + [(r.preset, str(r.runs), f"{r.wall_ms_p50:,.0f}", f"{r.wall_ms_p95:,.0f}",
                      f"{r.ttft_ms_p50:,.0f}", f"{r.llm_calls_mean:g}", f"{r.wall_p50_vs_naive:.2f}x",
                      f"{r.wall_p95_vs_naive:.2f}x", f"{r.ttft_vs_naive:.2f}x", f"{r.calls_vs_naive:.2f}x")
                     for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [f"latency per preset, model server delay {delay_ms:g} ms per call (ratios to naive, same run)"]
    lines += ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(row, widths, strict=True))) for row in rows]
    full = next((r for r in results if r.preset == "full"), None)
    if full is not None:
        ok_p50 = "met" if full.wall_p50_vs_naive <= TARGET_P50_VS_NAIVE else "NOT met"
        ok_ttft = "met" if full.ttft_vs_naive <= TARGET_TTFT_VS_NAIVE else "NOT met"
        lines.append(f"Full p50 {full.wall_p50_vs_naive:.2f}x naive "
                     f"(target <= {TARGET_P50_VS_NAIVE}x: {ok_p50}); "
                     f"Full time to first token {full.ttft_vs_naive:.2f}x naive "
                     f"(target <= {TARGET_TTFT_VS_NAIVE}x: {ok_ttft})")
    return "\n".join(lines)
