"""What the Python scenarios under compat/suites share: their step lines and failing loudly."""

import sys


def step(name):
    """Names the step about to run, as the shell scenarios do."""
    print(f"  - {name}", flush=True)


def fail(why):
    """Ends the scenario with a failure."""
    print(f"FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def check(cond, why):
    """Fails the scenario with `why` unless `cond` holds."""
    if not cond:
        fail(why)
