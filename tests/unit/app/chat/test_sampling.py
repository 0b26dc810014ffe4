"""The panel's Greedy / Sample choice becomes what the server needs to do exactly that."""

import pytest

from app.chat.sampling import GREEDY, SAMPLE, panel_sampling, sampling_params
from app.core.errors import InvalidRequest
from app.core.sampling import SAMPLING_LIMITS

DEFAULTS = {name: spec[0] for name, spec in SAMPLING_LIMITS.items()}


def panel(mode, **changes):
    values = {**DEFAULTS, "seed": None, **changes}
    return panel_sampling(mode, values["max_tokens"], values["temperature"], values["top_k"], values["top_p"],
                          values["repetition_penalty"], values["seed"])


def server_is_greedy(params) -> bool:
    """TensorRT-LLM's rule (and the CPU engine's): greedy unless top-k > 1 or top-p > 0; top-k 1 wins."""
    return params.top_k == 1 or not (params.top_k > 1 or params.top_p > 0)


def test_defaults_without_sampling_fields_are_greedy():
    """API callers that send no sampling fields keep greedy replies (the panel's default matches)."""
    assert server_is_greedy(sampling_params(**DEFAULTS))


def test_greedy_sends_greedy_whatever_the_sliders_say():
    params = panel(GREEDY, temperature=1.5, top_k=50, top_p=0.9)
    assert server_is_greedy(params) and params.top_k == 1 and params.top_p == 0.0


def test_sample_always_samples():
    for top_k, top_p in [(0, 0.0), (1, 0.0), (0, 0.5), (40, 0.0), (40, 0.9)]:
        params = panel(SAMPLE, top_k=top_k, top_p=top_p, temperature=0.8)
        assert not server_is_greedy(params), (top_k, top_p)
        assert params.temperature == 0.8
    assert panel(SAMPLE).top_p == 1.0 and panel(SAMPLE).top_k == 0  # no limits set: the whole distribution
    assert panel(SAMPLE, top_k=40, top_p=0.9).top_k == 40 and panel(SAMPLE, top_k=40, top_p=0.9).top_p == 0.9


def test_no_seed_means_a_fresh_seed_each_reply():
    assert len({panel(SAMPLE).seed for _ in range(20)}) > 1
    assert len({panel(SAMPLE, seed="").seed for _ in range(20)}) > 1  # an emptied Seed box
    assert {panel(SAMPLE, seed=7).seed for _ in range(5)} == {7}


def test_bad_values_are_refused_in_words():
    with pytest.raises(InvalidRequest, match="Decoding must be one of greedy, sample"):
        panel("beam")
    with pytest.raises(InvalidRequest, match="temperature must be between"):
        panel(SAMPLE, temperature=9)
    with pytest.raises(InvalidRequest, match="seed must be a whole number"):
        panel(SAMPLE, seed=1.5)
