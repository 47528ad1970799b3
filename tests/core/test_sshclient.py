"""The one ssh argv of the console: the local server's key alone, host keys in the data folder."""

from __future__ import annotations

import subprocess

from console import paths, sshclient


def _option(argv: list[str], name: str) -> str | None:
    values = [argv[i + 1].split("=", 1)[1] for i, a in enumerate(argv[:-1]) if a == "-o" and
              argv[i + 1].startswith(name + "=")]
    return values[-1] if values else None


def test_local_ssh_offers_the_servers_key_only_and_keeps_host_keys_in_the_data_folder():
    key = paths.server_ssh_key_path()
    key.parent.mkdir(parents=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    url = "ssh://job123@127.0.0.1:40001"
    argv = sshclient.ssh_argv("/usr/bin/ssh", url, local=True)
    assert argv[0] == "/usr/bin/ssh" and argv[-1] == url
    assert argv[argv.index("-i") + 1] == str(key)
    assert _option(argv, "IdentitiesOnly") == "yes"
    known = _option(argv, "UserKnownHostsFile")
    assert known == str(paths.data_dir() / "ssh" / "known_hosts")
    assert _option(argv, "StrictHostKeyChecking") == "accept-new"
    assert _option(argv, "HostKeyAlias")  # one entry, whatever port the server has this time


def test_hub_ssh_uses_the_users_keys_and_writes_new_host_keys_to_the_data_folder(tmp_path):
    log = tmp_path / "ssh.log"
    argv = sshclient.ssh_argv("ssh", "ssh://job@ssh.example", local=False, log_file=log)
    assert "-i" not in argv and _option(argv, "IdentitiesOnly") is None
    assert argv[argv.index("-E") + 1] == str(log)
    files = _option(argv, "UserKnownHostsFile").split()
    assert files[0] == str(paths.data_dir() / "ssh" / "known_hosts")  # ssh writes new keys to the first
    assert _option(argv, "StrictHostKeyChecking") is None  # asked, as for any host


def test_last_lines_are_ssh_s_last_non_empty_lines(tmp_path):
    log = tmp_path / "ssh.log"
    log.write_text("Warning: Permanently added 'x' (ED25519) to the list of known hosts.\n\n"
                   "job@127.0.0.1: Permission denied (publickey).\n\n")
    assert sshclient.last_lines(log, 1) == ["job@127.0.0.1: Permission denied (publickey)."]
    assert len(sshclient.last_lines(log)) == 2
    assert sshclient.last_lines(tmp_path / "missing.log") == []
