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
