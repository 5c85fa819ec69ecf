"""Exports for stakeholders.

A run or a comparison as JSON, or as one self-contained HTML file (plotly.js embedded once, the flow with its
replay, the verdicts and the answer) that opens with no network and no server. All text is HTML-escaped; keys
never appear (a Run holds none, and any secret passed in ``secrets`` is redacted as a second guard).
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable, Mapping

from rag.config import TOGGLES, preset_label, preset_of
from rag.models import Comparison, GradeDetail, Run, source_label
from rag.secrets import REDACTED, scrub  # noqa: F401  (REDACTED is part of this module's API)
from rag.trace import formats, story
from rag.trace.charts import hits_figure, outcomes_figure, path_figure, timeline_figure
from rag.trace.pricing import Price, format_cost, load_prices, run_cost
from rag.trace.replay import replay_figure
from rag.trace.story import grounded_verdict, useful_verdict

RUN_FORMAT = "retrace.run/1"
COMPARISON_FORMAT = "retrace.comparison/1"
EVALUATION_FORMAT = "retrace.evaluation/1"
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;margin:0;
background:#f7f8fa}
main{max-width:1280px;margin:0 auto;padding:24px 32px 48px}
h1{font-size:1.6rem;margin:0 0 4px}h2{font-size:1.25rem;margin:32px 0 8px;border-bottom:1px solid
#e5e7eb;padding-bottom:4px}h3{font-size:1.02rem;margin:18px 0 6px}h4{font-size:.95rem;margin:14px 0 4px}
.muted{color:#6b7280;font-size:.9rem}.q{font-size:1.1rem;margin:8px 0}
.stop{padding:10px 14px;border-radius:8px;margin:10px 0;font-weight:600}
.stop.answered{background:#e7f6ed;color:#1d6b3f}.stop.caveat{background:#fff5db;color:#7a5600}
.stop.abstained,.stop.error{background:#fde8e8;color:#9b2c2c}.stop.unfinished{background:#eef0f3}
table{border-collapse:collapse;width:100%;background:#fff;font-size:.9rem;margin:6px 0}
th,td{border:1px solid #e5e7eb;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}td.reason{white-space:pre-wrap}
.tag{display:inline-block;padding:1px 7px;border-radius:10px;font-size:.8rem;font-weight:600}
.yes{background:#e7f6ed;color:#1d6b3f}.no{background:#fde8e8;color:#9b2c2c}
.fallback{background:#fff5db;color:#7a5600}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px 16px;margin:8px 0}
.answer{white-space:pre-wrap;line-height:1.5}
ol.steps li{margin:4px 0}.why{color:#4b5563}
.grid{display:grid;gap:14px}.grid .card{margin:0}
.facts td:first-child{width:180px;color:#6b7280}
details{margin:4px 0}summary{cursor:pointer}
footer{margin-top:40px;color:#9ca3af;font-size:.8rem}
.flow{overflow-x:auto}.flow>div{min-width:720px}
@media (max-width:640px){main{padding:16px 10px 32px}.facts td:first-child{width:auto}
td{overflow-wrap:anywhere}}
"""
"""The flow keeps 720 px, the narrowest its labels and boxes read at; a narrower page scrolls it."""


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every key removed.

    :func:`rag.secrets.scrub` (the given ``secrets``, the keys this process knows, and any Bearer, sk- or
    tvly- token).
    """
    return scrub(text, secrets)


def _e(text) -> str:
    return html.escape(str(text), quote=True)


# --------------------------------------------------------------------------- JSON


def _run_record(run: Run, prices) -> dict:
    return {"stop_kind": story.stop_kind(run), "preset": preset_label(preset_of(run.options)),
            "cost_usd": run_cost(run, prices), "run": run.model_dump(mode="json")}


def run_json(run: Run, *, prices: Mapping[str, Price] | None = None,
             secrets: Iterable[str | None] = ()) -> str:
    """``run`` as an indented JSON document.

    ``format`` (``retrace.run/1``), ``exported_at`` (UNIX s), ``stop_kind``, ``preset``, ``cost_usd`` (null
    when a model has no price) and ``run`` (every field of the Run, events included).
    """
    prices = load_prices() if prices is None else prices
    doc = {"format": RUN_FORMAT, "exported_at": time.time(), **_run_record(run, prices)}
    return redact(json.dumps(doc, indent=2, ensure_ascii=False, default=str), secrets)


def comparison_json(cmp: Comparison, *, prices: Mapping[str, Price] | None = None,
                    secrets: Iterable[str | None] = ()) -> str:
    """A comparison as JSON.

    ``format`` (``retrace.comparison/1``), ``id``, ``question``, ``created_at``, ``exported_at`` and
    ``pipelines`` (each ``label`` plus the fields of :func:`run_json`).
    """
    prices = load_prices() if prices is None else prices
    doc = {"format": COMPARISON_FORMAT, "id": cmp.id, "question": cmp.question,
           "created_at": cmp.created_at, "exported_at": time.time(),
           "pipelines": [{"label": label, **_run_record(run, prices)}
                         for label, run in zip(cmp.labels, cmp.runs, strict=False)]}
    return redact(json.dumps(doc, indent=2, ensure_ascii=False, default=str), secrets)


# --------------------------------------------------------------------------- HTML


class _Figures:
    """Figures to HTML, plotly.js inlined with the first one only."""

    def __init__(self) -> None:
        self.first = True

    def __call__(self, fig, div_id: str) -> str:
        out = fig.to_html(full_html=False, include_plotlyjs=self.first, div_id=div_id,
                          config=PLOTLY_CONFIG, auto_play=False)
        self.first = False
        return out


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>{body}"
            f"<footer>Exported by Retrace on {_e(time.strftime('%Y-%m-%d %H:%M'))}. "
            f"Self-contained: plotly.js is embedded, nothing is loaded from the network."
            f"</footer></main></body></html>\n")


def _tag(ok: bool, yes: str, no: str) -> str:
    return f'<span class="tag {"yes" if ok else "no"}">{_e(yes if ok else no)}</span>'


def _facts(run: Run, prices) -> str:
    o = run.options
    switches = ", ".join(f"{k.replace('_', ' ')} {'on' if getattr(o, k) else 'off'}"
                         for k in TOGGLES)
    models = ", ".join(f"{k} {v}" for k, v in sorted(run.models.items())) or "none (offline)"
    rows = [("Run id", run.id), ("When", time.strftime("%Y-%m-%d %H:%M:%S",
                                                        time.localtime(run.created_at))),
            ("Pipeline", f"{preset_label(preset_of(o))}: {switches}"),
            ("Budgets", f"top_k {o.top_k}, min_relevant {o.min_relevant}, "
                        f"max_rewrites {o.max_rewrites}, retrieval {o.retrieval}"),
            ("Engine", f"{run.engine}; models: {models}"),
            ("Knowledge base", run.knowledge_base),
            ("Totals", story.totals_line(run, run_cost(run, prices)))]
    return ('<table class="facts">' + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
                                              for k, v in rows) + "</table>")


def _answer(run: Run, h: int = 3) -> str:
    parts = [f'<div class="card answer">{_e(run.answer or "(no answer)")}</div>']
    if run.citations:
        items = []
        for c in run.citations:
            where = c.label() + (" (web)" if c.origin == "web" else "")
            text = (f"<details><summary>chunk text</summary><div class=\"answer\">{_e(c.text)}"
                    f"</div></details>" if c.text else "")
            items.append(f"<li><b>[{c.n}]</b> {_e(where)} <span class=\"muted\">"
                         f"{_e(c.chunk_id)}</span>{text}</li>")
        parts.append(f"<h{h}>Sources</h{h}><ul>" + "".join(items) + "</ul>")
    return "".join(parts)


def _steps(run: Run, h: int = 3) -> str:
    out = []
    for r in story.rounds(run):
        items = []
        for s in r.steps:
            nxt = f" → <b>{_e(s.next)}</b>: " if s.next else " · "
            extra = (f"<div class=\"why\">reasoning: {_e(s.reasoning)}</div>" if s.reasoning
                     else "")
            extra += "".join(f' <span class="tag fallback">fallback: {_e(f)}</span>'
                             for f in s.fallbacks)
            items.append(f'<li value="{s.step}"><b>{_e(s.label)}</b> — {_e(s.decided)}'
                         f'<span class="why">{nxt}{_e(s.why)}</span>{extra}</li>')
        out.append(f"<h{h}>{_e(r.title)}</h{h}><ol class=\"steps\">{''.join(items)}</ol>")
    return "".join(out)


def _verdicts(run: Run, h: int = 3) -> str:
    out = []
    for e in run.events:
        if not isinstance(e.detail, GradeDetail):
            continue
        rows = []
        for v in e.detail.verdicts:
            fb = f'<span class="tag fallback">fallback: {_e(v.fallback)}</span>' if v.fallback else ""
            rows.append(f"<tr><td>{_tag(v.relevant, 'relevant', 'not relevant')}</td>"
                        f"<td>{_e(v.grade)}</td><td>{_e(v.source)}</td><td>{_e(v.page or '')}</td>"
                        f"<td class=\"reason\">{_e(v.reasoning)} {fb}</td></tr>")
        out.append(f"<h{h}>Step {e.step}: grading {e.attempt} — query “{_e(e.detail.query)}”</h{h}>"
                   f"<table><tr><th>Verdict</th><th>Score</th><th>File</th><th>Page</th>"
                   f"<th>Reason</th></tr>{''.join(rows)}</table>")
    for c in story.checks(run):
        name = "Grounding check" if c.kind == "grounding" else "Answer check"
        ok = _tag(c.passed, "grounded" if c.kind == "grounding" else "useful",
                  "not grounded" if c.kind == "grounding" else "not useful")
        conf = f" · confidence {c.confidence:.2f}" if c.confidence is not None else ""
        claims = ("<div>Ungrounded claims:<ul>" + "".join(f"<li>{_e(x)}</li>" for x in c.claims)
                  + "</ul></div>") if c.claims else ""
        fb = f' <span class="tag fallback">fallback: {_e(c.fallback)}</span>' if c.fallback else ""
        out.append(f'<div class="card"><b>Step {c.step}: {name}</b> {ok}{conf}{fb}'
                   f'<div class="reason why">{_e(c.reasoning)}</div>{claims}</div>')
    return "".join(out) or "<p class=\"muted\">No chunk was graded and no check ran in this run.</p>"


def _run_body(run: Run, prices, figures: _Figures, graph, prefix: str, h: int = 2) -> str:
    kind = story.stop_kind(run)
    return (f'<p class="q"><b>Question:</b> {_e(run.question)}</p>'
            f'<div class="stop {kind}">{_e(story.headline(run))}</div>'
            f"{_facts(run, prices)}"
            f"<h{h}>Flow and replay</h{h}><p class=\"muted\">Press ▶ Play or drag the slider: "
            f"each step rings its node and says what it decided and why. Hover a box for every "
            f"visit.</p><div class=\"flow\">{figures(replay_figure(run, graph), f'{prefix}-flow')}</div>"
            f"<h{h}>Step by step</h{h}>{_steps(run, h + 1)}"
            f"<h{h}>Verdicts</h{h}>{_verdicts(run, h + 1)}"
            f"<h{h}>Timeline</h{h}>{figures(timeline_figure(run, prices), f'{prefix}-timeline')}"
            f"<h{h}>Answer</h{h}>{_answer(run, h + 1)}")


def run_html(run: Run, *, prices: Mapping[str, Price] | None = None,
             secrets: Iterable[str | None] = (), graph=None) -> str:
    """One self-contained HTML page for ``run``.

    The question and stop reason, the facts (pipeline, engine, totals and cost), the flow with its replay
    (slider and Play), every step unrolled by attempt, every verdict with its reason in full, the timeline,
    and the answer with its sources. plotly.js is embedded inline once; nothing loads from the network.
    """
    prices = load_prices() if prices is None else prices
    body = ("<h1>Retrace run report</h1>"
            + _run_body(run, prices, _Figures(), graph, "run"))
    return redact(_page(f"Retrace: {run.question[:80]}", body), secrets)


def comparison_html(cmp: Comparison, *, prices: Mapping[str, Price] | None = None,
                    secrets: Iterable[str | None] = (), graph=None) -> str:
    """One self-contained HTML page for a comparison.

    The pipelines side by side (answer, citations, path, LLM calls, tokens, cost, latency, grounded and useful
    verdicts), then each run in full as in :func:`run_html`. plotly.js is embedded inline once.
    """
    prices = load_prices() if prices is None else prices
    figures = _Figures()
    cols = []
    for i, (label, run) in enumerate(zip(cmp.labels, cmp.runs, strict=False)):
        tokens = run.prompt_tokens + run.completion_tokens
        kind = story.stop_kind(run)
        cites = "".join(f"<li>[{c.n}] {_e(c.label())}</li>" for c in run.citations)
        cols.append(
            f'<div class="card"><h3>{_e(label)}</h3><div class="stop {kind}">'
            f"{_e(story.headline(run))}</div>"
            f"<table class=\"facts\"><tr><td>LLM calls</td><td>{run.llm_calls}</td></tr>"
            f"<tr><td>Tokens</td><td>{tokens}</td></tr>"
            f"<tr><td>Cost</td><td>{_e(format_cost(run_cost(run, prices)))}</td></tr>"
            f"<tr><td>Latency</td><td>{run.duration_ms:.0f} ms</td></tr>"
            f"<tr><td>Grounded</td><td>{_e(grounded_verdict(run))}</td></tr>"
            f"<tr><td>Useful</td><td>{_e(useful_verdict(run))}</td></tr></table>"
            f'<div class="answer">{_e(run.answer)}</div><ul>{cites}</ul>'
            f"{figures(path_figure(run), f'cmp-path-{i}')}</div>")
    body = (f"<h1>Retrace comparison</h1><p class=\"q\"><b>Question:</b> {_e(cmp.question)}</p>"
            f"<p class=\"muted\">{len(cmp.runs)} pipelines run at the same time on one "
            f"question · comparison {_e(cmp.id)}</p>"
            f'<div class="grid" style="grid-template-columns:repeat({max(1, len(cols))},'
            f'minmax(0,1fr))">{"".join(cols)}</div>')
    for i, (label, run) in enumerate(zip(cmp.labels, cmp.runs, strict=False)):
        body += (f"<h2 style=\"margin-top:48px\">{_e(label)}: the whole run</h2>"
                 + _run_body(run, prices, figures, graph, f"cmp-{i}", h=3))
    return redact(_page(f"Retrace comparison: {cmp.question[:80]}", body), secrets)


EVAL_COLUMNS = (("questions", "Questions"), ("answered", "Answered"), ("answered_clean", "Answered clean"),
                ("caveat", "With caveat"), ("abstained", "Abstained"), ("answer_hit", "Answer hit"),
                ("clean_precision", "Clean precision"), ("confidently_wrong", "Confidently wrong"),
                ("source_hit", "Source hit"), ("p50_ms", "Latency p50"), ("llm_calls_mean", "LLM calls"))
"""The per-preset figures of an evaluation, in the order every view shows them."""


def eval_cell(key: str, value: object) -> str:
    """One evaluation figure as text, in :mod:`rag.trace.formats`' format for its kind.

    Shares ``80 %``, ms ``1,234 ms``, means ``1.5``, counts ``12``; ``—`` for a figure with no data.
    """
    if value is None or not isinstance(value, int | float):
        return formats.NONE if value is None else str(value)
    if key in ("answer_hit", "source_hit", "clean_precision"):
        return formats.share(value)
    if key.endswith("_ms"):
        return formats.ms(value)
    return formats.mean(value) if key.endswith("_mean") else formats.count(value)


def eval_citations(item: Mapping, limit: int = 3) -> str:
    """The first ``limit`` citations of an evaluation item (``rag eval``'s shape), as ``file.pdf p.3; …``."""
    cited = item.get("citations", [])[:limit]
    return "; ".join(source_label(c.get("source", ""), c.get("page", 0)) for c in cited)


def evaluation_html(result: Mapping, *, title: str = "Retrace evaluation",
                    secrets: Iterable[str | None] = ()) -> str:
    """One self-contained HTML page for an evaluation.

    (``rag eval --json``'s shape: ``presets`` and ``items``): the figures per pipeline, the outcome and hit
    charts, and every question with how each pipeline ended and what it cited. plotly.js is embedded once;
    nothing loads from the network.
    """
    presets = {preset_label(p): figures for p, figures in result.get("presets", {}).items()}
    figures = _Figures()
    head = "".join(f"<th>{_e(label)}</th>" for _, label in EVAL_COLUMNS)
    rows = "".join(f"<tr><td>{_e(name)}</td>" + "".join(f"<td>{_e(eval_cell(k, f.get(k)))}</td>"
                                                        for k, _ in EVAL_COLUMNS) + "</tr>"
                   for name, f in presets.items())
    items = "".join(
        f"<tr><td>{_e(i.get('id', ''))}</td><td>{_e(preset_label(i.get('preset', '')))}</td>"
        f"<td>{_e(i.get('question', ''))}</td><td>{_e(i.get('end', ''))}</td>"
        f"<td>{_e(eval_citations(i))}</td>"
        f"<td class=\"muted\">{_e(i.get('run_id', ''))}</td></tr>" for i in result.get("items", []))
    body = (f"<h1>{_e(title)}</h1><p class=\"muted\">{len(result.get('items', []))} runs over "
            f"{len(presets)} pipeline(s).</p><table><tr><th>Pipeline</th>{head}</tr>{rows}</table>"
            f"{figures(outcomes_figure(presets), 'eval-outcomes')}"
            f"{figures(hits_figure(presets), 'eval-hits')}"
            f"<h2>Every question</h2><table><tr><th>Id</th><th>Pipeline</th><th>Question</th>"
            f"<th>Ended in</th><th>First citations</th><th>Run</th></tr>{items}</table>")
    return redact(_page(title, body), secrets)


def evaluation_json(result: Mapping, *, secrets: Iterable[str | None] = ()) -> str:
    """An evaluation as JSON: ``format`` (``retrace.evaluation/1``), ``exported_at`` (UNIX s), the rest.

    The rest is ``presets`` and ``items``, as :func:`rag.eval.run_eval` returns them. The key and any
    configured secret are redacted.
    """
    doc = {"format": EVALUATION_FORMAT, "exported_at": time.time(), **result}
    return redact(json.dumps(doc, indent=2, ensure_ascii=False, default=str), secrets)
