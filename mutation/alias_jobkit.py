"""pytest plugin for the training module's mutation run: `import jobkit` gives training.jobkit.

The recipes and the tests import `jobkit` from the training folder; mutmut names mutants after the
file path (training.jobkit.run.*) and only sees calls into functions of that module name, so the
two names must be one package.
"""

from __future__ import annotations

import importlib
import sys

package = importlib.import_module("training.jobkit")
sys.modules["jobkit"] = package
for _name in ("dataset", "run", "models", "recipe", "vram"):
    module = importlib.import_module(f"training.jobkit.{_name}")
    sys.modules[f"jobkit.{_name}"] = module
    setattr(package, _name, module)
