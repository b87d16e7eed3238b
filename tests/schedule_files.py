"""A schedule file as ``simplexlab schedule verify`` writes it, for a verification that passed or
failed, without running one (the adapters' tests read it through ``load_schedule``)."""

import json


def schedule_file(path, schedule, passed):
    """Write ``schedule`` to ``path`` as a ``simplexlab.gain_schedule/1`` file whose
    verification passed (``passed``) or failed check (c); returns ``path``."""
    d = schedule.to_dict()
    path.write_text(json.dumps({
        "format": "simplexlab.gain_schedule/1", "schedule": d,
        "verification": {"passed": passed, "reasons": [] if passed else ["(c) fails"],
                         "numbers": {}, "inputs": {"schedule": d}}, "provenance": {}}))
    return path
