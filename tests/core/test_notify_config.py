"""The [notify] config section: every key documented for `console config keys`, checked on set,
and the webhook list written and read back."""

from __future__ import annotations

import pytest

from console.config import Config, ConfigError, describe_keys, load, save, set_value


def test_every_notify_key_is_documented():
    rows = {key: doc for key, _, doc in describe_keys() if key.startswith("notify.")}
    assert set(rows) == {
        "notify.bell", "notify.desktop", "notify.webhook_url", "notify.webhook_urls",
        "notify.webhook_timeout_s", "notify.stall_after_s", "notify.stall_cpu_pct", "notify.osc52",
        "notify.scheduling_after_s", "notify.schedule_failures", "notify.stale_live_periods",
    }
    assert all(doc for doc in rows.values())


def test_webhooks_round_trip_and_bad_values_are_refused(tmp_path):
    cfg = Config(namespace="me")
    set_value(cfg, "notify.webhook_urls", '["https://hooks.slack.com/services/T/B/x", "http://127.0.0.1:9/h"]')
    set_value(cfg, "notify.desktop", "osc777")
    set_value(cfg, "notify.stall_after_s", "900")
    path = save(cfg, tmp_path / "config.toml")
    again = load(path)
    assert again.notify.webhook_urls == ["https://hooks.slack.com/services/T/B/x", "http://127.0.0.1:9/h"]
    assert again.notify.desktop == "osc777" and again.notify.stall_after_s == 900
    assert again.notify.bell is False and again.notify.webhook_url is None
    for key, text in (("notify.webhook_url", "ftp://x"), ("notify.webhook_urls", '["x"]'),
                      ("notify.desktop", "osc99"), ("notify.stall_after_s", "1"),
                      ("notify.scheduling_after_s", "5"), ("notify.schedule_failures", "0")):
        with pytest.raises(ConfigError, match=key):
            set_value(cfg, key, text)
