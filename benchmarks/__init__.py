"""The simplexlab benchmark suite: every performance goal of the project, in one command.

    python -m benchmarks [--quick] [--only NAME[,NAME...]] [--json PATH] [--dtype float32|float64]
                         [--rounds R] [--repeats N] [--block B]

Benchmarks (``--only`` names):

- ``categorical`` (:mod:`benchmarks.categorical`): the F-GRPO Fig. 4 sweep of the 128,000-action
  categorical simulator through :func:`simplexlab.sweep.run`, against the old ``run_many``
  thread-pool path rebuilt from the public API; and its per-step cost against the
  memory-traffic bound (``--dtype``, default float32: the timing configuration).
- ``categorical-f64`` (:mod:`benchmarks.categorical64`): the same sweep in float64, the figure's
  dtype, against its goal of 60 s after compilation, and its step against the bound.
- ``meanfield`` (:mod:`benchmarks.meanfield`): 10^6 mean-field trajectories through the sweep
  engine in ≤ 60 s and ≤ 2 GB, against scipy ``solve_ivp`` extrapolated from a subset.
- ``ensemble`` (:mod:`benchmarks.ensemble`): 2,048 trajectories through ``vmap(solve)`` and
  ``solve_ensemble`` against scipy per trajectory (≥ 200×), and 10^5 through ``solve_ensemble``
  in blocks (≥ 500×).

The CPU goals alone (the float32 step against the bound, the float64 sweep against
60 s, the ensembles against scipy), with their baselines and the load average, in one run:
``python -m benchmarks --only categorical,categorical-f64,ensemble``.
- ``bandit`` (:mod:`benchmarks.bandit`): a 32 × 8 (λ0, G) grid × 64 seeds × 2,000 steps of the
  finite-group bandit through the sweep engine in ≤ 60 s, against a per-configuration loop.
- ``bridge`` (:mod:`benchmarks.bridge`): the G²RPO bonus + advantages of 256 prompts × 16
  rollouts called from torch through ``simplexlab.llm`` in ≤ 2 ms, against the JAX-native call
  and the rollout step it serves (``generate`` of a tiny GPT-2; needs torch and transformers).
- ``modes`` (:mod:`benchmarks.modes`): mode discovery for free text, all-MiniLM-L6-v2 embeddings
  + DBSCAN of 256 prompts × 16 completions in ≤ 30 s, against embedding one text at a time and
  sentence-transformers' ``encode`` (needs the modes extra). How well the clustering methods
  find solution methods is compared apart, on the labelled benchmark: ``python -m
  benchmarks.modes_compare`` (:mod:`benchmarks.modes_compare`, data from
  :mod:`benchmarks.modes_data`).
- ``compile-cache`` (:mod:`benchmarks.compile_cache`): ``simplexlab reproduce focal-weight
  neutrality phase-portraits --quick`` (claims included) twice in fresh processes sharing a
  persistent compilation cache that starts empty: the first and the second run's compile times
  and program counts side by side (the second should compile nothing; what it compiles again is
  named).
- ``finite-group`` (:mod:`benchmarks.finite_group`): the finite-group theory: one
  exact field evaluation at K + M = 8, G = 16 (≤ 1 ms for the reduced rules, ≤ 20 ms for G²RPO
  with its neutralizer) against the enumeration, Monte Carlo and the bandit's own step; and the
  32 × 8 (λ0, G) regime map from the theory in ≤ 1/10 of the bandit grid's time, with the
  agreement of the signs of ΔL_y. ``finite-group-plan``: ``simplexlab plan`` in fresh
  processes (cold start, compile cache off; then an empty persistent cache filled and read)
  against the CLI's start-up floor.
- ``noise`` (:mod:`benchmarks.noise`): the covariance of one group step at K + M = 8, G = 16
  (≤ 2 ms for the count rules, ≤ 10× the mean on the same path), the Adam field against the SGD
  field (≤ 3×), and the η ladder of the Adam and momentum fields against the bandit with optax's
  optimizer (the error and its order in η).
- ``budget-plan`` (:mod:`benchmarks.budget`): ``simplexlab plan --budget 256`` cold in fresh
  processes (compilation cache off), on a Beta law (≤ 5 s) and on a rollouts file of 10,000
  prompts × 16 rollouts (≤ 10 s), beside the CLI's start-up floor. ``budget-curve``: the
  theory's ``G*(R)`` over 12 budgets × 12 group sizes (``budget_curve``) in ≤ 1/10 of the time
  of the shared bandit on the same grid (``bandit_progress``), end to end.
- ``user-rule`` (:mod:`benchmarks.user_rule`): the bandit grid with a rule registered from user
  code (Dr. GRPO written outside the package) within 10 % of the same rule built in, with the
  same bits.

Each measurement runs in a worker process of its own (``python -m benchmarks --worker
MODULE.FUNCTION``), with the JAX configuration it needs set before JAX is imported: the sweep
engine's workers get one CPU device per core (``XLA_FLAGS=--xla_force_host_platform_device_count``,
set by the suite), the baselines JAX's default single device; and each reports its own peak
resident memory. The suite prints one table (and, with ``--json``, writes the numbers) with
every baseline measured in the same run. ``--quick`` runs small shapes (a smoke test, < 2
minutes on 2 cores); its numbers say nothing about the goals.

On a shared machine other jobs inflate wall times unevenly: ``--repeats N`` times the categorical
sweep N times in each worker (default 2; the engine's first call compiles, the later ones reuse
its programs) and the table also gives the CPU time of both paths; ``--rounds R`` runs every
worker R times, alternating the order of a benchmark's workers; the best of each is reported and
every run is listed. The load average at start and end is printed with the table. The workers
run with the persistent compilation cache off (``SIMPLEXLAB_JAX_CACHE=0``): their first calls
compile, as on a first run; ``compile-cache`` measures the cache.
"""

from . import (
    bandit,
    bridge,
    budget,
    categorical,
    categorical64,
    compile_cache,
    ensemble,
    finite_group,
    meanfield,
    modes,
    noise,
    user_rule,
)

#: benchmarks by ``--only`` name, in the order they run
BENCHMARKS = {m.NAME: m for m in (categorical, categorical64, meanfield, ensemble, bandit,
                                    bridge, modes, compile_cache, finite_group,
                                    finite_group.PLAN, user_rule, noise, budget,
                                    budget.CURVE)}

__all__ = ["BENCHMARKS"]
