"""The bibliography: the papers the lab implements, one entry each, under a short key.

Docstrings, figures and the claims cite a paper by its key -- ``"SC Thm 2.4"``, ``"TS §3"`` -- or,
for the three papers named after their method, by that name, the entry's ``alias``:
``"G²RPO eq. (56)"``, ``"F-GRPO App. J"``, ``"ProGRPO"``. Equation, figure and section numbers are
the papers' own.

Authors, titles, years and arXiv ids are copied from the papers' texts the lab was built from; a
year or an arXiv id that a text does not give is ``None``, never guessed. The README's list of
papers is :func:`cite` (``style="markdown"``) of every entry, in this order
(``tests/test_bibliography.py`` fails when the two drift apart), and the documentation site
includes that list.

A base module: it imports nothing, so any layer may use it; the public address of its names is
:mod:`simplexlab.lab`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BIBLIOGRAPHY", "STYLES", "Paper", "cite"]


@dataclass(frozen=True)
class Paper:
    """One paper of the bibliography.

    ``key``: its short key (``"FG"``); ``alias``: the method name the code also cites it by
    (``"F-GRPO"``), or ``None``; ``authors``: in the paper's order, empty for an anonymous
    submission; ``title`` and ``subtitle`` as the paper writes them (``subtitle``: a second title
    line, or ``None``); ``year`` and ``arxiv`` (the arXiv identifier, ``"2602.06717"``): ``None``
    where the paper's text does not give them; ``note``: what else the text says of its status, or
    ``None``."""

    key: str
    alias: str | None
    authors: tuple[str, ...]
    title: str
    subtitle: str | None
    year: int | None
    arxiv: str | None
    note: str | None = None

    @property
    def full_title(self) -> str:
        """The title, followed by the subtitle when there is one."""
        return f"{self.title}. {self.subtitle}" if self.subtitle else self.title

    @property
    def url(self) -> str | None:
        """The paper's arXiv page, or ``None`` without an arXiv id."""
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else None


BIBLIOGRAPHY: dict[str, Paper] = {p.key: p for p in (
    Paper(key="G2", alias="G²RPO",
          authors=("Ali Rad", "Khashayar Filom", "Darioush Keivan", "Peyman Mohajerin Esfahani",
                   "Ehsan Kamalinejad"),
          title="G²RPO: Geometric GRPO",
          subtitle="Escaping LLM’s Reasoning Rut to Break Accuracy–Entropy Trade-off",
          year=None, arxiv=None),
    Paper(key="SC", alias=None,
          authors=("Mingyuan Fan", "Weiguang Han", "Daixin Wang", "Cen Chen", "Zhiqiang Zhang",
                   "Jun Zhou"),
          title="When Sharpening Becomes Collapse: Sampling Bias and Semantic Coupling in RL with "
                "Verifiable Rewards",
          subtitle=None, year=None, arxiv=None),
    Paper(key="FG", alias="F-GRPO",
          authors=("Daniil Plyusov", "Alexey Gorbatovski", "Boris Shaposhnikov",
                   "Viacheslav Sinii", "Alexey Malakhov", "Daniil Gavrilov"),
          title="F-GRPO: Don’t Let Your Policy Learn the Obvious and Forget the Rare",
          subtitle=None, year=2026, arxiv="2602.06717"),
    Paper(key="TS", alias=None, authors=(),
          title="The Debate on RLVR Reasoning Capability Boundary: Shrinkage, Expansion, or "
                "Both? A Two-Stage Dynamic View",
          subtitle=None, year=None, arxiv=None,
          note="anonymous submission, under double-blind review"),
    Paper(key="PG", alias="ProGRPO",
          authors=("Pengyi Li", "Elizaveta Goncharova", "Andrey Kuznetsov", "Ivan Oseledets"),
          title="Back to Basics: Revisiting Exploration in Reinforcement Learning for LLM "
                "Reasoning via Generative Probabilities",
          subtitle=None, year=None, arxiv=None),
)}
"""Key -> :class:`Paper`, one entry per paper the lab implements, in the order of the README's
list: ``G2`` (G²RPO), ``SC`` (sharpening collapse), ``FG`` (F-GRPO), ``TS`` (two-stage RLVR),
``PG`` (ProGRPO)."""

STYLES = ("full", "short", "markdown")
"""The styles of :func:`cite`."""


def _paper(key: str) -> Paper:
    if isinstance(key, str):
        if key in BIBLIOGRAPHY:
            return BIBLIOGRAPHY[key]
        for paper in BIBLIOGRAPHY.values():
            if paper.alias == key:
                return paper
    names = ", ".join(f"{p.key}" + (f" ({p.alias})" if p.alias else "")
                      for p in BIBLIOGRAPHY.values())
    raise ValueError(f"unknown paper {key!r}: a key or alias of the bibliography, one of {names}")


def _authors(paper: Paper) -> str:
    if not paper.authors:
        return "Anonymous authors"
    if len(paper.authors) == 1:
        return paper.authors[0]
    return ", ".join(paper.authors[:-1]) + " and " + paper.authors[-1]


def cite(key: str, *, style: str = "full") -> str:
    """The citation of the paper with key (or alias) ``key``.

    ``style``: ``"full"`` -- authors, title, year and arXiv id, as much as is known
    (``cite("FG")`` -> ``"Daniil Plyusov, ... and Daniil Gavrilov. F-GRPO: Don’t Let Your Policy
    Learn the Obvious and Forget the Rare. 2026. arXiv:2602.06717."``); ``"short"`` -- first author
    and year (``"Plyusov et al., 2026"``; ``"Anonymous authors"`` for an anonymous submission);
    ``"markdown"`` -- the README's line: the key in bold, the alias, the full reference with the
    title in italics and the arXiv id as a link, and what the paper's text does not give.

    Raises ``ValueError`` for a key that is neither a key nor an alias of :data:`BIBLIOGRAPHY`,
    or an unknown ``style``."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}; got {style!r}")
    paper = _paper(key)
    if style == "short":
        if not paper.authors:
            who = "Anonymous authors"
        else:
            last = paper.authors[0].split()[-1]
            who = last if len(paper.authors) == 1 else f"{last} et al."
        return f"{who}, {paper.year}" if paper.year is not None else who
    if style == "full":
        parts = [_authors(paper), paper.full_title]
        parts += [str(paper.year)] if paper.year is not None else []
        parts += [f"arXiv:{paper.arxiv}"] if paper.arxiv else []
        parts += [paper.note[0].upper() + paper.note[1:]] if paper.note else []
        return ". ".join(parts) + "."
    head = f"**{paper.key}**" + (f" ({paper.alias})" if paper.alias else "")
    parts = [_authors(paper), f"*{paper.full_title}*"]
    parts += [str(paper.year)] if paper.year is not None else []
    parts += [f"[arXiv:{paper.arxiv}]({paper.url})"] if paper.arxiv else []
    parts += [paper.note[0].upper() + paper.note[1:]] if paper.note else []
    missing = [what for what, value in (("year", paper.year), ("arXiv id", paper.arxiv))
               if value is None]
    if missing:
        parts.append(f"The paper's text gives no {' and no '.join(missing)}")
    return f"{head}: " + ". ".join(parts) + "."
