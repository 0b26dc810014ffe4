from app.triton.textstream import IncrementalText, StopWordTrim

TEXT = "Café ☕ costs 3€ 😀 ok"


def chunks_of(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_delta_mode_never_splits_characters():
    for size in (1, 2, 3, 5):
        text = IncrementalText(accumulated=False)
        pieces = [text.feed(c) for c in chunks_of(TEXT.encode(), size)]
        text.finish()
        assert text.text == TEXT
        assert all("\ufffd" not in p for p in pieces)


def test_accumulated_mode_emits_only_new_text():
    text = IncrementalText(accumulated=True)
    data = TEXT.encode()
    out = [text.feed(data[:i]) for i in range(1, len(data) + 1)]
    assert "".join(out) == TEXT
    assert all("\ufffd" not in p for p in out)


def test_spaces_between_tokens_are_kept():
    text = IncrementalText(accumulated=False)
    for piece in [b"The", b" capital", b" of", b" France"]:
        text.feed(piece)
    assert text.text == "The capital of France"


def test_rewritten_prefix_is_ignored():
    text = IncrementalText(accumulated=True)
    text.feed(b"Hello wor")
    assert text.feed(b"Hello") == ""  # the server blanked a partial stop word
    assert text.text == "Hello wor"


def test_stream_ending_mid_character_is_flagged():
    text = IncrementalText(accumulated=False)
    text.feed("😀".encode()[:2])
    assert text.finish() == "\ufffd"


def _trimmed(words, deltas):
    trim = StopWordTrim(words)
    shown = [trim.feed(d) for d in deltas]
    shown.append(trim.finish())
    return shown, trim.text


def test_a_stop_word_split_over_deltas_is_held_back_and_dropped():
    shown, text = _trimmed(["</s>", "STOP"], ["Paris is", " nice.</", "s>"])
    assert shown == ["Paris is", " nice.", "", ""] and text == "Paris is nice."


def test_what_only_looked_like_a_stop_word_is_released():
    shown, text = _trimmed(["STOP"], ["It is ST", "ONE", " age"])
    assert shown == ["It is ", "STONE", " age", ""] and text == "It is STONE age"


def test_a_held_tail_is_released_when_the_stream_ends():
    shown, text = _trimmed(["\n\nUser:"], ["Done.\n"])
    assert shown == ["Done.", "\n"] and text == "Done.\n"


def test_the_earliest_stop_word_wins_and_nothing_follows_it():
    shown, text = _trimmed(["B", "AB"], ["xxABy", "more"])
    assert text == "xx" and shown[1:] == ["", ""]


def test_without_stop_words_every_delta_passes_at_once():
    shown, text = _trimmed([], ["a", "b"])
    assert shown == ["a", "b", ""] and text == "ab"
