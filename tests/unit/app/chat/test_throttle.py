"""Streamed updates: the first text at once, the whole text last, fewer updates when many replies stream at once."""

from __future__ import annotations

import time

from app.chat.throttle import LiveCount, throttled, update_interval


def test_coalesced_updates_deliver_every_token_in_order_and_the_same_final_text():
    assert update_interval(1) == 0.05 and update_interval(10) == 0.05  # few chats: ~20 updates per second each
    assert update_interval(32) == 32 / 200 and update_interval(128) == 0.5 and update_interval(1000) == 0.5
    words = [f"w{i} " for i in range(200)]

    def run(live: LiveCount) -> list[str]:
        text = []

        def deltas():
            for word in words:
                text.append(word)
                time.sleep(0.001)
                yield word

        return list(throttled(deltas(), lambda: "".join(text), live=live))

    alone = run(LiveCount())
    busy = LiveCount()
    for _ in range(127):  # 127 other replies streaming: this one is updated about every 0.5 s
        busy.__enter__()
    crowded = run(busy)
    assert busy.value == 127  # its own count left when it ended
    for updates in (alone, crowded):
        assert updates[-1] == "".join(words) and updates[0] == "w0 "  # the first at once, the whole text last
        assert all(b.startswith(a) and len(b) > len(a) for a, b in zip(updates, updates[1:], strict=False))
    assert len(crowded) < len(alone)
