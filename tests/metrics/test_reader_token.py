"""The Trackio Space reader logs in the way huggingface_hub does: `$HF_TOKEN`, else the token that
`hf auth login` saved — not only `$HF_TOKEN`."""

from __future__ import annotations

import huggingface_hub.constants

from console.config import Config, TrackioSettings
from console.trackio_metrics import NoMetricsReader, SpaceTrackioReader, reader_for


def test_the_space_reader_uses_the_saved_login(tmp_path, monkeypatch):
    saved = tmp_path / "token"
    saved.write_text("hf_saved_by_hf_auth_login\n")
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(saved))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    cfg = Config(namespace="ops", backend="hub", trackio=TrackioSettings(space_id="ops/trackio"))
    reader = reader_for(cfg)
    assert isinstance(reader, SpaceTrackioReader) and reader.space_id == "ops/trackio"
    assert reader.hf_token == "hf_saved_by_hf_auth_login"
    monkeypatch.setenv("HF_TOKEN", "hf_from_the_environment")  # HF_TOKEN first, as huggingface_hub does
    assert reader_for(cfg).hf_token == "hf_from_the_environment"


def test_no_space_no_reader_and_local_runs_read_the_local_store():
    assert isinstance(reader_for(Config(namespace="ops", backend="hub")), NoMetricsReader)
    local = Config(namespace="ops", backend="local", trackio=TrackioSettings(space_id="ops/trackio"))
    assert not isinstance(reader_for(local), SpaceTrackioReader)
