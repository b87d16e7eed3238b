"""The bibliography (``simplexlab/_bibliography.py``, public as ``simplexlab.lab.BIBLIOGRAPHY``
and ``simplexlab.lab.cite``) is the one list of the papers: the README's list of papers is its
``cite(key, style="markdown")``, entry by entry, and the package's docstrings cite the papers by
its keys or aliases."""

import re
from pathlib import Path

import pytest

import simplexlab.lab as lab
from simplexlab._bibliography import BIBLIOGRAPHY, STYLES, Paper, cite

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
#: the README's list of papers: the bullet lines right after this comment
MARKER = "<!-- the list below is cite(key, style=\"markdown\") of every entry"


def _readme_list(text: str) -> list[str]:
    assert text.count(MARKER) == 1, "the README's bibliography marker is missing or repeated"
    after = text.split(MARKER, 1)[1].split("\n", 1)[1]
    lines = []
    for line in after.splitlines():
        if not line.startswith("- "):
            break
        lines.append(line[2:])
    return lines


def test_readme_lists_the_bibliography():
    expected = [cite(key, style="markdown") for key in BIBLIOGRAPHY]
    found = _readme_list(README)
    assert found == expected, (
        "README.md's list of papers differs from simplexlab/_bibliography.py; the list, to paste "
        "under the marker comment:\n" + "\n".join(f"- {line}" for line in expected))


def test_readme_check_can_fail():
    """The check above sees a changed title (a guard against a silent no-op)."""
    drifted = README.replace("Forget the Rare", "Forget the Rarest", 1)
    assert drifted != README
    assert _readme_list(drifted) != [cite(key, style="markdown") for key in BIBLIOGRAPHY]


def test_the_lab_face_serves_the_bibliography():
    assert lab.BIBLIOGRAPHY is BIBLIOGRAPHY and lab.cite is cite and lab.Paper is Paper
    assert {"BIBLIOGRAPHY", "Paper", "cite"} <= set(lab.__all__)


def test_entries_are_complete_where_known():
    assert list(BIBLIOGRAPHY) == ["G2", "SC", "FG", "TS", "PG"]
    for key, paper in BIBLIOGRAPHY.items():
        assert paper.key == key and paper.title
        assert paper.arxiv is None or re.fullmatch(r"\d{4}\.\d{4,5}", paper.arxiv), paper.arxiv
        assert paper.year is None or 1990 < paper.year < 2100
        assert (paper.url is None) == (paper.arxiv is None)
    aliases = [p.alias for p in BIBLIOGRAPHY.values() if p.alias]
    assert len(set(aliases)) == len(aliases) and not set(aliases) & set(BIBLIOGRAPHY)


def test_cite_styles():
    assert cite("FG") == (
        "Daniil Plyusov, Alexey Gorbatovski, Boris Shaposhnikov, Viacheslav Sinii, Alexey Malakhov "
        "and Daniil Gavrilov. F-GRPO: Don’t Let Your Policy Learn the Obvious and Forget the Rare. "
        "2026. arXiv:2602.06717.")
    assert cite("FG", style="short") == "Plyusov et al., 2026"
    assert cite("SC", style="short") == "Fan et al."  # no year in the paper's text: none given
    assert cite("TS", style="short") == "Anonymous authors"
    assert "[arXiv:2602.06717](https://arxiv.org/abs/2602.06717)" in cite("FG", style="markdown")
    assert "gives no year and no arXiv id" in cite("G2", style="markdown")
    for key, paper in BIBLIOGRAPHY.items():  # an alias cites the same paper as its key
        if paper.alias:
            assert all(cite(paper.alias, style=s) == cite(key, style=s) for s in STYLES)


@pytest.mark.parametrize("key, style", [("G3", "full"), ("g2", "full"), (None, "full"),
                                        ("G2", "bibtex")])
def test_cite_refuses_unknown_keys_and_styles(key, style):
    with pytest.raises(ValueError, match="unknown paper|style must be"):
        cite(key, style=style)


#: a paper cited by a two-letter token and a place in it: ``SC Thm 2.4``, ``TS §3``, ``FG eq. 15``
_CITATION = re.compile(r"\b([A-Z][A-Z0-9]) (?:§|eqs?\.|App\.|Alg\.|Algorithm|Fig\.|Figs\.|Table|"
                       r"Thm|Theorem|Lemma|Prop\.|Cor\.|Listing|Remark|Assumption|Def\.)")


def test_docstrings_cite_papers_by_key():
    """Every ``XX §…`` / ``XX eq. …`` / ``XX Thm …`` citation in the package names a key of the
    bibliography (``G²`` alone is not a key: ``G2`` or ``G²RPO``)."""
    found = []
    for path in sorted((ROOT / "simplexlab").rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT).as_posix()
        found += [f"{rel}: {m[0]!r}" for m in _CITATION.finditer(text) if m[1] not in BIBLIOGRAPHY]
        found += [f"{rel}: {m[0]!r}" for m in re.finditer(r"G² (?:§|App\.|eq\.|Alg|Listing)",
                                                          text)]
    assert not found, "\n".join(found)
    assert _CITATION.findall("SC Thm 2.4, TS §3, XY eq. 5") == ["SC", "TS", "XY"]
