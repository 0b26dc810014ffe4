"""What an llmapi reply says about itself: the finish reason and the figures the server returned, in one line."""

from __future__ import annotations

from app.deployments.llmapi.stream import details_line


def test_details_line_says_what_the_server_returned():
    details = {"finish_reason": "length", "kv_cache_alloc_total_blocks": 3, "kv_cache_reused_block": 2,
               "kv_cache_hit_rate": 2 / 3, "arrival_time_ns": 1_000_000, "first_scheduled_time_ns": 1_400_000}
    assert details_line(details) == "finished: length · KV cache: 3 blocks, 2 reused (67%) · queued 0.4 ms"
    assert details_line({"finish_reason": "None"}) == "" and details_line({}) == ""
