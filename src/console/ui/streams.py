"""Consume a blocking stream (HfApi's SSE iterators) from a worker that can stop at any moment.

`HfApi.fetch_job_logs(follow=True)` blocks until the next line arrives; a quiet job could keep a
thread worker — and the app's exit — waiting for minutes. :func:`iterate_cancellable` reads the
stream in a daemon thread and hands items over through a queue, so the worker notices
cancellation within `poll` seconds; the reader thread ends by itself at the next item (or when
the stream ends) and never holds the process open.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_END = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def iterate_cancellable(
    make: Callable[[], Iterable[T]], cancelled: Callable[[], bool], poll: float = 0.2
) -> Iterator[T]:
    """Yield the items of `make()` until it ends or `cancelled()` turns true."""
    items: queue.Queue[Any] = queue.Queue(maxsize=10_000)
    stop = threading.Event()

    def read() -> None:
        try:
            for item in make():
                while not stop.is_set():
                    try:
                        items.put(item, timeout=poll)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            items.put(_END)
        except BaseException as exc:  # handed to the consumer, which raises it
            items.put(_Failed(exc))

    threading.Thread(target=read, name="console-stream-reader", daemon=True).start()
    try:
        while True:
            if cancelled():
                return
            try:
                item = items.get(timeout=poll)
            except queue.Empty:
                continue
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()


def iterate_batches(
    make: Callable[[], Iterable[T]],
    cancelled: Callable[[], bool],
    poll: float = 0.2,
    max_pending: int = 50_000,
) -> Iterator[list[T]]:
    """Like :func:`iterate_cancellable`, but yields everything that arrived since the last batch.

    A chatty stream costs one deque append per item instead of a queue hand-off (the log pane
    takes its lines in lists anyway). The reader waits while `max_pending` items are unread.
    """
    pending: collections.deque[Any] = collections.deque()
    ready = threading.Event()
    stop = threading.Event()

    def read() -> None:
        try:
            for item in make():
                while len(pending) >= max_pending and not stop.is_set():
                    time.sleep(0.005)
                if stop.is_set():
                    return
                pending.append(item)
                if not ready.is_set():  # one wake-up per batch, not one per item
                    ready.set()
            pending.append(_END)
        except BaseException as exc:  # handed to the consumer, which raises it
            pending.append(_Failed(exc))
        ready.set()

    threading.Thread(target=read, name="console-stream-reader", daemon=True).start()
    try:
        while True:
            if cancelled():
                return
            if not ready.wait(poll):
                continue
            ready.clear()
            batch: list[T] = []
            while pending:
                item = pending.popleft()
                if item is _END:
                    if batch:
                        yield batch
                    return
                if isinstance(item, _Failed):
                    if batch:
                        yield batch
                    raise item.error
                batch.append(item)
            if batch:
                yield batch
    finally:
        stop.set()
