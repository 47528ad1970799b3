"""The hub backend's namespace: the token's user from `whoami` (kept, so that a rate-limited or
unreachable `whoami` is asked rarely), never the OS user name; a configured namespace the token
cannot use is refused in one line. Against the embedded server through huggingface_hub's own login
(HF_TOKEN); the server's `whoami` answers as huggingface.co's does."""

from __future__ import annotations

import getpass
import json

import pytest
from jobs_helpers import NAMESPACE, make_server

from console import paths
from console.backend import HUB, BackendError, connect
from console.backend import identity as identity_mod
from console.backend.identity import Identity, hub_namespace
from console.cli import main
from console.config import Config, load, save
from console.server.faults import Fault


@pytest.fixture
def hub(monkeypatch):
    srv = make_server(faults=True)
    srv.start()
    monkeypatch.setenv("HF_TOKEN", srv.token)
    try:
        yield srv
    finally:
        srv.stop()


def test_with_no_namespace_configured_jobs_run_under_the_tokens_user(hub):
    cfg = Config(backend=HUB, endpoint=hub.url)
    assert cfg.namespace == getpass.getuser() != NAMESPACE  # the default: the OS user name
    with connect(cfg) as backend:
        assert backend.namespace == NAMESPACE
        assert list(backend.api.list_jobs()) == []  # the api's own default too
        assert list(backend.api.list_scheduled_jobs(namespace=backend.namespace)) == []


def test_whoami_is_kept_and_an_old_answer_stands_in_when_it_fails(hub, monkeypatch):
    cfg = Config(backend=HUB, endpoint=hub.url)
    with connect(cfg):
        pass
    kept = json.loads((paths.data_dir() / identity_mod.CACHE_FILENAME).read_text())
    assert [v["name"] for v in kept.values()] == [NAMESPACE]
    assert hub.token not in json.dumps(kept)  # names only, keyed by a hash
    hub.faults.add(Fault("status", path=r"^/api/whoami-v2$", status=401, times=None))
    with connect(cfg) as backend:  # fresh: not asked at all
        assert backend.namespace == NAMESPACE
    assert hub.faults.fired == []
    monkeypatch.setattr(identity_mod, "FRESH_SECONDS", 0)
    with connect(cfg) as backend:  # stale, and whoami fails: the kept answer still names the account
        assert backend.namespace == NAMESPACE
    assert [path for _, _, path in hub.faults.fired] == ["/api/whoami-v2"]


def test_a_configured_namespace_the_token_cannot_use_is_refused_in_one_line(hub, capsys):
    with connect(Config(namespace=NAMESPACE, backend=HUB, endpoint=hub.url)) as backend:
        assert backend.namespace == NAMESPACE
    save(Config(namespace="someone-else", backend=HUB, endpoint=hub.url))
    with pytest.raises(BackendError) as err:
        connect(load())
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"namespace 'someone-else' is not usable with this token: it belongs to '{NAMESPACE}'")
    assert main(["fleet", "show"]) == 2
    assert capsys.readouterr().err.strip() == f"console: {message}"


def test_no_namespace_and_no_whoami_is_refused_rather_than_guessed(hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(BackendError, match=r"cannot tell which namespace .*not logged in.*config set namespace"):
        connect(Config(backend=HUB, endpoint=hub.url))


class _Whoami:
    """A stand-in with huggingface.co's whoami-v2 answer for a member of two orgs (the embedded
    server's account has none)."""

    endpoint = "https://huggingface.co"
    token = "hf_member_token"

    def whoami(self, token=None, cache=False):
        return {"type": "user", "name": "alice", "orgs": [{"type": "org", "name": "acme-ml"},
                                                            {"type": "org", "name": "globex"}]}


def test_an_org_the_token_is_a_member_of_is_usable():
    api = _Whoami()
    assert hub_namespace(api, "acme-ml") == "acme-ml"
    assert hub_namespace(api, None) == "alice"
    with pytest.raises(BackendError, match=r"'initech' is not usable.*belongs to 'alice' \(orgs: acme-ml, globex\)"):
        hub_namespace(api, "initech")
    assert Identity.from_whoami(api.whoami()).namespaces == ("alice", "acme-ml", "globex")
