"""rewrite_query for the offline engine: pseudo-relevance feedback steered by what the grader missed."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from rag.engines.base import RewrittenQuery
from rag.engines.lexical import LexicalCore, _quote, constraints
from rag.models import Chunk, Verdict
from rag.text import STOPWORDS, stem, terms, words


class RewritingMixin(LexicalCore):
    """Query rewriting by pseudo-relevance feedback (Rocchio 1971; RM3, Lavrenko & Croft 2001)."""

    def _feedback_terms(self, chunks: Sequence[Chunk], exclude: set[str], n: int) -> list[str]:
        """Top ``n`` expansion words from ``chunks`` by tf x idf (pseudo-relevance feedback)."""
        score: Counter[str] = Counter()
        surface: dict[str, Counter[str]] = defaultdict(Counter)
        for rank, chunk in enumerate(chunks):
            rank_weight = 1.0 / (1 + rank)
            tf: Counter[str] = Counter()
            for w in words(chunk.text):
                if w in STOPWORDS or len(w) < 3 or w.isdigit() or not w.isalpha():
                    continue
                s = stem(w)
                if s in exclude:
                    continue
                tf[s] += 1
                surface[s][w] += 1
            for s, f in tf.items():
                if self.stats.df.get(s, 0) < 2 and self.stats.n_docs > 20:
                    continue  # hapaxes are usually extraction noise or typos
                score[s] += rank_weight * (1 + f ** 0.5) * self.stats.idf(s)
        return [surface[s].most_common(1)[0][0] for s, _ in score.most_common(n)]

    def rewrite(self, question: str, query: str, *, verdicts: Sequence[Verdict],
                chunks: Sequence[Chunk], ungrounded_claims: Sequence[str] = (),
                previous_queries: Sequence[str] = ()) -> RewrittenQuery:
        """A new query by pseudo-relevance feedback from the chunks graded relevant.

        (never from chunks graded irrelevant: their words would steer the search off topic).

        Strategies: ``add_context`` after a failed grounding check (terms of the ungrounded
        claims); ``expand_terms`` when some chunk was relevant (feedback terms from the
        relevant chunks); ``narrow_focus`` otherwise (the question's constraints and rarest
        terms, without its framing words). A query already tried is never returned: other
        forms are tried, and when none is new the current query comes back with a reasoning
        that starts "No new query" (retrieving again would return the same chunks).
        """
        weights = self.weighted_terms(question)
        q_stems = set(weights)
        seen_queries = {" ".join(q.lower().split()) for q in [*previous_queries, query]}
        relevant_ids = {v.chunk_id for v in verdicts if v.relevant}
        good = [c for c in chunks if c.id in relevant_ids]
        # Rank feedback chunks by how much of the question they cover, best first.
        ranked = sorted(good, key=lambda c: -self.coverage(weights, set(terms(c.text)))[0])
        present = set().union(*(set(terms(c.text)) for c in chunks)) if chunks else set()
        _, _, missing = self.coverage(weights, present)
        cons = constraints(question)
        con_stems = {t for c in cons for t in c.terms}
        rare = [w for s, (w, _) in sorted(weights.items(), key=lambda kv: -kv[1][1])
                if s not in con_stems]
        con_text = [c.text.rstrip("'’s") if c.text.endswith(("'s", "’s")) else c.text for c in cons]

        candidates: list[tuple[str, str, str]] = []  # (query, strategy, why)
        if ungrounded_claims:
            claim_weights: dict[str, tuple[str, float]] = {}
            for claim in ungrounded_claims:
                claim_weights.update(self.weighted_terms(claim, question=False))
            extra = [w for s, (w, _) in sorted(claim_weights.items(), key=lambda kv: -kv[1][1])
                     if s not in q_stems][:5]
            candidates.append((" ".join([question] + extra), "add_context", (
                f"The answer made {len(ungrounded_claims)} claim(s) its sources do not support; "
                f"searching for evidence on {_quote(extra)}.")))
        if ranked:
            for n in (4, 6, 8):
                extra = self._feedback_terms(ranked[:3], q_stems, n)
                if extra:
                    candidates.append((" ".join([question] + extra), "expand_terms", (
                        f"{len(good)} of {len(chunks)} chunks were relevant"
                        + (f"; no chunk matched {_quote(missing)}" if missing else "")
                        + f"; added {_quote(extra)} from the relevant chunks "
                          f"(pseudo-relevance feedback).")))
        why_none = ("No retrieved chunk was relevant, so no feedback terms are used; "
                    if not ranked else "")
        focus = list(dict.fromkeys(con_text + rare[:3]))
        if focus:
            candidates.append((" ".join(focus), "narrow_focus", (
                f"{why_none}searching for the question's "
                + (f"constraints {_quote(con_text)} and " if con_text else "")
                + f"rarest terms {_quote(rare[:3])}, without its framing words.")))
        if con_text and rare:
            candidates.append((" ".join(con_text + rare[:1]), "narrow_focus", (
                f"{why_none}searching for the question's constraints {_quote(con_text)} "
                f"with its rarest other term '{rare[0]}'.")))
        if con_text:
            candidates.append((" ".join(con_text), "narrow_focus", (
                f"{why_none}searching for the question's constraints {_quote(con_text)} alone.")))
        if rare:
            candidates.append((" ".join(rare[:4]), "rephrase_intent", (
                f"{why_none}searching for the question's rarest terms {_quote(rare[:4])}.")))
        for new_query, strategy, why in candidates:
            if " ".join(new_query.lower().split()) not in seen_queries:
                return RewrittenQuery(query=new_query, strategy=strategy, reasoning=why)
        return RewrittenQuery(query=query, strategy="narrow_focus", reasoning=(
            f"No new query: every form of the question ({len(seen_queries)} tried) has been "
            f"searched already; retrieving again would return the same chunks."))

