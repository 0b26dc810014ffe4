from app.triton.textstream import IncrementalText

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
