"""The contracts rule: outside app/deployments nothing probes a deployment or a stream with getattr()."""

from __future__ import annotations

from pathlib import Path

from scripts.check_contracts import breaches, main, probes

ROOT = Path(__file__).resolve().parents[3]


def test_getattr_on_a_deployment_or_stream_is_found_but_not_on_other_objects():
    source = ('def f(ctx, stream, self, item):\n'
              '    a = getattr(stream, "chunks", 0)\n'
              '    b = getattr(ctx.deployment, "family", None)\n'
              '    c = getattr(self._tracked_stream, "finish_reason")\n'
              '    d = getattr(item, "name", None)\n'
              '    e = stream.chunks\n')
    assert probes(source) == [(2, "stream"), (3, "ctx.deployment"), (4, "self._tracked_stream")]


def test_a_probe_outside_app_deployments_is_a_breach_and_inside_it_is_not(tmp_path):
    chat = tmp_path / "app" / "chat"
    kinds = tmp_path / "app" / "deployments"
    chat.mkdir(parents=True)
    kinds.mkdir()
    (kinds / "stream.py").write_text('def f(stream):\n    return getattr(stream, "details", {})\n')
    (chat / "figures.py").write_text('def f(stream):\n    return getattr(stream, "lora_bytes_sent", 0)\n')
    root = tmp_path / "app"
    assert len(breaches([root])) == 1 and breaches([root])[0].startswith(f"{chat / 'figures.py'}:2: getattr(stream")
    assert main([str(root)]) == 1
    (chat / "figures.py").write_text("def f(stream):\n    return stream.lora_bytes_sent\n")
    assert main([str(root)]) == 0


def test_the_app_keeps_the_rule():
    assert breaches([ROOT / "app"]) == []
