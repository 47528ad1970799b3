"""Notifications: each event once (across restarts and between two watchers), to the terminal
(bell, OSC 9 / 777) and to webhooks received by a real HTTP listener, and a dead or slow webhook
never holds up the caller."""

from __future__ import annotations

import base64
import threading

from console.config import NotifySettings
from console.oncall import Event, Notifier, escapes
from console.oncall.notify import post_json, webhook_payload
from console.oncall.store import OnCallStore


def _event(key: str = "job_error:j1", kind: str = "job_error") -> Event:
    return Event(key=key, kind=kind, level="ERROR", title="acme sft job j1 failed",
                 text="ZeroDivisionError: division by zero; billed $0.01", at=1_800_000_000.0,
                 job_id="j1", tenant="acme")


def test_a_webhook_receives_the_event_as_json_once_even_after_a_restart(tmp_path, listener):
    settings = NotifySettings(webhook_url=listener.url + "/generic",
                              webhook_urls=[listener.url + "/second", listener.url + "/generic"])
    notifier = Notifier(OnCallStore(tmp_path / "oncall.sqlite"), settings)
    assert notifier.send([_event(), _event()]) == [_event()]
    assert notifier.flush(10)
    assert sorted(p for p, _ in listener.posts) == ["/generic", "/second"]  # each URL once
    body = listener.bodies("/generic")[0]
    assert body["event"] == "job_error" and body["job_id"] == "j1" and body["tenant"] == "acme"
    assert body["text"].startswith("ZeroDivisionError")
    notifier.close(1)

    restarted = Notifier(OnCallStore(tmp_path / "oncall.sqlite"), settings)
    assert restarted.send([_event()]) == []
    assert restarted.send([_event("stall:j1:1", "stall")])[0].kind == "stall"
    assert restarted.flush(10)
    assert len(listener.posts) == 4
    restarted.close(1)


def test_two_watchers_of_one_data_dir_send_an_event_once(tmp_path):
    a = Notifier(OnCallStore(tmp_path / "oncall.sqlite"), NotifySettings())
    b = Notifier(OnCallStore(tmp_path / "oncall.sqlite"), NotifySettings())
    assert len(a.send([_event()])) + len(b.send([_event()])) == 1


def test_slack_and_discord_urls_get_their_own_shapes():
    slack = webhook_payload("https://hooks.slack.com/services/T/B/x", _event())
    assert slack["text"].startswith("[ERROR] acme sft job j1 failed") and slack["blocks"]
    discord = webhook_payload("https://discord.com/api/webhooks/1/x", _event())
    assert discord["embeds"][0]["title"] == "[ERROR] acme sft job j1 failed"
    assert webhook_payload("https://example.com/hook", _event())["key"] == "job_error:j1"


def test_a_slow_or_failing_webhook_never_blocks_and_is_reported_without_its_secret_path(
    tmp_path, listener
):
    listener.delay = 3.0
    settings = NotifySettings(webhook_url=listener.url + "/secret-path", webhook_timeout_s=0.5,
                              webhook_urls=["http://127.0.0.1:9/refused/secret"])
    handed_over = threading.Event()

    def post_once_send_returned(url, payload, timeout):  # the real POST, once send() has returned
        handed_over.wait(10)
        post_json(url, payload, timeout)

    notifier = Notifier(OnCallStore(tmp_path / "oncall.sqlite"), settings, post=post_once_send_returned)
    assert len(notifier.send([_event()])) == 1
    # send() returned with both POSTs still waiting for the webhook thread: none is made in send()
    assert notifier.webhooks.pending() == 2 and notifier.failures == []
    handed_over.set()
    assert notifier.flush(15)
    failures = notifier.failures
    assert len(failures) == 2, failures
    assert all("secret" not in f for f in failures)
    assert any(f.startswith("http://127.0.0.1:9/") for f in failures)
    notifier.close(0)


def test_the_terminal_gets_the_bell_and_the_desktop_escape_it_opted_into(tmp_path, monkeypatch):
    monkeypatch.delenv("TMUX", raising=False)
    written: list[str] = []
    quiet = Notifier(OnCallStore(tmp_path / "a.sqlite"), NotifySettings(), write=written.append)
    quiet.send([_event()])
    assert written == []  # both opt-in
    loud = Notifier(OnCallStore(tmp_path / "b.sqlite"), NotifySettings(bell=True, desktop="osc777"),
                    write=written.append)
    loud.send([_event("job_error:j2")])
    assert written == ["\a\x1b]777;notify;console ERROR;acme sft job j1 failed: "
                       "ZeroDivisionError: division by zero; billed $0.01\x07"]


def test_escapes_carry_no_job_controlled_sequence_and_pass_through_tmux():
    hostile = "done\x07\x1b]52;c;ZXZpbA==\x07 \x1b[31mred"
    note = escapes.osc9(hostile)
    assert note.count("\x1b") == 1 and note.count("\x07") == 1
    assert escapes.osc777("a;b", "x") == "\x1b]777;notify;a,b;x\x07"
    wrapped = escapes.for_terminal(escapes.osc9("hi"), {"TMUX": "/tmp/tmux-1/default,1,0"})
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\"
    copied = escapes.osc52("/data/incidents/j1.md")
    assert copied == "\x1b]52;c;" + base64.b64encode(b"/data/incidents/j1.md").decode() + "\x07"
    assert escapes.osc52("x" * 100_000) is None


def test_each_consumer_and_each_webhook_keeps_its_own_record(tmp_path, listener):
    settings = NotifySettings(webhook_url=listener.url + "/hook")
    path = tmp_path / "oncall.sqlite"
    web = Notifier(OnCallStore(path), settings, consumer="web")
    assert web.send([_event()]) == [_event()]
    assert web.flush(10) and len(listener.posts) == 1
    watch = Notifier(OnCallStore(path), settings, consumer="watch")
    assert watch.send([_event()]) == [_event()]  # shown by the web tab: still news to `watch`
    assert watch.flush(10) and len(listener.posts) == 1  # the webhook was given it once
    assert watch.send([_event()]) == [] and Notifier(OnCallStore(path), settings, consumer="web").send([_event()]) == []
    # what a watcher found that `tui` was not given comes to it though the tui no longer finds it
    tui = Notifier(OnCallStore(path), settings, consumer="tui")
    assert [e.key for e in tui.backlog(0.0)] == ["job_error:j1"]
    assert tui.backlog(0.0, found={"job_error:j1"}) == [] and tui.backlog(_event().at + 1) == []
    for n in (web, watch, tui):
        n.close(1)


def test_events_sent_before_each_consumer_kept_its_own_record_stay_sent(tmp_path):
    import sqlite3

    path = tmp_path / "oncall.sqlite"
    with sqlite3.connect(path) as conn:  # an on-call file of schema 1: one `sent` for everyone
        conn.execute("CREATE TABLE sent (key TEXT PRIMARY KEY, kind TEXT NOT NULL, job_id TEXT, "
                     "at REAL NOT NULL, payload TEXT NOT NULL)")
        conn.execute("INSERT INTO sent VALUES ('job_error:j1', 'job_error', 'j1', 1800000000.0, '{}')")
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    for consumer in ("tui", "web", "watch"):
        notifier = Notifier(OnCallStore(path), NotifySettings(), consumer=consumer)
        assert notifier.send([_event()]) == []
        assert "job_error:j1" not in {e.key for e in notifier.backlog(0.0)}
        assert notifier.send([_event("job_error:j2")])[0].key == "job_error:j2"  # new: given to each


def test_a_webhook_added_to_the_config_is_not_sent_the_past(tmp_path, listener):
    path = tmp_path / "oncall.sqlite"
    Notifier(OnCallStore(path), NotifySettings(), consumer="tui").send([_event()])
    added = Notifier(OnCallStore(path), NotifySettings(webhook_url=listener.url + "/new"), consumer="tui")
    assert added.backlog(0.0) == []
    added.send([_event(), _event("job_error:j2")])
    assert added.flush(10)
    assert [b["key"] for b in listener.bodies("/new")] == ["job_error:j2"]
    added.close(1)


def test_a_pass_that_finds_events_given_before_opens_the_store_once_however_many(tmp_path):
    """2,000 queued runs of a fired fleet are each 'stuck in SCHEDULING' at every pass: the events
    given before cost one read of the store, the new ones one write, not two connections each (a
    pass took seconds)."""
    store = OnCallStore(tmp_path / "oncall.sqlite")
    opened = []
    connect = store._connect
    store._connect = lambda: (opened.append(1), connect())[1]
    notifier = Notifier(store, NotifySettings())
    stuck = [_event(f"scheduling:j{i}", "scheduling") for i in range(300)]
    assert len(notifier.send(stuck)) == 300
    assert len(opened) <= 2  # what was given before, then every new one in one write
    opened.clear()
    assert notifier.send(stuck) == []
    assert len(opened) == 1
    stall = _event("stall:j7:1", "stall")
    assert notifier.send([*stuck, stall]) == [stall]  # the new one still goes out, once
    assert notifier.send([stall]) == []
