"""How loud an alert or an on-call event is: the levels Trackio's alerts carry and the watcher's
events reuse, defined once. `ERROR` here is a level, not the job stage of the same name
(`console.stages.ERROR`).

Standard library only, and imports nothing.
"""

INFO = "INFO"
WARN = "WARN"
ERROR = "ERROR"
LEVELS = (INFO, WARN, ERROR)
"""Every level, quietest first."""
