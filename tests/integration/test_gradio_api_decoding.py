"""The Gradio API's `decoding` choice (the chat panel's Greedy / Sample) against the CPU demo's tritonserver."""

import pytest
from gradio_client import Client

QUESTION = "Write one sentence about the sea."


def reply(client, **kwargs) -> str:
    return client.predict(text=QUESTION, max_tokens=16, api_name="/generate", **kwargs)


def test_no_sampling_fields_and_greedy_give_the_same_greedy_reply(app_url):
    client = Client(app_url, verbose=False)
    default = reply(client)
    assert reply(client, decoding="greedy", top_p=0.9, top_k=50, temperature=1.5) == default
    assert reply(client) == default  # greedy: the same reply every time


def test_sample_samples_and_a_seed_repeats_it(app_url):
    client = Client(app_url, verbose=False)
    samples = {reply(client, decoding="sample", temperature=1.5, seed=seed) for seed in (1, 2, 3)}
    assert len(samples) > 1
    assert reply(client, decoding="sample", temperature=1.5, seed=7) == reply(client, decoding="sample",
                                                                               temperature=1.5, seed=7)


def test_an_unknown_decoding_is_refused_in_words(app_url):
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="Decoding must be one of greedy, sample"):
        reply(client, decoding="beam")
