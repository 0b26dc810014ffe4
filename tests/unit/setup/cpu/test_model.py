"""setup.cpu.model: the CPU model is converted once, also when several processes ask for it at the same time."""

from __future__ import annotations

import threading
import time

from setup.cpu import model


def test_concurrent_callers_convert_once_and_all_get_the_folder(tmp_path, monkeypatch):
    conversions, started = [], threading.Event()

    def convert(target, log):
        conversions.append(target)
        started.set()
        time.sleep(0.3)  # a conversion takes a while: the other callers arrive meanwhile
        target.mkdir(parents=True)
        (target / model._DONE_MARKER).write_text("x\n")
        return target

    monkeypatch.setattr(model, "_convert", convert)
    results, together = [], threading.Barrier(4)

    def call():
        together.wait()
        results.append(model.prepare_cpu_model(tmp_path, log=lambda *_: None))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert started.is_set() and len(conversions) == 1
    assert results == [model.model_dir(tmp_path)] * 4
    assert model.is_prepared(tmp_path)


def test_the_folder_carries_the_model_cards_sampling_and_keeps_its_other_fields(tmp_path, monkeypatch):
    """A folder prepared before the defaults were written gets them on the next call, its own fields kept."""
    import json

    folder = model.model_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / model._DONE_MARKER).write_text("x\n")
    (folder / model.GENERATION_CONFIG).write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}))
    monkeypatch.setattr(model, "_convert", lambda *_: (_ for _ in ()).throw(AssertionError("converted again")))
    assert model.prepare_cpu_model(tmp_path, log=lambda *_: None) == folder
    written = json.loads((folder / model.GENERATION_CONFIG).read_text())
    assert written == {"bos_token_id": 1, "eos_token_id": 2, "do_sample": True, "temperature": 0.2, "top_p": 0.9}
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
