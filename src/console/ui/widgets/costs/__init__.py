"""Cost widgets: the ledger pane and the what-if explorer screen."""

from console.ui.widgets.costs.ledger_pane import LedgerPane
from console.ui.widgets.costs.whatif_screen import WhatIfResult, WhatIfScreen

__all__ = ["LedgerPane", "WhatIfResult", "WhatIfScreen"]
