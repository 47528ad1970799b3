"""Training metrics widgets: the selected run's sparklines and the fleet-wide Trackio alert list."""

from console.ui.widgets.training.alert_list import AlertList
from console.ui.widgets.training.sparklines import MetricsPanel

__all__ = ["AlertList", "MetricsPanel"]
