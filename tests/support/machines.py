"""Settings of the suite's Hypothesis state machines (tests/*/test_*_invariants.py), in one place.

Two profiles, chosen with HYPOTHESIS_PROFILE: `ci` (the default: a fixed, derandomized number of machines, so
every run of the suite walks the same sequences) and `deep` (random, larger, on demand). HYPOTHESIS_EXAMPLES
sets the number of machines of either. A control (a machine run against a deliberately broken rule, which the
checker must catch) does not shrink: only whether the break is found matters.
"""

import os

from hypothesis import HealthCheck, Phase, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.filter_too_much]


def machine_settings(*, ci_examples: int, steps: int, deep_examples: int = 1000, deep_steps: int = 60) -> settings:
    """A machine's settings in the chosen profile: `ci_examples` machines of up to `steps` steps in the suite."""
    deep = PROFILE == "deep"
    # The suite walks the same sequences on every run; a deep search is random and keeps what it finds.
    reproducible: dict = {} if deep else {"derandomize": True, "database": None}
    return settings(
        max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", deep_examples if deep else ci_examples)),
        stateful_step_count=deep_steps if deep else steps,
        deadline=None,
        print_blob=True,
        suppress_health_check=_SLOW_IS_FINE,
        **reproducible,
    )


def control_settings(*, examples: int, steps: int) -> settings:
    """A control's settings: `examples` machines of up to `steps` steps, derandomized, no shrinking."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=_SLOW_IS_FINE,
    )
