"""What can go wrong reaching a jobs backend, each a one-line message ready to show.

Standard library only.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """The backend cannot be reached or started; the message is one line, ready to show."""


class ReadOnlyError(BackendError):
    """A call that could change something, refused because the console runs read-only."""


class ServerUnreachable(ConnectionError):
    """The jobs API did not answer (after the retries the request allowed); one line to show."""
