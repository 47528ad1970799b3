"""A job's stages as the HF Jobs API names them: which are still going and which are over.

One definition for the console, its cache and its embedded server. Standard library only, and
imports nothing: the first frame and the server read it.
"""

SCHEDULING = "SCHEDULING"
"""Created, waiting for a machine (or, in the embedded server, for a free slot)."""
RUNNING = "RUNNING"
COMPLETED = "COMPLETED"
"""Over: the command exited 0."""
CANCELED = "CANCELED"
ERROR = "ERROR"
"""Over: the command failed, timed out, or its machine went away."""
DELETED = "DELETED"

ACTIVE_STAGES = (SCHEDULING, RUNNING)
"""A job in one of these still runs, or waits to (its time and cost tick)."""

TERMINAL_STAGES = (COMPLETED, ERROR, CANCELED, DELETED)
"""A job in one of these is over: its record no longer changes."""

ALL_STAGES = (SCHEDULING, RUNNING, COMPLETED, CANCELED, ERROR, DELETED)
"""Every stage the Jobs API names, in its own order (the OpenAPI description's enum)."""

assert set(ALL_STAGES) == set(ACTIVE_STAGES) | set(TERMINAL_STAGES)


def sql_list(stages: tuple[str, ...] | str) -> str:
    """`stages` (or one stage) as an SQL list for `IN`: `('SCHEDULING', 'RUNNING')`."""
    if isinstance(stages, str):
        stages = (stages,)
    return "(" + ", ".join(f"'{stage}'" for stage in stages) + ")"
