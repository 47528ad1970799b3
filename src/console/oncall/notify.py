"""On-call notifications: each event sent once, to the terminal and to webhooks, never blocking.

Events (:class:`Event`) come from the detectors (:mod:`console.oncall.watcher`): a job that ended
ERROR or was killed on its timeout, a stall, a Trackio ERROR alert, the month's projection over
`monthly_budget_usd`, a job that will hit its timeout before it finishes, a job stuck in
SCHEDULING. :class:`Notifier` sends each through the `[notify]` channels of the config:

- the terminal: the bell (`notify.bell`) and a desktop notification by escape (`notify.desktop`:
  OSC 9 or OSC 777), written through the `write` callable the caller gives (the app's driver,
  `console watch`'s stderr);
- webhooks (`notify.webhook_url`, `notify.webhook_urls`): Slack and Discord URLs get their own
  message shapes, any other URL the event as a JSON object, as Trackio's alert webhooks do.

Once per consumer: every event found is recorded in the on-call store (SQLite in the data dir),
and each consumer keeps its own record of what it was given: the watcher's own (`consumer`: the
TUI, a `console web` tab, `console watch`; what its screen or stdout shows, with the terminal
escapes) and each webhook channel (`webhook:<hash of its URL>`). An event is given to each of
them by one watcher only, and never again after a restart; what one consumer was given (a
read-only web tab nobody looks at) is still news to the others. Never blocking: webhook POSTs go
through a bounded queue to one worker thread, each with a timeout (`notify.webhook_timeout_s`)
and one retry; a full queue drops the POST and says so in :attr:`Notifier.failures`. A failed
POST is not retried on a later pass: the event stays sent (a dead webhook must not turn every
pass into a flood).

Standard library and the on-call store only: no Textual, no console.ui, console.server or
console.backend.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from console import levels
from console.oncall import escapes
from console.oncall.store import OnCallStore

log = logging.getLogger(__name__)

KINDS = ("job_error", "job_timeout", "stall", "trackio_error", "budget", "overrun", "scheduling")
"""job_error: a job ended ERROR; job_timeout: killed on its timeout (and billed for it); stall: a
running job stalled but billing; trackio_error: a Trackio ERROR alert; budget: the month's
projection crossed `monthly_budget_usd`; overrun: a running job will hit its timeout first;
scheduling: a job has waited in SCHEDULING longer than `notify.scheduling_after_s`."""
KIND_WORDS = {
    "job_error": "failed",
    "job_timeout": "timed out",
    "stall": "stalled",
    "trackio_error": "Trackio errors",
    "budget": "budget",
    "overrun": "will time out",
    "scheduling": "stuck in SCHEDULING",
    "schedule_failing": "failing in a row",
    "stale_live": "live adapter stale",
    "retry": "resumed by a retry",
    "retry_refused": "not retried",
}
"""Each kind in a word or two, after a count (`3 failed, 1 stalled`)."""
CONSUMER_ENV = "CONSOLE_ONCALL_CONSUMER"
"""Set to `web` by `console web` for the apps it serves: their record of the events shown is the
`web` consumer's, not the terminal TUI's (`tui`), so a browser tab nobody reads swallows nothing
for the TUI, `console watch` or the webhooks."""
QUEUE_SIZE = 200
RETRY_DELAY_S = 1.0


@dataclass(frozen=True)
class Event:
    """One thing on-call must hear about. `key` names it for good: the same key is sent once."""

    key: str
    kind: str
    level: str
    """ERROR | WARN"""
    title: str
    text: str
    at: float
    """Unix time it was detected."""
    job_id: str | None = None
    tenant: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.kind,
            "key": self.key,
            "level": self.level,
            "title": self.title,
            "text": self.text,
            "job_id": self.job_id,
            "tenant": self.tenant,
            "at": datetime.fromtimestamp(self.at, UTC).isoformat(),
            "data": self.data,
        }

    @classmethod
    def from_payload(cls, payload: str) -> Event | None:
        """The event `to_dict` wrote as JSON (what the on-call store keeps); None when it is not one."""
        try:
            d = json.loads(payload)
            at = datetime.fromisoformat(d["at"]).timestamp()
            return cls(key=str(d["key"]), kind=str(d["event"]), level=str(d["level"]), title=str(d["title"]),
                       text=str(d["text"]), at=at, job_id=d.get("job_id"), tenant=d.get("tenant"),
                       data=d.get("data") if isinstance(d.get("data"), dict) else {})
        except (ValueError, KeyError, TypeError):
            return None

    def line(self) -> str:
        """One plain line for a terminal or a log."""
        when = datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%d %H:%M:%S")
        return escapes.plain(f"{when} {self.level} {self.kind} {self.title}: {self.text}", 400)


# ---------------------------------------------------------------------------------------------
# Webhook payloads, as Trackio shapes its alert webhooks


def is_slack(url: str) -> bool:
    return "hooks.slack.com" in url


def is_discord(url: str) -> bool:
    return "discord.com/api/webhooks" in url or "discordapp.com/api/webhooks" in url


def webhook_payload(url: str, event: Event) -> dict[str, Any]:
    """The JSON body for `url`: Slack blocks, a Discord embed, or the event itself."""
    title = f"[{event.level}] {event.title}"
    if is_slack(url):
        return {
            "text": f"{title}: {event.text}",
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": f"*{title}*"}},
                {"type": "section", "text": {"type": "mrkdwn", "text": event.text or "-"}},
                {"type": "context", "elements": [
                    {"type": "mrkdwn", "text": f"console {event.kind} · {event.job_id or '-'}"}
                ]},
            ],
        }
    if is_discord(url):
        color = 15158332 if event.level == levels.ERROR else 16776960
        return {"embeds": [{
            "title": title[:256],
            "description": event.text[:4000],
            "color": color,
            "footer": {"text": f"console {event.kind} · {event.job_id or '-'}"},
        }]}
    return event.to_dict()


def redact(url: str) -> str:
    """A webhook URL as it may be shown: its scheme and host (the path is often the secret)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}{':' + str(parts.port) if parts.port else ''}/…"


def post_json(url: str, payload: dict[str, Any], timeout: float) -> None:
    """POST `payload` as JSON; raises on a network failure or a non-2xx answer."""
    body = json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "console-oncall"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http(s) only, checked by the config)
        response.read(65536)


class WebhookSender:
    """One worker thread POSTing queued payloads; `submit` never waits."""

    def __init__(self, timeout_s: float = 5.0, *,
                 post: Callable[[str, dict[str, Any], float], None] = post_json) -> None:
        self.timeout_s = timeout_s
        self._post = post
        self._queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue(QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.sent = 0
        self.failures: deque[str] = deque(maxlen=50)

    def submit(self, url: str, payload: dict[str, Any]) -> bool:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="console-webhooks", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait((url, payload))
            return True
        except queue.Full:
            self.failures.append(f"{redact(url)}: dropped, {QUEUE_SIZE} notifications already waiting")
            return False

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._deliver(*item)
            finally:
                self._queue.task_done()

    def _deliver(self, url: str, payload: dict[str, Any]) -> None:
        for attempt in (1, 2):
            try:
                self._post(url, payload, self.timeout_s)
                self.sent += 1
                return
            except Exception as exc:  # any failure is the webhook's, never the caller's
                reason = getattr(exc, "reason", None) or exc
                if attempt == 2 or self._stop.wait(RETRY_DELAY_S):
                    message = f"{redact(url)}: {type(exc).__name__}: {escapes.plain(reason, 120)}"
                    self.failures.append(message)
                    log.warning("webhook %s", message)
                    return

    def pending(self) -> int:
        return self._queue.unfinished_tasks

    def flush(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the queue to empty; True when it did."""
        deadline = time.monotonic() + max(0.0, timeout)
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self, timeout: float = 0.0) -> None:
        """Let queued POSTs finish for up to `timeout` seconds, then stop the thread."""
        self.flush(timeout)
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread.is_alive():
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                pass


def channel(url: str) -> str:
    """A webhook's consumer name in the on-call store: a hash of its URL (the URL is a secret)."""
    import hashlib

    return "webhook:" + hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def webhook_urls(settings: Any) -> list[str]:
    """`notify.webhook_url` and `notify.webhook_urls`, each once."""
    urls = [getattr(settings, "webhook_url", None), *(getattr(settings, "webhook_urls", None) or [])]
    return list(dict.fromkeys(u for u in urls if u))


class Notifier:
    """Sends each new event once through the configured channels (see the module docstring).

    `settings` is the config's `notify` section (:class:`console.config.NotifySettings`);
    `write` takes the terminal escapes (None: no terminal channel).
    """

    def __init__(
        self,
        store: OnCallStore,
        settings: Any,
        *,
        write: Callable[[str], None] | None = None,
        post: Callable[[str, dict[str, Any], float], None] = post_json,
        consumer: str = "watch",
    ) -> None:
        self.store = store
        self.settings = settings
        self.write = write
        self.consumer = consumer
        """Whose record of what was shown this is: `tui`, `web` or `watch` (see the module docstring)."""
        self.urls = webhook_urls(settings)
        for url in self.urls:  # a webhook new to this data dir is not sent the past
            store.start_channel(channel(url), time.time())
        self.webhooks = WebhookSender(float(getattr(settings, "webhook_timeout_s", 5.0)), post=post)

    @property
    def failures(self) -> list[str]:
        """The latest webhook failures (URLs redacted), oldest first."""
        return list(self.webhooks.failures)

    def already_sent(self, keys: Iterable[str]) -> set[str]:
        """Which of these events every consumer of this notifier (its own, each webhook) was given."""
        keys = list(keys)
        done = self.store.delivered_keys(self.consumer, keys)
        for url in self.urls:
            done &= self.store.delivered_keys(channel(url), done)
        return done

    def backlog(self, since: float, found: Iterable[str] = ()) -> list[Event]:
        """The events found from `since` on, by any watcher of this data dir, that this notifier's
        consumers (its own, each webhook) were not all given, less those in `found` (found again
        now): a stall that ended, an alert, a failure a web tab saw while nobody else watched."""
        skip = set(found)
        pending: dict[str, str] = {}
        for consumer in (self.consumer, *map(channel, self.urls)):
            for key, payload in self.store.undelivered(consumer, since):
                if key not in skip:
                    pending.setdefault(key, payload)
        return [e for e in map(Event.from_payload, pending.values()) if e is not None]

    def send(self, events: Iterable[Event]) -> list[Event]:
        """Record the events, and give each consumer those it was not given before; returns the
        ones new to this notifier's own consumer (in order), what its screen or stdout shows.
        Those every consumer was given before are passed over after one read of the store, and
        the rest are written in one transaction: a pass finds each of 2,000 queued runs stuck."""
        consumers = [self.consumer, *map(channel, self.urls)]
        once: dict[str, Event] = {}
        for event in events:
            once.setdefault(event.key, event)
        given_before = [self.store.delivered_keys(c, once) for c in consumers] if once else []
        new = [e for e in once.values() if not all(e.key in before for before in given_before)]
        if not new:
            return []
        given = self.store.claim_and_deliver(
            [(e.key, e.kind, e.job_id, e.at, json.dumps(e.to_dict(), default=str)) for e in new], consumers)
        fresh = []
        for event in new:
            if (self.consumer, event.key) in given:
                fresh.append(event)
                self._to_terminal(event)
            for url in self.urls:
                if (channel(url), event.key) in given:
                    self.webhooks.submit(url, webhook_payload(url, event))
        return fresh

    def _to_terminal(self, event: Event) -> None:
        if self.write is None:
            return
        text = escapes.notification(
            f"console {event.level}", f"{event.title}: {event.text}",
            bell=bool(getattr(self.settings, "bell", False)),
            desktop=str(getattr(self.settings, "desktop", "off")),
        )
        if text:
            try:
                self.write(text)
            except Exception:  # a closed terminal must not stop the webhooks
                pass

    def flush(self, timeout: float) -> bool:
        return self.webhooks.flush(timeout)

    def close(self, timeout: float = 0.0) -> None:
        self.webhooks.close(timeout)
