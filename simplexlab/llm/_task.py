r"""The embedded verifiable task: write an expression over digits that equals a target.

A prompt is ``<bos> n =`` with a target digit ``n ∈ {1, …, 9}``; a completion is at most
``max_new_tokens`` tokens ended by ``<eos>``. The verifier parses it; every completion falls into
exactly one labelled mode (no clustering needed, so ``p̂``, ``ŷ``, ``L_y``, ``K̂`` are exact):

====  ===========  ============================================  =========================
id    family       correct when                                   example for ``n = 6``
====  ===========  ============================================  =========================
0     literal      the single digit ``n``                          ``6``
1     sum          ``a+b`` with ``a + b = n``                      ``2+4``
2     difference   ``a-b`` with ``a − b = n``                      ``9-3``
3     product      ``a*b`` with ``a · b = n``                      ``2*3``
====  ===========  ============================================  =========================

These are the ``K = 4`` good modes. An incorrect completion is labelled by the family it tried
(ids 4–7: a wrong literal, sum, difference or product) or 8 (malformed): ``M = 5`` bad modes. So
the mode of a completion is what G²RPO Algorithm 1's clustering is meant to recover, here given
exactly. Every target has at least one correct answer in each family (``n+0``, ``n-0``, ``n*1``).

The warm-start distribution (:meth:`ArithmeticTask.warm_start_batch`) samples the families with
unequal frequencies ``family_weights`` and an incorrect answer with probability ``p_wrong``, so
the policy starts with several correct families of unequal mass -- the setting in which GRPO
collapses onto the largest (G2 §3) and G²RPO is meant to keep them.

Plain Python and torch (no JAX): token ids in, labels out.
"""

from __future__ import annotations

import dataclasses
import functools
import random

__all__ = ["ArithmeticTask", "FAMILIES"]

PAD, BOS, EOS, EQ, PLUS, MINUS, TIMES = range(7)
DIGIT0 = 7
VOCAB = ("<pad>", "<bos>", "<eos>", "=", "+", "-", "*") + tuple("0123456789")
FAMILIES = ("literal", "sum", "difference", "product")
"""The four correct answer families of :class:`ArithmeticTask` (good modes 0–3): ``6``,
``2+4``, ``9-3``, ``2*3``."""
OPS = {PLUS: 1, MINUS: 2, TIMES: 3}
_APPLY = {1: lambda a, b: a + b, 2: lambda a, b: a - b, 3: lambda a, b: a * b}
MALFORMED = 8


@dataclasses.dataclass(frozen=True)
class ArithmeticTask:
    """The task's configuration (keyword-only): ``targets`` (digits 1–9), ``family_weights``
    (warm-start frequencies of the four correct families), ``p_wrong`` (warm-start probability
    of an incorrect answer), ``max_new_tokens``."""

    targets: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9)
    family_weights: tuple[float, ...] = (0.55, 0.25, 0.13, 0.07)
    p_wrong: float = 0.4
    max_new_tokens: int = 4

    name = "arithmetic"
    K = len(FAMILIES)
    M = 5
    vocab = VOCAB

    def __post_init__(self):
        if not self.targets or any(not isinstance(n, int) or not 1 <= n <= 9
                                   for n in self.targets):
            raise ValueError(f"targets must be digits in 1..9; got {self.targets!r}")
        w = self.family_weights
        if len(w) != self.K or any(not x >= 0 for x in w) or not sum(w) > 0:
            raise ValueError(f"family_weights must be {self.K} non-negative numbers with a "
                             f"positive sum; got {w!r}")
        if not 0.0 <= self.p_wrong < 1.0:
            raise ValueError(f"p_wrong must lie in [0, 1); got {self.p_wrong!r}")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 4:
            raise ValueError(f"max_new_tokens must be an integer >= 4 (a+b<eos>); got "
                             f"{self.max_new_tokens!r}")

    @property
    def num_modes(self) -> int:
        return self.K + self.M

    @property
    def vocab_size(self) -> int:
        return len(VOCAB)

    # ---- prompts and answers -------------------------------------------------------------

    @staticmethod
    def prompt(n: int) -> list[int]:
        return [BOS, DIGIT0 + n, EQ]

    def prompts(self, count: int, rng: random.Random) -> list[int]:
        """``count`` targets drawn uniformly (with replacement) from :attr:`targets`."""
        return [rng.choice(self.targets) for _ in range(count)]

    @staticmethod
    def correct_answers(n: int, family: int) -> list[list[int]]:
        """Every correct completion (without ``<eos>``) of target ``n`` in ``family``."""
        if family == 0:
            return [[DIGIT0 + n]]
        op = {1: PLUS, 2: MINUS, 3: TIMES}[family]
        return [[DIGIT0 + a, op, DIGIT0 + b] for a in range(10) for b in range(10)
                if _APPLY[family](a, b) == n]

    @staticmethod
    def wrong_answers(n: int, family: int) -> list[list[int]]:
        """Every well-formed incorrect completion of ``n`` that tries ``family``."""
        if family == 0:
            return [[DIGIT0 + d] for d in range(10) if d != n]
        op = {1: PLUS, 2: MINUS, 3: TIMES}[family]
        return [[DIGIT0 + a, op, DIGIT0 + b] for a in range(10) for b in range(10)
                if _APPLY[family](a, b) != n]

    def warm_start_batch(self, count: int, rng: random.Random) -> list[list[int]]:
        """``count`` full sequences (prompt + answer + ``<eos>``) from the warm-start
        distribution: a correct answer of family ``j`` with probability ``(1 − p_wrong) w_j``
        (uniform within the family), an incorrect one of a uniform family otherwise."""
        out = []
        for n in self.prompts(count, rng):
            if rng.random() < self.p_wrong:
                ans = rng.choice(self.wrong_answers(n, rng.randrange(self.K)))
            else:
                fam = rng.choices(range(self.K), weights=self.family_weights)[0]
                ans = rng.choice(self.correct_answers(n, fam))
            out.append(self.prompt(n) + ans + [EOS])
        return out

    # ---- the verifier --------------------------------------------------------------------

    def label(self, n: int, completion) -> tuple[int, int]:
        """``(reward, mode)`` of a completion (token ids after the prompt): the tokens up to the
        first ``<eos>`` (none: malformed) parsed as a digit or ``digit op digit``."""
        toks = [int(t) for t in completion]
        if EOS not in toks:
            return 0, MALFORMED
        body = toks[: toks.index(EOS)]
        digit = [DIGIT0 <= t < DIGIT0 + 10 for t in body]
        if len(body) == 1 and digit[0]:
            ok = body[0] - DIGIT0 == n
            return (1, 0) if ok else (0, self.K + 0)
        if len(body) == 3 and digit[0] and digit[2] and body[1] in OPS:
            fam = OPS[body[1]]
            ok = _APPLY[fam](body[0] - DIGIT0, body[2] - DIGIT0) == n
            return (1, fam) if ok else (0, self.K + fam)
        return 0, MALFORMED

    def completions(self) -> list[list[int]]:
        """Every well-formed completion (body + ``<eos>``, padded to ``max_new_tokens``): 10
        literals and 100 of each operator."""
        seqs = [[DIGIT0 + d, EOS] for d in range(10)]
        seqs += [[DIGIT0 + a, op, DIGIT0 + b, EOS] for op in OPS for a in range(10)
                 for b in range(10)]
        return [s + [PAD] * (self.max_new_tokens - len(s)) for s in seqs]

    @functools.cached_property
    def _enumeration(self):
        """What :meth:`mode_probabilities` scores, built once: every (target, completion)
        sequence, the mask of its answer tokens and its mode (the verifier's label)."""
        import numpy as np
        import torch

        seqs = self.completions()
        lens = [s.index(EOS) + 1 for s in seqs]
        x = torch.tensor([self.prompt(n) + s for n in self.targets for s in seqs])
        T = self.max_new_tokens
        mask = torch.tensor([[t < L for t in range(T)] for L in lens] * len(self.targets))
        modes = np.asarray([[self.label(n, s)[1] for s in seqs] for n in self.targets])
        return x, mask, modes

    def mode_probabilities(self, model):
        """The policy's exact mode masses ``(len(targets), K + M)`` (temperature 1): every
        well-formed completion's probability (product of its token probabilities, one batched
        forward pass), summed by mode; the malformed mode gets the rest."""
        import numpy as np
        import torch

        x, mask, modes = self._enumeration
        plen = len(self.prompt(1))
        was = model.training
        model.eval()
        with torch.no_grad():
            logits = model(x, attention_mask=torch.ones_like(x)).logits[:, plen - 1:-1].double()
            logp = torch.log_softmax(logits, -1).gather(-1, x[:, plen:, None])[..., 0]
        model.train(was)
        prob = torch.exp((logp * mask).sum(-1)).numpy().reshape(modes.shape)
        out = np.zeros((len(self.targets), self.num_modes))
        rows = np.broadcast_to(np.arange(len(self.targets))[:, None], modes.shape)
        np.add.at(out, (rows, modes), prob)  # in completion order, as a loop would
        out[:, MALFORMED] = np.maximum(0.0, 1.0 - out[:, :MALFORMED].sum(-1))
        return out

    def decode(self, tokens) -> str:
        return "".join(VOCAB[int(t)] if int(t) >= DIGIT0 or int(t) in (EQ, PLUS, MINUS, TIMES)
                       else "" if int(t) == PAD else VOCAB[int(t)] for t in tokens)
