"""Reference beam searches for the fixtures in tests/fixtures/beam/.

Written from the rules of issue 13, not from any library. A decoder is seen
only through `logprobs(prefix) -> sequence of natural-log probabilities` for
the next token after `prefix` (the emitted ids so far, start token excluded).

Conventions shared by both variants
-----------------------------------
* score  = sum of natural-log probabilities of the hypothesis's tokens
           (float64 sums, in step order).
* length = number of decoder steps that produced the hypothesis = its tokens
           *including* the end token, start token excluded. A finished
           hypothesis keeps the length it had when the end token was chosen;
           one cut at the step cap has length `max_steps`. Length is >= 1 for
           every hypothesis that can be returned, so `score / length**alpha`
           is always defined.
* ranking of the candidates of a step: higher score first; ties by the lower
           token id, then by the earlier parent hypothesis (slot order).
* gaps:    every decision that a re-implementation could take differently is
           logged with its margin, in natural-log (score) units; `min_gap` is
           the smallest over the whole search, the final choice included.

In-slot (`in_slot`)
-------------------
K slots. Step 1 expands the start hypothesis alone. At each step every live
slot proposes every token (score + log p); every finished slot proposes only
itself extended by PAD (token id `pad`, score and length unchanged). The K best
proposals by the ranking above fill the slots, in ranking order. Choosing the
end token finishes a hypothesis. The search runs `max_steps` steps, or stops
earlier once every slot is finished (nothing can change after that). The
result is the slot with the best `score / length**alpha`, ties to the earlier
slot; unfinished slots (cut at the cap) take part.

Finished-set (`finished_set`)
-----------------------------
K live hypotheses and a finished set of at most K. At each step every live
hypothesis proposes every token; the proposals are ranked as above and walked
in rank order: an end-token proposal is offered to the finished set if its
rank is below K (one that would have been selected), otherwise dropped; any
other proposal joins the next live beam until it holds K. Offering: a set with
fewer than K entries takes the hypothesis; a full set replaces its worst entry
(lowest `score / length**alpha`, ties: the later-inserted is worse) only if the
newcomer is strictly better. After the walk, once the set is full, the search
stops if no live hypothesis beats the worst finished one, i.e. if
`max(live score / live length**alpha) <= worst finished`, the live length being
its current length (as if it ended now; the Hugging Face default,
`early_stopping=False`). If `max_steps` steps pass without that stop, the live
hypotheses are offered (unfinished, length `max_steps`) in slot order. The
result is the best entry of the set, ties to the earlier inserted.

With K = 1 both variants are greedy decoding (argmax, lowest id on ties).

Netra's rule (`netra_package_rule`)
-----------------------------------
A re-statement of `Transliterator._beam_search` + `transliterate` of
netra-transliterate 1.0.1 (see tests/fixtures/beam/README.md), run to log its
decision gaps; `netra_beam.py` checks it returns exactly the beams the package
itself returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

LogProbs = Callable[[tuple], Sequence[float]]


@dataclass(frozen=True)
class Hyp:
    tokens: tuple      # emitted ids, start excluded, end id included if finished
    score: float       # sum of natural-log probabilities of `tokens`
    finished: bool     # ended with the end token

    @property
    def length(self) -> int:
        return len(self.tokens)


def normalised(h: Hyp, alpha: float) -> float:
    return h.score / (h.length ** alpha)


def gap(a: float, b: float) -> float:
    """|a - b|, with equal values (including two -inf) giving 0."""
    return 0.0 if a == b else abs(a - b)


class Gaps:
    """Smallest decision margin of one search, with the step where it happened."""

    def __init__(self) -> None:
        self.min = math.inf
        self.at = "-"
        self.final = math.inf

    def note(self, value: float, at) -> None:
        if value < self.min:
            self.min, self.at = value, str(at)

    def note_final(self, value: float) -> None:
        self.final = value
        self.note(value, "final")


@dataclass
class Result:
    best: Hyp
    gaps: Gaps
    steps: int         # decoder steps run (one per expansion round)
    calls: int         # hypotheses expanded (decoder calls)


def _proposals(live: list[Hyp], logprobs: LogProbs, end: int) -> list[tuple]:
    """(-score, token, parent, hyp) for every token of every live hypothesis."""
    out = []
    for i, h in enumerate(live):
        lp = logprobs(h.tokens)
        for v in range(len(lp)):
            s = h.score + float(lp[v])
            out.append((-s, v, i, Hyp(h.tokens + (v,), s, v == end)))
    return out


def _rank_key(c: tuple) -> tuple:
    return c[:3]


def in_slot(logprobs: LogProbs, k: int, max_steps: int, end: int, pad: int,
            alpha: float = 1.0) -> Result:
    slots = [Hyp((), 0.0, False)]
    gaps, calls, step = Gaps(), 0, 0
    for step in range(1, max_steps + 1):
        if all(h.finished for h in slots):
            step -= 1
            break
        cands = []
        for i, h in enumerate(slots):
            if h.finished:
                cands.append((-h.score, pad, i, h))
            else:
                calls += 1
                cands += [(c[0], c[1], i, c[3]) for c in _proposals([h], logprobs, end)]
        cands.sort(key=_rank_key)
        if len(cands) > k:
            gaps.note(gap(cands[k - 1][0], cands[k][0]), step)
        slots = [c[3] for c in cands[:k]]
    order = sorted(range(len(slots)), key=lambda i: (-normalised(slots[i], alpha), i))
    if len(order) > 1:
        gaps.note_final(gap(normalised(slots[order[0]], alpha), normalised(slots[order[1]], alpha)))
    return Result(slots[order[0]], gaps, step, calls)


def finished_set(logprobs: LogProbs, k: int, max_steps: int, end: int,
                 alpha: float = 1.0, early_stop: bool = True) -> Result:
    """`early_stop=False` runs to the cap (used by `self_check` only)."""
    live = [Hyp((), 0.0, False)]
    done: list[tuple] = []  # (normalised score, insertion number, hyp)
    gaps, calls, inserted = Gaps(), 0, 0

    def worst_index() -> int:
        return max(range(len(done)), key=lambda i: (-done[i][0], done[i][1]))

    def offer(h: Hyp, step) -> None:
        nonlocal inserted
        n = normalised(h, alpha)
        if len(done) < k:
            done.append((n, inserted, h))
        else:
            w = worst_index()
            gaps.note(gap(n, done[w][0]), step)
            if n > done[w][0]:
                others = sorted(e[0] for i, e in enumerate(done) if i != w)
                if others:  # which entry is evicted matters only if it is near another
                    gaps.note(gap(others[0], done[w][0]), step)
                done[w] = (n, inserted, h)
        inserted += 1

    stopped = False
    step = 0
    for step in range(1, max_steps + 1):
        calls += len(live)
        cands = sorted(_proposals(live, logprobs, end), key=_rank_key)
        if len(cands) > k and (cands[k - 1][1] == end or cands[k][1] == end):
            gaps.note(gap(cands[k - 1][0], cands[k][0]), step)
        nxt = []
        non_end = [c for c in cands if c[1] != end]
        for rank, c in enumerate(cands):
            if c[1] == end:
                if rank < k:
                    offer(c[3], step)
            elif len(nxt) < k:
                nxt.append(c[3])
            if rank >= k and len(nxt) == k:
                break
        if len(non_end) > k:
            gaps.note(gap(non_end[k - 1][0], non_end[k][0]), step)
        live = nxt
        if len(done) == k:
            best_live = max(normalised(h, alpha) for h in live)
            worst = done[worst_index()][0]
            gaps.note(gap(best_live, worst), step)
            if best_live <= worst and early_stop:
                stopped = True
                break
    if not stopped:
        for h in live:
            offer(h, "cap")
    order = sorted(done, key=lambda e: (-e[0], e[1]))
    if len(order) > 1:
        gaps.note_final(gap(order[0][0], order[1][0]))
    return Result(order[0][2], gaps, step, calls)


# --------------------------------------------------------------------------
# netra-transliterate 1.0.1's own rule, re-stated to log its decision gaps
# --------------------------------------------------------------------------

PRUNE = 1e-8  # the package's `token_prob <= 1e-8` threshold


def _ln(p) -> float:
    p = float(p)
    return math.log(p) if p > 0.0 else -math.inf


@dataclass
class NetraResult:
    all_beams: list          # [(seq incl. start, prob)] as the package returns them
    best: tuple              # max(all_beams, key=prob), first maximum
    best_index: int
    gaps: Gaps
    steps: int
    calls: int


def netra_package_rule(probs: Callable[[tuple], np.ndarray], beam_width: int, max_length: int,
                       start: int, end: int, float64_products: bool = False) -> NetraResult:
    """`_beam_search` + the `max` of `transliterate`, statement by statement.

    `probs(prefix)` is the decoder's float32 softmax for the next token after
    `prefix` (ids after the start token). Products are formed exactly as the
    package forms them (Python float 1.0 times numpy float32 values); with
    `float64_products` they are formed in float64 instead, as NumPy 1.x's
    promotion rules would have done.
    """
    gaps, calls, step = Gaps(), 0, 0
    beams = [([start], 1.0)]
    finished = []
    ln_prune = math.log(PRUNE)
    for step in range(1, max_length + 1):
        if not beams:
            step -= 1
            break
        new_beams = []
        for seq, prob in beams:
            calls += 1
            p = probs(tuple(seq[1:]))
            desc = np.sort(p)[::-1]
            if len(desc) > beam_width:
                gaps.note(gap(_ln(desc[beam_width - 1]), _ln(desc[beam_width])), step)
            for idx in np.argsort(p)[-beam_width:]:  # the package's own call
                token_prob = p[idx]
                gaps.note(gap(_ln(token_prob), ln_prune), step)
                if token_prob <= PRUNE:
                    continue
                new_seq = seq + [int(idx)]
                new_prob = float(prob) * float(token_prob) if float64_products else prob * token_prob
                is_done = int(idx) == end or len(new_seq) >= max_length
                (finished if is_done else new_beams).append((new_seq, new_prob))
        ranked = sorted(new_beams, key=lambda b: b[1], reverse=True)
        if len(ranked) > beam_width:
            gaps.note(gap(_ln(ranked[beam_width - 1][1]), _ln(ranked[beam_width][1])), step)
        beams = ranked[:beam_width]
        if len(finished) >= beam_width:
            break
    all_beams = finished + beams
    best_index = max(range(len(all_beams)), key=lambda i: all_beams[i][1])  # first maximum
    if len(all_beams) > 1:
        probs_desc = sorted((b[1] for b in all_beams), reverse=True)
        gaps.note_final(gap(_ln(probs_desc[0]), _ln(probs_desc[1])))
    return NetraResult(all_beams, all_beams[best_index], best_index, gaps, step, calls)


# --------------------------------------------------------------------------
# Fixture formatting
# --------------------------------------------------------------------------


def fmt_gap(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"


def fmt_score(x: float) -> str:
    return "-inf" if math.isinf(x) else f"{x:.9g}"


def near_tie_counts(gaps: list[float]) -> dict:
    return {
        "exact_ties": sum(g == 0.0 for g in gaps),
        "below_1e-4": sum(g < 1e-4 for g in gaps),
        "below_1e-3": sum(g < 1e-3 for g in gaps),
    }


# --------------------------------------------------------------------------
# Self-check on toy decoders (run by the fixture scripts before the models)
# --------------------------------------------------------------------------


def self_check(trials: int = 200, vocab: int = 4, max_steps: int = 4, end: int = 1, pad: int = 0) -> None:
    """Beam 1 of both variants is greedy; a beam wide enough to hold every prefix
    finds the exhaustive optimum of score/length^alpha. Toy log-probabilities are a
    seeded function of the prefix; some trials round them to force exact ties."""
    import itertools
    import random

    for trial in range(trials):
        rng_seed = 7919 * trial + 1
        coarse = trial % 3 == 0  # few distinct values -> exact ties

        def logprobs(prefix, _seed=rng_seed, _coarse=coarse):
            r = random.Random(hash((_seed,) + prefix))
            w = [r.choice((1.0, 2.0)) if _coarse else r.random() + 0.05 for _ in range(vocab)]
            return [math.log(x / sum(w)) for x in w]

        alpha = (0.0, 0.5, 1.0)[trial % 3]
        # greedy, lowest id on ties
        toks, score = (), 0.0
        for _ in range(max_steps):
            lp = logprobs(toks)
            v = max(range(vocab), key=lambda t: (lp[t], -t))
            toks, score = toks + (v,), score + lp[v]
            if v == end:
                break
        for r in (in_slot(logprobs, 1, max_steps, end, pad, alpha),
                  finished_set(logprobs, 1, max_steps, end, alpha)):
            assert r.best.tokens == toks and r.best.score == score, (trial, r.best, toks)
        # exhaustive: every sequence that ends at `end`, or runs to the cap without it
        complete = []
        for n in range(1, max_steps + 1):
            for seq in itertools.product(range(vocab), repeat=n):
                if end in seq[:-1] or (n < max_steps and seq[-1] != end):
                    continue
                s = sum(logprobs(seq[:i])[t] for i, t in enumerate(seq))
                complete.append(s / n ** alpha)
        best = max(complete)
        wide = vocab ** max_steps
        for r in (in_slot(logprobs, wide, max_steps, end, pad, alpha),
                  finished_set(logprobs, wide, max_steps, end, alpha)):
            assert math.isclose(normalised(r.best, alpha), best, rel_tol=0, abs_tol=1e-12), (trial, r.best)
        # without length normalisation a live score only falls, so the stop rule is exact
        for k in (2, 3):
            stopped = finished_set(logprobs, k, max_steps, end, 0.0)
            full = finished_set(logprobs, k, max_steps, end, 0.0, early_stop=False)
            assert stopped.best == full.best, (trial, k, stopped.best, full.best)
