"""pytest plugin for the training module's mutation run: `import jobkit` gives training.jobkit,
`import validate_dataset` gives training.validate_dataset.

The recipes and the tests import `jobkit` and `validate_dataset` from the training folder; mutmut
names mutants after the file path (training.jobkit.run.*, training.validate_dataset.*) and only
sees calls into functions of that module name, so the two names must be one module.
"""

from __future__ import annotations

import importlib
import sys

sys.modules["validate_dataset"] = importlib.import_module("training.validate_dataset")
package = importlib.import_module("training.jobkit")
sys.modules["jobkit"] = package
for _name in ("run", "models", "recipe", "vram"):
    module = importlib.import_module(f"training.jobkit.{_name}")
    sys.modules[f"jobkit.{_name}"] = module
    setattr(package, _name, module)
