"""How the console builds a job submission, and reads one back from what HF Jobs returns."""

from console.jobspec.build import *  # noqa: F403
