"""A griffe extension for the API pages: an "Arguments" and a "Returns" block for every public
function and method, and a "Fields" block for every ``eqx.Module`` (and other annotated class),
built from the signature and from what the docstring's prose already says.

The lab's docstrings describe their parameters in running text, in three forms:
``name`` (what it is), ``name``: what it is; and, for a module's fields, bullets
``* name -- what it is``, or ``#:`` comments above the field. This extension reads those
phrases and appends Google-style ``Args:`` / ``Returns:`` / ``Attributes:`` sections to the
docstring (where it has none), so that mkdocstrings renders each parameter with its type and
default from the signature beside its description. A parameter the prose does not describe
still gets its row (name, type, default). Loaded by ``mkdocs.yml`` (the mkdocstrings handler's
``extensions``); it never changes the package.
"""

from __future__ import annotations

import re

import griffe

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Attributes|Fields):\s*$", re.M)
_SKIP = {"self", "cls"}


def _balanced(text: str, start: int) -> str | None:
    """The text inside the parentheses that open at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return None


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _close(desc: str) -> str:
    """``desc`` up to the first ``)`` that closes nothing inside it (the phrase sat in
    parentheses)."""
    depth = 0
    for i, c in enumerate(desc):
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return desc[:i]
    return desc


def _capital(desc: str) -> str:
    desc = _one_line(desc)
    return desc[:1].upper() + desc[1:] if desc[:1].isascii() and desc[:1].islower() else desc


def describe(name: str, text: str) -> str:
    """What ``text`` (a docstring) says of ``name``: the first of ``name`` (…), ``name``: …,
    or a bullet ``name`` -- …; ``""`` where it says nothing in these forms."""
    found = []
    code = re.escape(f"``{name}``")
    m = re.search(code + r"\s+--\s+(.+?)(?=\n\s*[*-]\s|\n\s*\n|\Z)", text, re.S)
    if m:
        found.append((m.start(), m[1]))
    for m in re.finditer(code + r"\s*\(", text):
        inner = _balanced(text, m.end() - 1)
        if inner:
            found.append((m.start(), inner))
            break
    m = re.search(code + r":\s+(.+?)(?=;|\.\s|\.\Z|\n\s*\n|\Z)", text, re.S)
    if m:
        found.append((m.start(), _close(m[1])))
    return _capital(min(found)[1]) if found else ""


#: words after which a full stop does not end a sentence ("eq. (5)", "Alg. 1", "e.g. this")
_ABBREV = ("eq", "eqs", "alg", "app", "thm", "fig", "figs", "sec", "e.g", "i.e", "cf", "vs",
           "lemma", "cor", "prop", "def", "no", "resp", "approx", "etc", "ref", "refs")


def _first_sentence(text: str) -> str:
    """The docstring's first sentence (abbreviations such as "eq." and "Alg." do not end one),
    up to its first top-level ``:`` or ``;`` (what follows there is detail)."""
    para = _one_line(text.strip().split("\n\n")[0])
    end = len(para)
    for m in re.finditer(r"\.(\s|$)", para):
        word = re.search(r"([\w.]+)$", para[:m.start()])
        if word and word[1].lower() in _ABBREV:
            continue
        end = m.start() + 1
        break
    sentence, depth, tick = para[:end], 0, False
    for i, c in enumerate(sentence):
        if c == "`":
            tick = not tick
        elif not tick:
            depth += (c == "(") - (c == ")")
            if depth == 0 and c in ":;" and i > 0:
                return sentence[:i]
    return sentence


def _returns(text: str) -> str:
    m = re.search(r"\bReturns?\s+(.+?)(?:\.\s|\.\Z|\n\s*\n|\Z)", text, re.S)
    return _capital(m[1]) if m else _capital(_first_sentence(text))


def _field_comment(cls: griffe.Class, attr: griffe.Attribute) -> str:
    """The ``#:`` comment lines right above the field's line, joined."""
    try:
        lines = cls.module.lines
    except (AttributeError, OSError):
        return ""
    out, i = [], (attr.lineno or 0) - 2
    while i >= 0 and lines[i].strip().startswith("#:"):
        out.insert(0, lines[i].strip()[2:].strip())
        i -= 1
    return _one_line(" ".join(out))


def _append(doc: griffe.Docstring, title: str, rows: list[str]) -> None:
    if rows:
        doc.value = doc.value.rstrip() + f"\n\n{title}:\n" + "\n".join(
            f"    {r}" for r in rows) + "\n"


def _has(doc: griffe.Docstring, *titles: str) -> bool:
    return any(m[1] in titles for m in _SECTION.finditer(doc.value))


def _function(func: griffe.Function) -> None:
    doc = func.docstring
    if doc is None:
        return
    text = doc.value
    ret = func.returns
    if not _has(doc, "Returns") and func.name != "__init__" and not (
            ret is not None and str(ret) == "None"):
        returns = _returns(text)
    else:
        returns = None
    if _has(doc, "Args", "Arguments", "Parameters"):  # written by hand: kept as it is
        if returns is not None:
            _append(doc, "Returns", [returns])
        return
    rows = []
    for p in func.parameters:
        if p.name in _SKIP or p.name.startswith("_"):
            continue
        star = "*" if p.kind is griffe.ParameterKind.var_positional else (
            "**" if p.kind is griffe.ParameterKind.var_keyword else "")
        rows.append(f"{star}{p.name}: {describe(p.name, text) or '—'}")
    _append(doc, "Args", rows)
    if returns is not None:
        _append(doc, "Returns", [returns])


def _is_field(attr) -> bool:
    if not isinstance(attr, griffe.Attribute) or attr.name.startswith("_"):
        return False
    return attr.annotation is not None and "instance-attribute" in attr.labels


def _class(cls: griffe.Class) -> None:
    doc = cls.docstring
    if doc is None or _has(doc, "Attributes", "Fields"):
        return
    fields = [m for m in cls.members.values() if not m.is_alias and _is_field(m)]
    rows = []
    for f in fields:
        desc = describe(f.name, doc.value) or _field_comment(cls, f)
        if not desc and f.docstring is not None:
            desc = _first_sentence(f.docstring.value)
        rows.append(f"{f.name}: {desc or '—'}")
    _append(doc, "Attributes", rows)


class ArgumentsAndReturns(griffe.Extension):
    """Appends the Arguments / Returns / Fields sections (module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.name != "simplexlab":
            return
        seen: set[int] = set()

        def walk(obj):
            for member in list(obj.members.values()):
                if member.is_alias or id(member) in seen:
                    continue
                seen.add(id(member))
                if member.is_function:
                    _function(member)
                elif member.is_class:
                    _class(member)
                    walk(member)
                elif member.is_module:
                    walk(member)

        walk(pkg)
