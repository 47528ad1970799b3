"""A job's stages as the HF Jobs API names them: which are still going and which are over.

One definition for the console, its cache and its embedded server. Standard library only, and
imports nothing: the first frame and the server read it.
"""

ACTIVE_STAGES = ("SCHEDULING", "RUNNING")
"""A job in one of these still runs, or waits to (its time and cost tick)."""

TERMINAL_STAGES = ("COMPLETED", "ERROR", "CANCELED", "DELETED")
"""A job in one of these is over: its record no longer changes."""

ALL_STAGES = ("SCHEDULING", "RUNNING", "COMPLETED", "CANCELED", "ERROR", "DELETED")
"""Every stage the Jobs API names, in its own order (the OpenAPI description's enum)."""

assert set(ALL_STAGES) == set(ACTIVE_STAGES) | set(TERMINAL_STAGES)


def sql_list(stages: tuple[str, ...]) -> str:
    """`stages` as an SQL list for `IN`: `('SCHEDULING', 'RUNNING')`."""
    return "(" + ", ".join(f"'{stage}'" for stage in stages) + ")"
