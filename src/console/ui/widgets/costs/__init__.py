"""Cost widgets: the ledger pane (the what-if explorer it opens is `console.ui.screens.whatif`)."""

from console.ui.widgets.costs.ledger_pane import LedgerPane

__all__ = ["LedgerPane"]
