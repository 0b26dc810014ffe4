"""Text deltas of a streamed runner reply (runner_lib/deltas.py): what each decode of everything generated so far
adds, settled (no half character, no trailing whitespace, no possible start of a stop string), adding up to the
runner's stripped text cut at the first stop string."""

from __future__ import annotations

import sys

from setup.paths import TEMPLATES_DIR

sys.path.insert(0, str(TEMPLATES_DIR / "multimodal_runner" / "multimodal_runner" / "1"))

from runner_lib.deltas import StreamedText, held_back  # noqa: E402


def feed(decodes: list[str], stop: tuple[str, ...] = ()) -> tuple[list[str], str, bool]:
    text = StreamedText(stop)
    pieces = [text.update(d) for d in decodes]
    return pieces, text.finish(decodes[-1]), text.stopped


def test_a_tail_that_may_start_a_stop_string_waits():
    assert held_back("a cat sl", ("sleeps", "x")) == 2 and held_back("a cat", ("sleeps",)) == 0
    assert held_back("ab", ("abc", "b")) == 2


def test_the_pieces_add_up_to_the_stripped_text():
    pieces, rest, stopped = feed(["\n", "\n A", "\n A cat", "\n A cat \n", "\n A cat \n sleeps\n"])
    assert pieces == ["", "A", " cat", "", " \n sleeps"] and rest == "" and not stopped
    assert "".join(pieces) + rest == "\n A cat \n sleeps\n".strip()


def test_a_character_whose_bytes_are_not_all_decoded_waits_for_the_next_token():
    pieces, rest, _ = feed(["Le ", "Le \ufffd", "Le é", "Le été"])
    assert pieces == ["Le", "", " é", "té"] and rest == ""


def test_a_stop_string_cuts_and_nothing_follows_it():
    text = StreamedText(("\nUser:",))
    assert text.update("Yes") == "Yes" and text.update("Yes.\nUs") == "."
    assert text.update("Yes.\nUser: more") == "" and text.stopped
    assert text.update("Yes.\nUser: more and more") == "" and text.finish("anything") == "" and text.sent == "Yes."


def test_text_the_decoder_rewrote_waits_and_the_end_sends_what_differs():
    text = StreamedText()
    assert text.update("it 's") == "it 's"
    assert text.update("it's fine") == ""  # a clean-up changed text already sent: wait for it to settle
    # nothing sent is lost; the client shows the rewritten part after what it has
    assert text.finish("it's fine") == "'s fine" and text.sent == "it 's's fine"
