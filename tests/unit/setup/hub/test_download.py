"""setup/hub/download.py with the real huggingface_hub client against a hub served on loopback (tests/hub_server.py):
a download, resume after a dropped connection, the errors in a sentence, and a complete download not fetched again."""

from __future__ import annotations

import json
import os

import pytest

from setup.hub import download as hub
from setup.hub.download import DownloadError, download
from tests.hub_server import HubRepo, LoopbackHub, serve

MODEL = "tiny-org/tiny-vlm"
TOKEN = "hf_secretTOKENvalue123"
# 12,582,912 bytes, an LFS file: above the client's 10 MiB read size (huggingface_hub's DOWNLOAD_CHUNK_SIZE), so
# a connection dropped after 11 MB leaves the first 10 MiB written, and the resume asks for the rest.
WEIGHTS = bytes(range(256)) * (12 * 4096)
CHUNK = 10 * 1024 * 1024


def _files() -> dict[str, bytes]:
    return {"config.json": json.dumps({"model_type": "llava", "hidden_size": 64}).encode(),
            "tokenizer.json": b'{"version": "1.0"}',
            "model.safetensors": WEIGHTS,
            "pytorch_model.bin": b"pickle" * 300,  # left out: the repository has safetensors
            "flax_model.msgpack": b"flax" * 300}  # left out: another framework's weights


@pytest.fixture
def loopback_hub(monkeypatch):
    state = LoopbackHub(repos={MODEL: HubRepo(_files())}, tokens={TOKEN})
    server, _ = serve(state)
    monkeypatch.setenv("HF_ENDPOINT", state.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(server.server_address[1]))  # no stored login is read
    yield state
    server.shutdown()
    server.server_close()


def _lines():
    said: list[str] = []
    return said, said.append


def test_a_download_fetches_the_conversion_files_and_marks_the_folder_complete(loopback_hub, tmp_path):
    said, say = _lines()
    folder = download(MODEL, tmp_path / "m", say=say)
    assert sorted(p.name for p in folder.iterdir()) == [".download.json", "config.json", "model.safetensors",
                                                        "tokenizer.json"]
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    marker = json.loads((folder / ".download.json").read_text())
    assert marker["commit"] == loopback_hub.repos[MODEL].commit and marker["files"]["model.safetensors"] == len(WEIGHTS)
    assert any("(100%)" in line for line in said) and said[-1].startswith(f"Downloaded {MODEL}")
    assert loopback_hub.seen("GET", "/api/models/tiny-org/tiny-vlm/revision/main")
    assert not loopback_hub.seen("GET", "pytorch_model.bin") and not loopback_hub.seen("GET", "msgpack")


def test_a_complete_download_is_not_fetched_again(loopback_hub, tmp_path):
    download(MODEL, tmp_path / "m", say=lambda _: None)
    before = len(loopback_hub.requests)
    said, say = _lines()
    download(MODEL, tmp_path / "m", say=say)
    assert len(loopback_hub.requests) == before  # not even the listing
    assert said == [f"{MODEL} ({loopback_hub.repos[MODEL].commit[:12]}) is already downloaded in "
                    f"{(tmp_path / 'm').resolve()}: nothing fetched."]


def test_a_dropped_connection_resumes_with_a_range_request(loopback_hub, tmp_path):
    loopback_hub.drop["model.safetensors"] = 11_000_000
    folder = download(MODEL, tmp_path / "m", say=lambda _: None)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    gets = loopback_hub.seen("GET", "model.safetensors")
    assert [g["range"] for g in gets] == [None, f"bytes={CHUNK}-"]


def test_an_interrupted_download_says_so_keeps_nothing_half_written_and_resumes_on_the_next_run(loopback_hub,
                                                                                                 tmp_path):
    loopback_hub.drop["model.safetensors"] = 11_000_000
    loopback_hub.down_after_drop = True
    with pytest.raises(DownloadError) as failed:
        download(MODEL, tmp_path / "m", say=lambda _: None)
    assert "The download of model.safetensors stopped after 10.5 MB of 12.6 MB" in str(failed.value)
    assert "(the hub answered 503); press Run" in str(failed.value)
    folder = tmp_path / "m"
    assert not (folder / "model.safetensors").exists() and not (folder / ".download.json").exists()
    assert not hub.is_complete(folder, MODEL, "main")
    assert (folder / ".download" / "model.safetensors.part").stat().st_size == CHUNK
    loopback_hub.down = False  # the hub is back: the next run goes on where the part ends
    download(MODEL, folder, say=lambda _: None)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert loopback_hub.seen("GET", "model.safetensors")[-1]["range"] == f"bytes={CHUNK}-"
    assert not (folder / ".download").exists()


def test_a_missing_id_and_a_missing_revision(loopback_hub, tmp_path):
    with pytest.raises(DownloadError, match=r"There is no model tiny-org/nothing-here on the hub at http://127"):
        download("tiny-org/nothing-here", tmp_path / "a", say=lambda _: None)
    with pytest.raises(DownloadError, match=r"The model tiny-org/tiny-vlm has no branch, tag or commit named 'v9'"):
        download(MODEL, tmp_path / "b", "v9", say=lambda _: None)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_refused_token_is_named_and_never_shown(loopback_hub, tmp_path):
    with pytest.raises(DownloadError) as failed:
        download(MODEL, tmp_path / "m", token="hf_expiredTOKEN999", say=lambda _: None)
    assert str(failed.value).startswith("The hub at http://127.0.0.1:") and "refused the token (401" in str(failed.value)
    assert "hf_expiredTOKEN999" not in str(failed.value)
    sent = loopback_hub.requests[-1]["authorization"]
    assert sent == "Bearer hf_expiredTOKEN999"  # the client did send it; only the message leaves it out


def test_a_gated_model_needs_a_token_with_access(loopback_hub, tmp_path):
    loopback_hub.repos[MODEL].gated = True
    with pytest.raises(DownloadError, match=r"tiny-org/tiny-vlm is a gated model: accept its terms .* give a token"):
        download(MODEL, tmp_path / "m", say=lambda _: None)
    assert not loopback_hub.seen("HEAD", "/resolve/")  # said from the listing, before any file
    with pytest.raises(DownloadError, match=r"The token given may not read the gated model tiny-org/tiny-vlm"):
        download(MODEL, tmp_path / "m", token=TOKEN, say=lambda _: None)
    loopback_hub.repos[MODEL].granted.add(TOKEN)
    folder = download(MODEL, tmp_path / "m", token=TOKEN, say=lambda _: None)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS


def test_no_network_is_one_sentence(monkeypatch, tmp_path):
    from tests.servers import free_port

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    with pytest.raises(DownloadError, match=r"^Cannot reach the hub at http://127\.0\.0\.1:\d+ \(.+\): check the "):
        download(MODEL, tmp_path / "m", say=lambda _: None)


def test_the_disk_is_checked_before_any_file_is_fetched(loopback_hub, tmp_path, monkeypatch):
    real = hub.shutil.disk_usage

    def small_disk(path):  # the real answer, with 5 MB free: less than the weights need
        return real(path)._replace(free=5_000_000)

    monkeypatch.setattr(hub.shutil, "disk_usage", small_disk)
    with pytest.raises(DownloadError, match=r"Not enough disk space in .*: the files still to download need "
                                            r"12\.6 MB, and 5\.0 MB is free"):
        download(MODEL, tmp_path / "m", say=lambda _: None)
    assert not loopback_hub.seen("GET", "/resolve/") and not loopback_hub.seen("HEAD", "/resolve/")


def test_a_folder_with_other_files_is_not_written_into(loopback_hub, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(DownloadError, match="already holds other files"):
        download(MODEL, tmp_path / "mine", say=lambda _: None)
    assert os.listdir(tmp_path / "mine") == ["notes.txt"]


def test_the_files_a_conversion_reads():
    files = tuple(hub.HubFile(n, 1) for n in ("config.json", "model-00001-of-00002.safetensors", "pytorch_model.bin",
                                              "tf_model.h5", "original/consolidated.00.pth", "tokenizer.model",
                                              "modeling_internlm2.py", ".gitattributes"))
    assert [f.name for f in hub.choose_files(files)] == ["config.json", "model-00001-of-00002.safetensors",
                                                         "tokenizer.model", "modeling_internlm2.py"]
    only_bin = (hub.HubFile("config.json", 1), hub.HubFile("pytorch_model.bin", 1))
    assert [f.name for f in hub.choose_files(only_bin)] == ["config.json", "pytorch_model.bin"]
