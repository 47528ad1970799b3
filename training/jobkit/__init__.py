"""What the training scripts in `training/` share: the dataset checks and the run rules of HF Jobs.

* `jobkit.dataset` reads a dataset and checks that every row fits a training method (the CPU
  preflight). `validate_dataset.py` prints its report; every recipe refuses a dataset it fails.
* `jobkit.run` holds the rules every training run follows: where the weights go (Hub push or the
  artifact folder, never nowhere), the `HF_TOKEN` check, the loss monitor and its Trackio alerts,
  the `progress` / `ALERT` / `VERDICT` lines and the exit status.

The scripts import this package from the folder they sit in (Python puts a script's folder first
on `sys.path`), so a job must ship the whole `training/` folder, not one file. Every module here
imports the standard library alone at import time: a run that must be refused (no token, a bad
dataset) fails in well under a second, before torch is imported. Heavy imports happen inside the
functions that need them.
"""

from __future__ import annotations

import re

REPO_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
"""A Hub repo id, `name` or `org/name` (models and datasets alike)."""
