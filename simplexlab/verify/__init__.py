r"""The verification layer: what the lab checks before a G²RPO gain schedule goes to training.

Above the simulators and sweeps (it runs the mean-field ODE of :mod:`simplexlab.theory` and the
finite-group :class:`~simplexlab.sim.Bandit`), below the lab and the torch bridge
(:mod:`simplexlab.llm` loads verified schedules through it).

- :func:`verify_schedule`: runs a :class:`~simplexlab.shaping.GainSchedule` through five checks
  -- (a) flip of collision to anti-collision, (b) neutrality of the bad mass, (c) bounded bad
  bonus as ``p̂ = 1/G → 0`` (:func:`bad_bonus_growth`), (d) the ``L_y`` it reaches, (e) the
  bandit ensemble against the ODE -- and returns a :class:`ScheduleReport` (numbers, verdict,
  reasons, inputs, curves; ``summary()`` for one screen).
- :func:`verify_rule`: the same checks for any advantage rule (a user's registered rule
  included) against its finite-group theory and GRPO's, (c) aside.
- :func:`save_schedule` / :func:`load_schedule`: the schedule with its verification as a small
  JSON file (``simplexlab.gain_schedule/1``); a failed verification is refused unless
  ``force=True``. :func:`load_schedule_config` reads the TOML file of
  ``simplexlab schedule verify`` (``[schedule]``: GainSchedule fields; ``[verify]``:
  :func:`verify_schedule` options, :data:`VERIFY_OPTIONS`).
- :func:`plan`: how many generations per prompt -- at each group size, the probability that a
  group carries signal, the rarest mode's tail-miss probability, the good modes a group sees and
  the drift of ``L_y`` of the exact finite-group field (collision / cancel / anti-collision), and
  the smallest size that meets the targets, for TRL (``num_generations``) and verl
  (``actor_rollout_ref.rollout.n``): a :class:`PlanReport` (``to_text()``, ``to_dict()``).
- :func:`plan_budget`: how to split a budget of ``R`` rollouts per step into ``P`` prompts ×
  ``G`` for a distribution of prompts (:class:`~simplexlab.theory.PromptSet`): at each ``G``
  the silent fraction, the tail-miss, the progress per rollout of SGD and Adam at their
  progress-optimal rates (the shared-parameter model's exact step moments), the regime by the
  gradient noise scale, and the compute-optimal ``G*`` with its margin, for TRL and verl (a
  :class:`BudgetReport`); :func:`budget_curve`: ``G*(R)`` over budgets (a
  :class:`BudgetCurve`); :func:`bandit_progress`: what they predict, measured on the shared
  bandit (one step at each rate), and :func:`bandit_resolution`: its best G and the G it
  cannot tell from it. :func:`plan` is its one-prompt special case.
- :func:`check_advantages`: the advantage oracle -- any advantage function (a framework's, a
  user's; the calling conventions of TRL, verl, Tunix or a plain ``(rewards, group_ids)``,
  :data:`CONVENTIONS`) run on a battery of groups (:data:`CHECKS`) against the lab's exact rule,
  every deviation with the smallest group that shows it and what reproduces it
  (:class:`AdvantageReport`); :func:`infer_convention` reads a function's baseline, std ddof and
  ε, group or batch level (:class:`Convention`), named as a rule of the lab where there is one.

Every file is read and written through :mod:`simplexlab._results`.
"""

from ._budget import (
    BUDGET_GROUP_SIZES,
    BudgetCurve,
    BudgetReport,
    bandit_progress,
    bandit_resolution,
    budget_curve,
    plan_budget,
)
from ._files import FORMAT, load_schedule, load_schedule_config, save_schedule
from ._oracle import (
    CHECKS,
    CONVENTIONS,
    AdvantageReport,
    Convention,
    Deviation,
    check_advantages,
    infer_convention,
)
from ._plan import DEFAULT_GROUP_SIZES, REGIMES, PlanReport, plan
from ._report import ScheduleReport, describe_schedule
from ._verify import (
    BOUND_GROUP_SIZES,
    COMPOSITIONS,
    VERIFY_OPTIONS,
    bad_bonus_growth,
    verify_rule,
    verify_schedule,
)

__all__ = [
    "AdvantageReport",
    "BOUND_GROUP_SIZES",
    "BUDGET_GROUP_SIZES",
    "BudgetCurve",
    "BudgetReport",
    "CHECKS",
    "COMPOSITIONS",
    "CONVENTIONS",
    "Convention",
    "Deviation",
    "DEFAULT_GROUP_SIZES",
    "FORMAT",
    "PlanReport",
    "REGIMES",
    "VERIFY_OPTIONS",
    "ScheduleReport",
    "bad_bonus_growth",
    "bandit_progress",
    "bandit_resolution",
    "budget_curve",
    "check_advantages",
    "describe_schedule",
    "infer_convention",
    "load_schedule",
    "load_schedule_config",
    "plan",
    "plan_budget",
    "save_schedule",
    "verify_rule",
    "verify_schedule",
]
