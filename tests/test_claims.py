"""Claims as code (``simplexlab.lab._claims``, ``experiments/claims/``): the registry, the
statistics, the report files and their reader, bad names, and for a few claims a deliberately
broken setting that flips the status (each criterion can fail)."""

import json
import re

import numpy as np
import pytest
from scipy import stats

from simplexlab import lab
from simplexlab.lab import ClaimContext, main
from simplexlab.lab._claims import SCHEMA, load_claims, select_claims
from simplexlab.lab._report import write_report
from simplexlab.lab._stats import (
    boundary_text,
    combine,
    first_event,
    mean_ci,
    restricted_mean,
    side,
)

PAPERS = {"TS", "SC", "FG", "G2", "PG", "LLM", "SL"}


@pytest.fixture(scope="module")
def claims():
    return load_claims()


def test_registry_has_every_field_and_unique_kebab_names(claims):
    assert len(claims) >= 25
    names = list(claims)
    assert len(set(names)) == len(names)
    experiments = set(lab.load_experiments())
    for name, c in claims.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
        assert c.paper in PAPERS and c.source and len(c.sentence) > 20
        assert c.experiment in experiments, (name, c.experiment)
        assert isinstance(c.paper_setting, dict) and c.paper_setting
        assert isinstance(c.grid, dict) and c.grid
        assert callable(c.evaluate)
    assert {c.paper for c in claims.values()} == PAPERS


def test_statistics_against_independent_computations():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    m, lo, hi = mean_ci(x)
    half = stats.t.ppf(0.975, 3) * x.std(ddof=1) / 2.0
    assert m == pytest.approx(3.5) and (lo, hi) == pytest.approx((3.5 - half, 3.5 + half))
    series = np.array([[0.1, 0.5, 0.96, 0.99], [0.1, 0.2, 0.3, 0.4]])
    t = first_event(series, [0, 10, 20, 30], 0.95)
    assert t[0] == 20 and np.isinf(t[1])  # the second run is censored, not an event
    rm, _, _ = restricted_mean(t, 30.0)
    assert rm == pytest.approx((20 + 30) / 2)  # a censored run counts its full horizon
    assert side(0.1, 0.2, 0.3) == "yes" and side(-0.1, 0.2, 0.3) == "partly"
    assert side(-0.3, -0.2, -0.1) == "no" and side(-0.3, -0.2, -0.1, -1) == "yes"
    assert combine(["yes", "yes"]) == "yes" and combine(["no"]) == "no"
    assert combine(["yes", "no"]) == "partly"
    b = boundary_text({"gain": [1, 2, 3], "G": [4, 16]}, [[False, False], [False, True],
                                                         [False, True]], along="gain")
    assert b == "never for gain in [1, 3] at G = 4; needs gain ≥ 2 at G = 16"


def _entry(name, status, frac, experiment="collision"):
    return {"name": name, "paper": "G2", "source": "Fig. 3", "sentence": "s",
            "experiment": experiment, "holds_at_paper": status, "effect": 0.1,
            "ci": [0.0, 0.2], "robustness_fraction": frac, "boundary": "b",
            "paper_setting": {"G": 16},
            "grid": {"axes": {"G": [4, 16]}, "holds": [False, True], "effect": None}}


def test_report_files_parse_and_the_status_reader_reads_them(tmp_path, claims):
    a, b = list(claims)[:2]
    write_report([_entry(a, "yes", 0.64), _entry(b, "partly", 0.2, "neutrality")], tmp_path,
                 quick=True)
    rep = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert rep["mode"] == "quick" and "git_revision" in rep["provenance"]
    assert all(k in e for e in rep["claims"] for k in SCHEMA)
    md = (tmp_path / "claims" / "claims.md").read_text()
    assert f"`{a}`" in md and f"`{b}`" in md
    assert (tmp_path / "claims" / "robustness_G2.png").stat().st_size > 1000
    assert lab.claim_status(a, tmp_path) == "holds at the paper's setting; in 64 % of its grid"
    assert lab.claim_status(b, tmp_path).startswith("partly holds at the paper's setting")
    assert lab.claim_status("nope", tmp_path).startswith("claim not evaluated")
    assert [n for n, _ in lab.experiment_status("neutrality", tmp_path)] == [b]
    assert lab.experiment_status("collision", tmp_path / "missing") == []
    # a later evaluation of one claim keeps the other's entry (same mode)
    write_report([_entry(a, "no", 0.0)], tmp_path, quick=True, maps=False)
    rep = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert [e["holds_at_paper"] for e in rep["claims"]] == ["no", "partly"]
    assert not list((tmp_path / "claims").glob("*.tmp"))


def test_a_bar_in_free_text_does_not_split_the_reports_table_rows(tmp_path, claims):
    """``E[Â | a = u]`` in a claim's boundary (or a statement's words) stays one cell of the
    report's tables: the bar is escaped, the row keeps its header's cell count, the text its
    meaning (not rewritten to ``/``)."""
    import re

    a = list(claims)[0]
    e = {**_entry(a, "yes", 0.5), "boundary": "E[Â | a = u] = (G − 1)/G r(u)"}
    write_report([e], tmp_path, quick=True, maps=False)
    md = (tmp_path / "claims" / "claims.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("|")]
    widths = {len(re.split(r"(?<!\\)\|", ln.strip("|"))) for ln in rows}
    assert widths == {7, 4} and r"E[Â \| a = u]" in md


def test_redraw_draws_the_report_again_without_evaluating(tmp_path, claims):
    """``simplexlab claims --redraw``: claims.md and the maps drawn again from claims.json (left
    byte for byte as it was), the evaluation's revision kept and the drawing one named."""
    a, b = list(claims)[:2]
    write_report([_entry(a, "yes", 0.64), _entry(b, "no", 0.0, "neutrality")], tmp_path,
                 quick=False, maps=False)
    folder = tmp_path / "claims"
    before = (folder / "claims.json").read_bytes()
    (folder / "claims.md").write_text("stale")
    assert main(["claims", "--full", "--redraw", "--out", str(tmp_path)]) == 0
    md = (folder / "claims.md").read_text()
    assert (folder / "claims.json").read_bytes() == before
    assert f"`{a}`" in md and "drawn from its claims.json by revision" in md
    assert (folder / "robustness_G2.png").stat().st_size > 1000
    assert main(["claims", "--full", "--redraw", "--out", str(tmp_path / "none")]) == 2


def test_bad_names_are_rejected_listing_the_valid_ones(capsys, claims):
    with pytest.raises(ValueError, match="unknown claim.*'no-such-claim'.*valid names"):
        select_claims(["no-such-claim"])
    assert main(["claims", "no-such-claim"]) == 2
    err = capsys.readouterr().err
    assert "no-such-claim" in err and next(iter(claims)) in err
    assert main(["claims", "list"]) == 0
    assert f"{len(claims)} claims" in capsys.readouterr().out
    with pytest.raises(ValueError, match="kebab-case"):
        lab.claim("Not_Kebab", paper="G2", source="s", sentence="s", experiment=None,
                  paper_setting={}, grid={})


def _status(claims, name, **overrides):
    ctx = ClaimContext(quick=True, tiny=True, overrides=overrides)
    return claims[name].evaluate(ctx)


@pytest.mark.parametrize(("name", "broken"), [
    ("g2-fig1-portraits-ode", {"gain_scale": -1.0}),  # the wrong sign of the gain
    ("ts-stage1-a1-rises-then-falls", {"eta": 1e-6}),  # a vanishing step size (η > 0)
])
def test_a_broken_setting_flips_the_status(claims, name, broken):
    good = _status(claims, name)
    bad = _status(claims, name, **broken)
    assert good.holds_at_paper == "yes"
    assert bad.holds_at_paper == "no"
    assert bad.robustness_fraction < good.robustness_fraction


def _declared_faults():
    return [(name, f) for name, c in load_claims().items() for f in c.faults]


def test_claims_declare_faults():
    """Every declared fault names a library function that exists (the fault framework: each
    claim states what it rests on and how that could be wrong)."""
    faults = _declared_faults()
    assert len(faults) >= 3
    for name, f in faults:
        mod, attr = f._resolve()
        assert callable(getattr(mod, attr)), (name, f.target)


def _fault_groups():
    """The declared faults, one entry per distinct fault (target and name): the claims that
    declare it, each with its own Fault (a fault with the same target and name is the same bug;
    injected once for all of them, so that claims sharing a simulation compute it once)."""
    groups: dict = {}
    for name, f in _declared_faults():
        groups.setdefault((f.target, f.name), []).append((name, f))
    return groups


_GROUPS = _fault_groups()


@pytest.mark.parametrize("key", list(_GROUPS),
                         ids=[f"{t.rsplit('.', 1)[-1]}:{'+'.join(n for n, _ in _GROUPS[(t, d)])}"
                              for t, d in _GROUPS])
def test_a_fault_of_the_library_changes_the_verdict(claims, key):
    """The claim rests on the library: each fault it declares -- the bug a real one would be,
    injected into the library (not the claim) -- changes its verdict (the status at the paper's
    setting, or the robustness fraction). A claim whose fault stopped changing it fails here,
    named. The verdicts without the fault come from one context per process (claims that share
    a simulation, as in a report, compute it once), those with it from one context per fault."""
    members = _GROUPS[key]
    for name, _ in members:
        if name not in _GOOD:
            _GOOD[name] = _verdict(claims[name].evaluate(_GOOD_CTX))
    ctx = ClaimContext(quick=True, tiny=True)
    with members[0][1].inject():
        bad = {name: _verdict(claims[name].evaluate(ctx)) for name, _ in members}
    same = [name for name, _ in members if bad[name] == _GOOD[name]]
    assert not same, f"the fault {key[1]!r} ({key[0]}) does not change the verdict of {same}"


def test_a_fault_reaches_compiled_code_and_leaves_the_right_programs_cached(monkeypatch):
    """An injected fault is what a jitted caller computes (from any thread: the fault is
    global), and once it is out the program traced before it serves again, untraced: JAX's
    caches key on the fault instead of being cleared (a clear made every later test compile
    again: this fails then with three traces)."""
    import concurrent.futures
    import sys
    import types

    import jax

    from simplexlab.lab import Fault
    from simplexlab.lab._claims import injected_faults

    probe = types.ModuleType("simplexlab_fault_probe")
    probe.f = lambda x: 2.0 * x
    monkeypatch.setitem(sys.modules, probe.__name__, probe)
    traces = []

    @jax.jit
    def g(x):
        traces.append(1)
        return probe.f(x)

    assert float(g(1.0)) == 2.0
    fault = Fault("sign", "simplexlab_fault_probe.f", lambda f: lambda x: -f(x))
    with fault.inject():
        assert injected_faults() == (("simplexlab_fault_probe.f", "sign", id(fault)),)
        assert float(g(1.0)) == -2.0
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            assert float(pool.submit(g, 3.0).result()) == -6.0
    assert injected_faults() == ()
    assert float(g(1.0)) == 2.0
    assert len(traces) == 2, "the program traced before the fault was traced again after it"


_GOOD: dict = {}
_GOOD_CTX = ClaimContext(quick=True, tiny=True)


def _verdict(v):
    """The status at the paper's setting and the robustness fraction (NaN, where no grid point
    can tell, read as None: NaN would differ from itself)."""
    frac = v.robustness_fraction
    return v.holds_at_paper, (None if np.isnan(frac) else round(frac, 12))


def test_claims_command_writes_the_report(tmp_path, capsys):
    names = ["fg-fig3-focal-downweights", "fg-fig5-threshold"]  # closed forms and Monte Carlo
    assert main(["claims", *names, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[claim 1/2] fg-fig3-focal-downweights: yes at the paper's setting" in out
    rep = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert [e["name"] for e in rep["claims"]] == names
    assert rep["claims"][0]["grid"]["axes"] == {"gamma": [0.5, 1.0, 2.0],
                                                "group_size": [8, 64, 256]}
    claim_rows = (tmp_path / "claims" / "claims.md").read_text().split("## Statements not")[0]
    assert claim_rows.count("| `fg-") == 2


def test_kaplan_meier_against_the_empirical_cdf_and_a_hand_computation():
    """Without censoring the Kaplan–Meier fraction is the empirical CDF; with censoring, the
    textbook product: times 1, 2+, 3, 3, 4+ (+ censored) give S(1) = 4/5, S(3) = 4/5 · (1 − 2/3)
    (three runs at risk at 3), so the fraction with the event is 1/5 by 1 and 1 − 4/15 by 3."""
    from simplexlab.lab import kaplan_meier

    rng = np.random.default_rng(0)
    t = rng.integers(0, 20, 50).astype(float)
    grid = np.arange(20.0)
    np.testing.assert_allclose(kaplan_meier(t, np.ones(50, bool), grid),
                               [(t <= g).mean() for g in grid], atol=1e-12)
    times = np.array([1.0, 2.0, 3.0, 3.0, 4.0])
    event = np.array([True, False, True, True, False])
    np.testing.assert_allclose(kaplan_meier(times, event, [0.0, 1.0, 2.0, 3.0, 4.0]),
                               [0.0, 0.2, 0.2, 1 - 4 / 15, 1 - 4 / 15], atol=1e-12)


def test_concentration_zone_is_judged_at_app_j_scale_and_can_fail(claims, tmp_path):
    """fg-fig4-concentration-zone reads the committed App. J run (A = 128,000): it holds there;
    a zone that never closes fails the largest N, and a small N that lost its mass fails the
    claim."""
    import copy
    import pathlib

    real = json.loads((pathlib.Path(__file__).parents[1] / "figures" /
                       "categorical-regimes.json").read_text())
    assert real["parameters"]["A"] == 128_000

    def verdict(rec):
        (tmp_path / "figures").mkdir(exist_ok=True)
        (tmp_path / "figures" / "categorical-regimes.json").write_text(json.dumps(rec))
        return claims["fg-fig4-concentration-zone"].evaluate(ClaimContext(root=tmp_path))

    good = verdict(real)
    assert good.holds_at_paper == "yes" and good.robustness_fraction == 1.0
    open_zone = copy.deepcopy(real)
    open_zone["results"]["final_m_ret"]["gamma=0"][-2:] = [0.1, 0.1]  # no regime III
    assert verdict(open_zone).robustness_fraction < 1.0
    lost = copy.deepcopy(real)
    lost["results"]["final_m_ret"]["gamma=0"][1] = 0.5  # N = 4 lost its mass
    assert verdict(lost).holds_at_paper != "yes"
    small = copy.deepcopy(real)
    small["parameters"]["A"] = 2_000
    with pytest.raises(ValueError, match="not the full App. J run"):
        verdict(small)


def test_crossed_interval_covers_the_random_draw_where_a_seed_interval_does_not():
    """A crossed design (every seed on every prompt start) with a large between-start spread:
    the two-way bootstrap covers the population mean (0) at about its level; an interval over
    seeds of the start-mean (the one draw's mean) covers it far less often. Monte Carlo over 300
    independent data sets."""
    rng = np.random.default_rng(1)
    n_seeds, n_draws, cover_crossed, cover_seeds = 16, 12, 0, 0
    res = lab.crossed_resamples(n_seeds, n_draws, 500, seed=2)
    for _ in range(300):
        x = (rng.normal(0, 1.0, (1, n_draws)) + rng.normal(0, 0.2, (n_seeds, 1))
             + rng.normal(0, 0.2, (n_seeds, n_draws)))
        m, lo, hi = lab.crossed_ci(x, resamples=res)
        assert m == pytest.approx(x.mean())
        cover_crossed += lo <= 0 <= hi
        _, lo, hi = mean_ci(x.mean(1))
        cover_seeds += lo <= 0 <= hi
    assert cover_crossed / 300 > 0.85  # percentile bootstrap with 12 draws: a little below 95 %
    assert cover_seeds / 300 < 0.5
    with pytest.raises(ValueError, match="seed, draw"):
        lab.crossed_ci(np.zeros(5))


def test_points_that_cannot_tell_are_named_and_left_out_of_the_fraction():
    axes = {"gain": [1, 2, 3], "G": [4, 16]}
    holds = np.array([[False, False], [False, True], [True, True]])
    inf = np.array([[True, False], [True, True], [True, True]])
    b = boundary_text(axes, holds, along="gain", informative=inf)
    assert b == ("needs gain ≥ 3 at G = 4; always at G = 16; cannot tell at 1 of 6 "
                 "points (within noise or censored in both arms): gain = 1, G = 16")
    v = lab.Verdict("yes", 0.1, (0.0, 0.2), "c", axes, holds, grid_informative=inf)
    assert v.robustness_fraction == pytest.approx(3 / 5)
    blind = lab.Verdict("yes", 0.1, (0.0, 0.2), "c", axes, holds,
                        grid_informative=np.zeros((3, 2), bool))
    assert np.isnan(blind.robustness_fraction)
    assert boundary_text(axes, holds, informative=np.zeros((3, 2), bool)).startswith(
        "cannot tell anywhere")
    with pytest.raises(ValueError, match="grid_informative has shape"):
        lab.Verdict("yes", 0.1, (0.0, 0.2), "c", axes, holds, grid_informative=[True])


def test_overlap_order_leaves_adam_s_rounding_noise_out(claims):
    """Under Adam the three Siamese variants move alike in exact arithmetic: their accuracy
    differences are float rounding and those grid points cannot tell; SGD's can."""
    import sys

    sc = sys.modules[claims["sc-fig2-overlap-order"].evaluate.__module__]
    v = _status(claims, "sc-fig2-overlap-order")
    opt = list(v.grid_axes["optimizer"])
    assert not v.informative[opt.index("adamw")].any()
    assert v.informative[opt.index("sgd")].all()
    assert np.isclose(v.robustness_fraction,
                      np.asarray(v.grid_holds)[v.informative].mean())
    assert sc.NOISE < 1e-6


def test_report_top_counts_and_says_why_each_no(tmp_path, claims, monkeypatch):
    from simplexlab.lab import _claims

    monkeypatch.setattr(_claims, "_UNCHECKED", {})
    lab.not_checkable("g2-table-1-benchmarks", paper="G2", source="Table 1",
                      sentence="G²RPO improves pass@k on MATH.",
                      why="an LLM benchmark run; the lab has no such model or data")
    with pytest.raises(ValueError, match="say why"):
        lab.not_checkable("g2-other", paper="G2", source="s", sentence="s", why=" ")
    with pytest.raises(ValueError, match="is a claim"):
        lab.not_checkable(next(iter(claims)), paper="G2", source="s", sentence="s", why="w")
    a, b = list(claims)[:2]
    no = {**_entry(b, "no", 0.0), "criterion": "change of L_y (> 0)",
          "reason": "the bonus reaches only sampled modes"}
    write_report([_entry(a, "yes", 0.64), no], tmp_path, quick=True, maps=False)
    md = (tmp_path / "claims" / "claims.md").read_text()
    head = md.split("## Claims")[0]
    assert ("**2 claims: 1 hold, 0 partly, 1 do not hold at the paper's setting (1 where the "
            "lab's computation contradicts the paper); 1 statements not checkable.**") in head
    why = head.split('## Why each "no"')[1]
    assert f"`{b}`" in why and "change of L_y (> 0) = 0.1 [0, 0.2]" in why
    assert "the bonus reaches only sampled modes" in why and f"`{a}`" not in why
    assert "`g2-table-1-benchmarks`" in md.split("## Statements not checkable")[1]
    rep = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert [u["name"] for u in rep["not_checkable"]] == ["g2-table-1-benchmarks"]
    refs = md.split("## References")[1]
    assert f"- **G2**: {lab.cite('G2')}" in refs and "**FG**" not in refs  # only those cited
    from simplexlab.lab import _claims as cl

    assert set(cl.PAPERS) - set(cl._NOT_PAPERS) == set(lab.BIBLIOGRAPHY)


def test_the_headline_splits_the_noes_by_what_their_claims_check(tmp_path, claims):
    """"N do not hold" is split by the claims' kind (``claim(kind=...)``, declared once per claim;
    by default from the source and ``uses_committed_result``): a paper the lab's computation
    contradicts, a figure its committed run does not reproduce, the finite-group bandit not
    showing a statement at the paper's G, the lab's own predictions. A report written before
    kinds (entries without ``kind``) is drawn again with the registered claims' kinds."""
    from simplexlab.lab._claims import KINDS
    from simplexlab.lab._report import claim_kind, count_line

    assert claims["g2-fig1-portraits-sim"].kind == "finite-group"  # declared
    assert claims["fg-fig4-only-largest-n-keeps-mass"].kind == "committed-run"  # derived
    assert claims["simplexlab-flip-threshold"].kind == "own"
    assert claims["sc-fig1-normalized-slower"].kind == "paper"
    with pytest.raises(ValueError, match="kind must be one of"):
        lab.claim("x-y", paper="G2", source="s", sentence="s" * 30, experiment="collision",
                  paper_setting={"a": 1}, grid={"a": [1]}, kind="typo")
    entries = [
        {**_entry("sc-fig1-normalized-slower", "no", 0.0), "paper": "SC"},
        {**_entry("sc-eq3-batch-objective", "no", 0.0), "paper": "SC"},
        {**_entry("fg-fig4-only-largest-n-keeps-mass", "no", 0.0), "paper": "FG",
         "uses_committed_result": True},
        _entry("g2-fig1-portraits-sim", "no", 0.0),
        _entry("g2-grpo-collision", "yes", 1.0),
        {**_entry("simplexlab-flip-threshold", "partly", 0.5), "paper": "SL"},
    ]
    expected = ("6 claims: 1 hold, 1 partly, 4 do not hold at the paper's setting (2 "
                f"{KINDS['paper'][1]}, 1 {KINDS['committed-run'][1]}, 1 "
                f"{KINDS['finite-group'][1]})")
    assert count_line(entries) == expected
    assert [claim_kind(e) for e in entries] == [claims[e["name"]].kind for e in entries]
    # a new report carries each entry's kind (simplexlab.lab._claims._entry writes it)
    write_report([{**e, "kind": claims[e["name"]].kind} for e in entries], tmp_path,
                 quick=False, maps=False)
    md = (tmp_path / "claims" / "claims.md").read_text()
    assert f"**{expected}" in md
    why = md.split('## Why each "no"')[1].split("## Claims")[0]
    parts = why.split("**")  # bold heading, its claims, the next bold heading, ...
    assert [p.split(" ", 1)[1] for p in parts[1::2]] == [
        KINDS[k][1] for k in ("paper", "committed-run", "finite-group")]
    assert "`g2-fig1-portraits-sim`" in parts[-1] and "`sc-eq3-batch-objective`" in parts[2]
    # a report of before the kinds: the same headline, drawn again from its claims.json
    path = tmp_path / "claims" / "claims.json"
    rep = json.loads(path.read_text())
    for e in rep["claims"]:
        e.pop("kind")
    path.write_text(json.dumps(rep))
    assert main(["claims", "--full", "--redraw", "--out", str(tmp_path)]) == 0
    assert f"**{expected}" in (tmp_path / "claims" / "claims.md").read_text()
    # the committed report's "no"s, as --redraw counts them
    from pathlib import Path

    committed = json.loads((Path(__file__).parent.parent / "figures" / "claims" /
                            "claims.json").read_text())
    kinds = {e["name"]: claim_kind(e) for e in committed["claims"] if e["holds_at_paper"] == "no"}
    assert kinds.pop("fg-fig4-only-largest-n-keeps-mass") == "committed-run"
    assert kinds.pop("g2-fig1-portraits-sim") == "finite-group"
    assert set(kinds.values()) == {"paper"}, kinds
