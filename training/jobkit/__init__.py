"""What the training scripts in `training/` share: the run rules of HF Jobs and the recipes' parts.

* The dataset checks are not here but in `validate_dataset.py` beside this package: one file,
  so that `hf jobs uv run validate_dataset.py DATA` can ship it alone. Every recipe imports its
  `validate` (through `jobkit.recipe`) and refuses a dataset it fails.
* `jobkit.run` holds the rules every training run follows: where the weights go (Hub push or the
  artifact folder, never nowhere), the `HF_TOKEN` check, the loss monitor and its Trackio alerts,
  the `progress` / `ALERT` / `VERDICT` lines and the exit status.

The scripts import this package from the folder they sit in (Python puts a script's folder first
on `sys.path`), so a recipe's job ships the recipe, this package and `validate_dataset.py`, not
one file. Every module here imports the standard library alone at import time: a run that must be
refused (no token, a bad dataset) fails in well under a second, before torch is imported. Heavy
imports happen inside the functions that need them.
"""
