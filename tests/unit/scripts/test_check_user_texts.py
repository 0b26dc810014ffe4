"""The user-texts rule: MSG_ constants only in a package's messages.py."""

from __future__ import annotations

from scripts.check_user_texts import breaches, main, stray_texts


def test_module_level_texts_are_found_but_not_locals_or_other_names():
    source = 'MSG_A = "a"\nMSG_B: str = "b"\nLIMIT = 3\n\ndef f():\n    MSG_C = "c"\n    return MSG_C\n'
    assert stray_texts(source) == [(1, "MSG_A"), (2, "MSG_B")]


def test_a_text_outside_messages_py_is_a_breach_and_inside_it_is_not(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "messages.py").write_text('MSG_OK = "fine"\n')
    (package / "worker.py").write_text('from pkg.messages import MSG_OK\nMSG_LOST = "here"\n')
    assert breaches([package]) == [f"{package / 'worker.py'}:2: MSG_LOST belongs in {package / 'messages.py'}"]
    assert main([str(package)]) == 1
    (package / "worker.py").write_text("from pkg.messages import MSG_OK\n")
    assert main([str(package)]) == 0

