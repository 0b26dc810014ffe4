"""app/adapters/registry.py: adapter folder, stable task ids, weights on first use only, retry after eviction, safe zips."""

from __future__ import annotations

import shutil
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from app.adapters.registry import AdapterError, AdapterRegistry
from app.core.errors import LoraNotInCache, ServerUnreachable
from setup.lora.convert import CONFIG_FILE, WEIGHTS_FILE, convert_peft, save_converted
from tests.lora_helpers import TINY, write_engine_config, write_peft


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "adapters"
    write_peft(root / "alpha", shape=TINY, seed=1)
    write_peft(root / "beta", shape=TINY, seed=2, rank=8)
    (root / "notes").mkdir()  # not an adapter: ignored
    return root


def test_ids_come_from_the_files_so_every_folder_and_process_agrees(folder, tmp_path):
    first = AdapterRegistry(folder)
    ids = {name: first.task_id(name) for name in first.names()}
    assert first.names() == ["alpha", "beta"] and len(set(ids.values())) == 2
    assert all(0 < task_id < 2 ** 52 for task_id in ids.values())  # exact as a JSON number in a browser
    assert {name: AdapterRegistry(folder).task_id(name) for name in first.names()} == ids
    other = tmp_path / "elsewhere"
    shutil.copytree(folder / "alpha", other / "renamed")  # another app's folder with the same weights
    assert AdapterRegistry(other).task_id("renamed") == ids["alpha"]
    assert not [p.name for p in folder.iterdir() if p.is_file()]  # no state written beside the adapters


def test_changed_or_replaced_adapters_get_new_ids(folder, tmp_path):
    registry = AdapterRegistry(folder)
    old_alpha, old_beta = registry.task_id("alpha"), registry.task_id("beta")
    write_peft(folder / "alpha", shape=TINY, seed=9)  # new weights under the same name
    assert registry.task_id("alpha") not in (old_alpha, old_beta, 0)
    registry.remove("beta")
    assert not (folder / "beta").exists() and registry.names() == ["alpha"]
    registry.add_folder(write_peft(tmp_path / "beta", shape=TINY, seed=2, rank=8))
    assert registry.task_id("beta") == old_beta  # the same weights again: a server holding them may keep them
    registry.remove("beta")
    registry.add_folder(write_peft(tmp_path / "beta2", shape=TINY, seed=5, rank=8), name="beta")
    assert registry.task_id("beta") not in (old_alpha, old_beta, registry.task_id("alpha"))


def test_weights_travel_on_first_use_only(folder):
    registry = AdapterRegistry(folder)
    first = registry.extra_inputs("alpha")
    assert set(first) == {"lora_task_id", "lora_weights", "lora_config"}
    assert first["lora_weights"].dtype == np.float16 and first["lora_weights"].shape[0] == 1
    assert first["lora_config"].dtype == np.int32 and first["lora_config"].shape[2] == 3
    registry.mark_held(first["lora_task_id"])
    assert registry.extra_inputs("alpha") == {"lora_task_id": first["lora_task_id"]}
    assert set(registry.extra_inputs("alpha", first_use=True)) == set(first)
    registry.observe_server(live=False)
    assert "lora_weights" in registry.extra_inputs("alpha")


def test_listing(folder):
    registry = AdapterRegistry(folder)
    infos = {a.name: a for a in registry.list()}
    beta = infos["beta"]
    weights, config = registry.tensors("beta")
    assert (beta.rank, beta.target_modules, beta.kind) == (8, ("q_proj", "v_proj"), "peft")
    assert beta.size_bytes == weights.nbytes + config.nbytes and not beta.held_by_server
    registry.mark_held(beta.task_id)
    assert registry.info("beta").held_by_server
    assert [a.name for a in registry.list()] == ["alpha", "beta"]


def test_converted_pairs_are_adapters_too(folder):
    save_converted(convert_peft(folder / "alpha", "float32"), folder / "gamma")
    registry = AdapterRegistry(folder)
    weights, _ = registry.tensors("gamma")
    assert registry.info("gamma").kind == "converted" and weights.dtype == np.float16
    np.testing.assert_array_equal(weights, registry.tensors("alpha")[0])
    save_converted(convert_peft(folder / "alpha", "bfloat16"), folder / "delta")
    with pytest.raises(AdapterError, match="bfloat16 weights"):
        registry.info("delta")
    assert "delta" in registry.problems() and "delta" not in [a.name for a in registry.list()]


def test_engine_checks_apply_when_the_engine_is_known(folder, tmp_path):
    registry = AdapterRegistry(folder, engine_dir=write_engine_config(tmp_path / "engine", shape=TINY, max_rank=4))
    assert [a.name for a in registry.list()] == ["alpha"]
    assert "max_lora_rank 4" in registry.problems()["beta"]
    with pytest.raises(AdapterError, match="rank 16 is above"):
        registry.add_folder(write_peft(tmp_path / "big", shape=TINY, rank=16))
    assert not (folder / "big").exists()


def test_prefetch_layout(folder, tmp_path):
    registry = AdapterRegistry(folder)
    out = registry.write_prefetch_dir(tmp_path / "prefetch")
    ids = sorted(str(registry.task_id(n)) for n in registry.names())
    assert sorted(p.name for p in out.iterdir()) == ids
    for task in ids:
        assert sorted(p.name for p in (out / task).iterdir()) == sorted([WEIGHTS_FILE, CONFIG_FILE])
        assert np.load(out / task / WEIGHTS_FILE).dtype == np.float16


# ---- adding adapters --------------------------------------------------------------------------------
def _zip(path: Path, members: dict, links: tuple = ()) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def _adapter_files(tmp_path: Path) -> dict:
    source = write_peft(tmp_path / "src", shape=TINY, seed=5)
    return {p.name: p.read_bytes() for p in source.iterdir()}


def test_add_zip_with_or_without_a_top_folder(folder, tmp_path):
    registry = AdapterRegistry(folder)
    files = _adapter_files(tmp_path)
    info = registry.add_zip(_zip(tmp_path / "pirate2.zip", {f"pirate2/{k}": v for k, v in files.items()}))
    assert info.name == "pirate2" and info.task_id >= 1 and (folder / "pirate2" / "adapter_config.json").is_file()
    flat = registry.add_zip(_zip(tmp_path / "x.zip", {**files, "__MACOSX/._junk": b"", "extra.txt": b"ignored"}),
                            name="flat")
    assert flat.name == "flat" and not (folder / "flat" / "extra.txt").exists()
    with pytest.raises(AdapterError, match="already exists"):
        registry.add_zip(tmp_path / "x.zip", name="flat")
    assert not [p for p in folder.iterdir() if p.name.startswith(".adding")], "no staging folders left behind"


@pytest.mark.parametrize("members, links, message", [
    ({"../evil/adapter_config.json": b"{}"}, (), "leaves its folder"),
    ({"a/../../adapter_config.json": b"{}"}, (), "leaves its folder"),
    ({"/etc/adapter_config.json": b"{}"}, (), "absolute path"),
    ({"C:/adapter_config.json": b"{}"}, (), "absolute path"),
    ({"adapter_config.json": b"{}"}, ("adapter_model.safetensors",), "symbolic link"),
    ({"a/b/adapter_config.json": b"{}", "a/adapter_model.bin": b""}, (), "one adapter"),
    ({"readme.txt": b"hello"}, (), "is not an adapter"),
])
def test_unsafe_or_wrong_zips_are_refused(folder, tmp_path, members, links, message):
    registry = AdapterRegistry(folder)
    with pytest.raises(AdapterError, match=message):
        registry.add_zip(_zip(tmp_path / "bad.zip", members, links))
    assert sorted(p.name for p in folder.iterdir()) == ["alpha", "beta", "notes"]
    assert not (tmp_path / "evil").exists()


def test_zip_size_limits(folder, tmp_path):
    files = _adapter_files(tmp_path)
    archive = _zip(tmp_path / "big.zip", files)
    with pytest.raises(AdapterError, match="the limit is"):
        AdapterRegistry(folder, max_zip_bytes=100).add_zip(archive)
    with pytest.raises(AdapterError, match="would unpack to"):
        AdapterRegistry(folder, max_unpacked_bytes=1000).add_zip(archive)
    (tmp_path / "fake.zip").write_bytes(b"not a zip")
    with pytest.raises(AdapterError, match="not a valid zip"):
        AdapterRegistry(folder).add_zip(tmp_path / "fake.zip")


def test_add_folder_refuses_links_bad_names_and_broken_adapters(folder, tmp_path):
    registry = AdapterRegistry(folder)
    linked = write_peft(tmp_path / "linked", shape=TINY)
    (linked / "adapter_model.safetensors").rename(tmp_path / "real.safetensors")
    (linked / "adapter_model.safetensors").symlink_to(tmp_path / "real.safetensors")
    with pytest.raises(AdapterError, match="symbolic link"):
        registry.add_folder(linked)
    with pytest.raises(AdapterError, match="is not allowed"):
        registry.add_folder(write_peft(tmp_path / "ok", shape=TINY), name="../escape")
    broken = write_peft(tmp_path / "broken", shape=TINY)
    (broken / "adapter_config.json").write_text("{")
    with pytest.raises(AdapterError, match="not valid JSON"):
        registry.add_folder(broken)
    with pytest.raises(AdapterError, match="no adapter named"):
        registry.remove("nothing")
    assert registry.names() == ["alpha", "beta"]


# ---- streaming with retry (a fake server that holds tasks like the backend) -----------------------------
class FakeStream:
    def __init__(self, deltas, error=None):
        self._deltas, self._error = list(deltas), error
        self.text, self.cancelled, self.request_id, self.responses = "", False, "fake", 0

    def __next__(self):
        if self._deltas:
            delta = self._deltas.pop(0)
            self.text += delta
            return delta
        if self._error is not None:
            raise self._error
        raise StopIteration

    def cancel(self):
        self.cancelled = True


class FakeServer:
    """Answers like the backend: an unknown task id without weights is 'not found in cache'."""

    def __init__(self):
        self.cache, self.requests = set(), []
        self.fail_after_text = False
        self.unreachable = False

    def stream(self, prompt, params, extra):
        self.requests.append(dict(extra))
        if self.unreachable:
            raise ServerUnreachable("down")
        task = extra.get("lora_task_id")
        if task is not None and "lora_weights" in extra:
            self.cache.add(task)
        if task is not None and task not in self.cache:
            return FakeStream([], LoraNotInCache("gone", task))
        if self.fail_after_text:
            return FakeStream(["Arr"], LoraNotInCache("gone", task))
        return FakeStream(["Arr", " matey"])


def test_stream_sends_weights_once_and_recovers_from_eviction(folder):
    registry, server = AdapterRegistry(folder), FakeServer()
    size = sum(a.nbytes for a in registry.tensors("alpha"))
    first = registry.stream(server, "alpha", "hi", None)
    assert "".join(first) == "Arr matey" and first.lora_bytes_sent == size + 8 and first.weights_sent
    second = registry.stream(server, "alpha", "hi", None)
    assert second.adapter == "alpha" and "".join(second) == "Arr matey"
    assert second.lora_bytes_sent == 8 and not second.weights_sent and not second.retried
    server.cache.clear()  # evicted, or the server restarted
    third = registry.stream(server, "alpha", "hi", None)
    assert "".join(third) == "Arr matey" and third.retried and third.lora_bytes_sent == 8 + size + 8
    assert [("lora_weights" in r) for r in server.requests] == [True, False, False, True]
    assert third.time_to_first_token is not None and registry.info("alpha").held_by_server


def test_no_retry_once_text_was_shown(folder):
    registry, server = AdapterRegistry(folder), FakeServer()
    registry.generate(server, "alpha", "hi", None)
    server.fail_after_text = True
    stream = registry.stream(server, "alpha", "hi", None)
    assert next(stream) == "Arr"
    with pytest.raises(LoraNotInCache):
        next(stream)
    assert not registry.info("alpha").held_by_server and len(server.requests) == 2


def test_unreachable_server_forgets_what_it_held(folder):
    registry, server = AdapterRegistry(folder), FakeServer()
    registry.generate(server, "alpha", "hi", None)
    assert registry.info("alpha").held_by_server
    server.unreachable = True
    with pytest.raises(ServerUnreachable):
        registry.stream(server, "beta", "hi", None)
    assert not registry.info("alpha").held_by_server


def test_base_model_sends_no_lora_inputs(folder):
    registry, server = AdapterRegistry(folder), FakeServer()
    for name in (None, ""):
        stream = registry.stream(server, name, "hi", None, extra={"max_tokens": 5})
        assert stream.adapter is None and "".join(stream) == "Arr matey" and stream.lora_bytes_sent == 0
    assert all(set(r) == {"max_tokens"} for r in server.requests)


def test_an_adapters_training_pairs_travel_with_it_and_do_not_change_its_task_id(tmp_path):
    from setup.lora.dataset import Example
    from setup.lora.record import TrainingPair, write_record

    source = write_peft(tmp_path / "trained", shape=TINY, seed=7)
    before = AdapterRegistry(tmp_path).task_id("trained")
    write_record(source, [Example.from_pair("Say hello.", "Howdy, partner!")])
    registry = AdapterRegistry(tmp_path / "adapters")
    registry.add_folder(source, "copied")
    assert registry.training_pairs("copied") == (TrainingPair("Say hello.", "Howdy, partner!"),)
    assert registry.task_id("copied") == before
    with zipfile.ZipFile(tmp_path / "zipped.zip", "w") as archive:
        for path in source.iterdir():
            archive.write(path, path.name)
    registry.add_zip(tmp_path / "zipped.zip")
    assert registry.training_pairs("zipped") == registry.training_pairs("copied")
    assert registry.training_pairs("nope") == () and registry.training_pairs("../x") == ()


def test_with_a_known_engine_modules_it_lacks_are_dropped_as_the_audit_says(folder, tmp_path):
    """The engine applies q only: an adapter of q and v is listed (v's rows are left out when sent); one of v alone
    is refused, naming the module."""
    engine = write_engine_config(tmp_path / "engine", shape=TINY, max_rank=64, modules=("attn_q",))
    registry = AdapterRegistry(folder, engine_dir=engine)
    registry.add_folder(write_peft(tmp_path / "qv", shape=TINY, modules=("q_proj", "v_proj")))
    assert "qv" in registry.names()
    with pytest.raises(AdapterError, match=r"targets v_proj \(attn_v\), which the engine was not built for"):
        registry.add_folder(write_peft(tmp_path / "v-only", shape=TINY, modules=("v_proj",)))
