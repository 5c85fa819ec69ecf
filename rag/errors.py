"""Failed calls to model services (LLMs, embeddings) in plain words, for the engines and the store alike."""

from __future__ import annotations

from rag.secrets import scrub

TIME_SPENT = "time budget spent"
"""How a fallback reason begins when the run's time budget left no room for a call."""


def describe_error(exc: BaseException | None, timeout_s: float, *, waited_s: float | None = None,
                   attempts: int = 1) -> str:
    """A short plain-words reason for a failed LLM call, e.g. ``timeout after 20 s``.

    With retries it states the real wait: ``timeout after 61.2 s (3 attempts of 20 s)``. ``exc`` None
    means no attempt could be made: the run's time budget was spent. Never holds a key
    (:func:`rag.secrets.scrub`).
    """
    import openai
    from pydantic import ValidationError

    if exc is None:
        return TIME_SPENT + (f" after waiting {waited_s:.1f} s" if waited_s else "")
    if isinstance(exc, openai.APITimeoutError):
        if attempts > 1 and waited_s is not None:
            return f"timeout after {waited_s:.1f} s ({attempts} attempts of {timeout_s:g} s)"
        return f"timeout after {timeout_s:g} s"
    if isinstance(exc, openai.RateLimitError):
        return "rate limited (429) after retries"
    if isinstance(exc, openai.APIStatusError):
        return f"server error {exc.status_code}"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed (is the server running?)"
    if isinstance(exc, (ValidationError, ValueError)):
        return "unparsable structured output"
    return scrub(f"{type(exc).__name__}: {scrub(exc)}")[:120]
