"""StandInRunner.generate: a family's own output (twin_output) is bounded by max_new_tokens as a generation is."""

from types import SimpleNamespace

from cpu_runtime.runner_standin.runner import StandInRunner


class WordTokenizer:
    def encode(self, text, add_special_tokens=False):
        return text.split(" ")

    def decode(self, ids):
        return " ".join(ids)


def runner_with_output(text: str) -> StandInRunner:
    runner = object.__new__(StandInRunner)  # the parts generate() reads, without model folders
    runner.args, runner.tokenizer, runner._raw = SimpleNamespace(batch_size=2), WordTokenizer(), []
    runner.output = lambda pictures, prompt: text
    return runner


def test_a_family_output_longer_than_max_new_tokens_is_cut_there():
    reply = runner_with_output("one two three four five six").generate("", "", ["frame"], None, 4)
    assert reply == [["one two three four"], ["one two three four"]]


def test_a_family_output_within_max_new_tokens_is_whole():
    assert runner_with_output("a red circle").generate("", "", ["frame"], None, 3) == [["a red circle"]] * 2
