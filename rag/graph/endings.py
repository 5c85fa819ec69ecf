"""The nodes that end a run: finalize, finalize_with_caveat and fallback (abstain), each saying why."""

from __future__ import annotations

import re

from langgraph.runtime import Runtime

from rag.answer_types import describe
from rag.config import Options
from rag.engines.benchmarks import table_row
from rag.engines.cited import PRINTED_LEAD, extractive_lead, printed_lead
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.events import Clock, record
from rag.graph.state import GraphState
from rag.models import EndDetail

NO_ANSWER = "I could not find an answer to this question in the knowledge base."
"""What fallback answers, followed by why in brackets."""


def _checks_said(state: GraphState, o: Options) -> str:
    said = []
    if o.grounding_check and state.get("grounded"):
        said.append("grounding check passed")
    if o.answer_check and state.get("useful"):
        said.append("answer check passed")
    return ", ".join(said)


def finalize(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Commit the answer: evidence was sufficient and every check that ran passed."""
    started = Clock.start()
    o = runtime.context.options
    n = len(state.get("documents", []))
    parts = [f"{n} chunks of evidence" if o.grading else f"{n} chunks retrieved (no grading)"]
    if checks := _checks_said(state, o):
        parts.append(checks)
    if state.get("rewrites"):
        parts.append(f"after {state['rewrites']} rewrite(s)")
    reason = "Answered: " + "; ".join(parts) + "."
    return record(state, runtime, "finalize", started, reason, EndDetail(stop_reason=reason),
                   {"final_answer": state.get("answer", ""), "stop_reason": reason})


def finalize_with_caveat(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Commit the answer with a caveat that says plainly what could not be verified."""
    started = Clock.start()
    o = runtime.context.options
    why = []
    if state.get("out_of_time"):
        why.append(f"time budget ({runtime.context.budget_s():g} s) spent")
    if o.rewriting and state.get("rewrites", 0) >= o.max_rewrites:
        why.append(f"the rewrite budget ({o.max_rewrites}) was spent")
    if state.get("weak_evidence"):
        why.append(f"only {len(state.get('documents', []))} relevant chunk(s) were found "
                   f"({o.min_relevant} wanted)")
    if state.get("grounded") is False:
        n = len(state.get("ungrounded_claims", []))
        why.append(f"{n} claim{'s' if n != 1 else ''} could not be verified")
    if state.get("useful") is False:
        why.append("the answer may not fully address the question")
    if printed_lead(state.get("answer", "")):
        why.append(PRINTED_LEAD)
    if state.get("web_note", "").startswith(("skipped", "failed")):
        why.append(f"web search {state['web_note']}")
    route = state.get("route")
    if route is not None and route.why.startswith(routing.SAME_EVIDENCE):
        # The previous answer stands: say what its checks found (a rewrite cleared the flags).
        groundings, checks = state.get("grounding_checks") or [], state.get("answer_checks") or []
        if state.get("grounded") is None and groundings and groundings[-1]:
            n = groundings[-1]
            why.append(f"{n} claim{'s' if n != 1 else ''} could not be verified")
        if state.get("useful") is None and checks and not checks[-1]:
            why.append("the answer may not fully address the question")
        why.append("the evidence did not change after the last correction, so the previous "
                   "answer stands")
    reason = "Answered with caveat: " + (" and ".join(why) if why else "evidence is limited")
    caveat = "Caveat: " + _caveat(state, o) + "."
    answer, citations = state.get("answer", ""), state.get("citations", [])
    before = state.get("before_seek")
    if before and before[0] and state.get("useful") is False:
        answer, citations = before  # the search for the missing type found nothing better
        reason += "; the answer before the search for the missing type stands"
    final = f"{caveat}\n\n{_without_caveat(answer)}"
    return record(state, runtime, "finalize_with_caveat", started, reason,
                   EndDetail(stop_reason=reason, caveat=caveat, out_of_time=bool(state.get("out_of_time"))),
                   {"final_answer": final, "stop_reason": reason, "citations": citations})


def _caveat(state: GraphState, o: Options) -> str:
    """The one reason a reader needs, in a short clause: the most serious thing that could not be checked.

    The stop reason keeps every reason (budgets, repeated evidence); the caveat says only what it means
    for the answer.
    """
    sought = state.get("sought_types") or []
    if state.get("out_of_time"):
        return "the time budget ran out, so the answer was not fully checked"
    if state.get("grounded") is False:
        n = len(state.get("ungrounded_claims", []))
        return f"{n} claim{'s' if n != 1 else ''} could not be verified against the sources"
    if sought and state.get("useful") is not True:
        if sought[-1] == "number" and _row_lead(state.get("answer", "")):
            return "the table row quoted has several figures, and no passage says which one was asked for"
        return f"no passage found gives {describe(sought[-1])} for what was asked"
    if state.get("useful") is False or _last_check_failed(state):
        return "the answer may not fully answer the question"
    if printed_lead(state.get("answer", "")):
        return "the table line quoted has several figures, and no column says which one was asked for"
    if state.get("weak_evidence"):
        n = len(state.get("documents", []))
        return f"only {n} relevant passage{'s were' if n != 1 else ' was'} found ({o.min_relevant} wanted)"
    return "the evidence is limited"


def _row_lead(answer: str) -> bool:
    """Whether the offline engine's ``answer`` leads with a table row as printed (a label, then figures)."""
    lead = extractive_lead(answer)
    return table_row(lead) and len(re.findall(r"\d[\d,.]*", lead)) > 1


def _last_check_failed(state: GraphState) -> bool:
    """The latest answer check said no (a rewrite clears ``useful``; ``answer_checks`` keeps it)."""
    checks = state.get("answer_checks") or []
    return bool(checks) and not checks[-1]


def _without_caveat(answer: str) -> str:
    """``answer`` without a caveat line of its own at its start, so caveats never nest."""
    lines = answer.split("\n")
    while lines and lines[0].lower().startswith("caveat:"):
        lines = lines[1:]
        while lines and not lines[0].strip():
            lines = lines[1:]
    return "\n".join(lines)


def _outside(state: GraphState) -> list[str]:
    """Why a question the router sent to the web got no answer.

    What the knowledge base lacks, and why the web was not searched.
    """
    lacks = state.get("missing_terms") or []
    why = ["the question is outside the knowledge base"
           + (f" (it never mentions {', '.join(repr(w) for w in lacks[:4])})" if lacks else "")]
    if not state.get("web_searches"):
        why.append("no web search is configured" if not state.get("web_available") else "web search is off")
    return why


def fallback(state: GraphState, runtime: Runtime[RunContext]) -> dict:
    """Abstain: no evidence good enough to answer from; say why in plain words."""
    started = Clock.start()
    o = runtime.context.options
    why = []
    if state.get("out_of_time"):
        why.append(f"time budget ({runtime.context.budget_s():g} s) spent")
    if state.get("datasource") == "web" and not state.get("documents"):
        why += _outside(state)
    elif not state.get("retrieved") and not state.get("queries"):
        why.append("nothing was retrieved")
    elif not state.get("retrieved"):
        why.append("the knowledge base returned no chunks")
    elif o.grading and not state.get("documents"):
        why.append("no retrieved chunk was relevant")
    elif not state.get("citations") and state.get("generations"):
        why.append("the answer could cite no evidence")
    if o.rewriting and state.get("rewrites"):
        why.append(f"after {state['rewrites']} rewrite(s)"
                   + (", the last of which retrieved the same chunks again"
                      if state.get("repeated_retrieval") else ""))
    if state.get("web_note"):
        why.append(f"web search {state['web_note']}")
    reason = "No answer: " + ("; ".join(why) if why else "no evidence")
    return record(state, runtime, "fallback", started, reason,
                  EndDetail(stop_reason=reason, out_of_time=bool(state.get("out_of_time"))),
                   {"final_answer": f"{NO_ANSWER} ({'; '.join(why) or 'no evidence'}.)",
                    "stop_reason": reason, "citations": []})
