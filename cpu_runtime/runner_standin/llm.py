"""The twin's `runner.model`: ModelRunnerCpp's generate (keyword-only parameters as recorded, [M] in
model_repo_templates/multimodal_runner/.../runner_eras.yaml) over the CPU LLM, token by token. Fake prompt ids
(>= the vocabulary size) are looked up in the prompt table, whose rows hold the token ids the stand-in's vision step
gave (one id per row: the CPU vision step gives token ids, not features). With streaming it returns a generator of
snapshots as ModelRunnerCpp's: every row's prompt (fake ids as given) plus what is generated so far, padded with
end_id to max_seq_len, with the sequence lengths before the padding; the generator ends after the last token."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from cpu_runtime.runner_standin.messages import MSG_BEAMS, MSG_NO_END_ID, MSG_STOPPING, MSG_TOO_LONG

SAMPLING = {"temperature": 1.0, "top_k": 0, "top_p": 0.0, "repetition_penalty": 1.0}  # read from **kwargs ([M])


@dataclass
class MropeParams:
    """What tensorrt_llm.layers.MropeParams holds (facts §3); the CPU LLM has plain RoPE and reads neither."""

    mrope_rotary_cos_sin: object = None
    mrope_position_deltas: object = None


class TokenLLM(Protocol):
    """The model folder's LLM: `tokens` yields one generated id at a time (not the end id) and frees its state when
    closed or done."""

    vocab_size: int
    max_seq_len: int

    def tokens(self, ids: list[int], max_new_tokens: int, end_id: int, sampling: dict) -> Iterator[int]: ...


class StandInModel:
    """ModelRunnerCpp's generate on the CPU. `scripted`: token ids the next generate plays instead of running the
    LLM (the family's own output, set by the runner's preprocess for that request)."""

    def __init__(self, llm: TokenLLM):
        self.llm = llm
        self.max_seq_len = llm.max_seq_len
        self.scripted: list[int] | None = None

    def generate(self, batch_input_ids, *, position_ids=None, encoder_input_ids=None, encoder_input_features=None,
                 encoder_output_lengths=None, cross_attention_masks=None, mrope_params=None, sampling_config=None,
                 lora_uids=None, lookahead_config=None, streaming=False, stopping_criteria=None,
                 logits_processor_names=None, max_new_tokens=1, end_id=None, pad_id=None, bad_words_list=None,
                 stop_words_list=None, return_dict=False, output_sequence_lengths=False,
                 output_generation_logits=False, output_log_probs=False, output_cum_log_probs=False,
                 prompt_table=None, prompt_tasks=None, input_token_extra_ids=None, return_all_generated_tokens=False,
                 language_adapter_uids=None, mm_embedding_offloading=False, **kwargs):
        """The finished output (streaming False) or a generator of snapshots (True); checks raise at once."""
        if stopping_criteria is not None:
            raise RuntimeError(MSG_STOPPING)
        if int(kwargs.get("num_beams", 1)) != 1:
            raise RuntimeError(MSG_BEAMS.format(beams=kwargs["num_beams"]))
        if end_id is None:
            raise RuntimeError(MSG_NO_END_ID)
        prompts = [[int(i) for i in row] for row in batch_input_ids]
        for prompt in prompts:
            if len(prompt) + int(max_new_tokens) > self.max_seq_len:
                raise RuntimeError(MSG_TOO_LONG.format(length=len(prompt), new=int(max_new_tokens),
                                                       limit=self.max_seq_len))
        scripted, self.scripted = self.scripted, None
        sampling = {name: kwargs.get(name, default) for name, default in SAMPLING.items()}
        tasks = [int(t) for t in str(prompt_tasks).split(",")] if prompt_tasks is not None else None
        sources = [iter(scripted[:int(max_new_tokens)]) if scripted is not None else
                   self.llm.tokens(self._looked_up(prompt, prompt_table, tasks, b), int(max_new_tokens), int(end_id),
                                   sampling) for b, prompt in enumerate(prompts)]
        shape = (bool(return_dict), bool(output_sequence_lengths))
        stream = self._stream(prompts, sources, int(end_id), shape)
        if streaming:
            return stream
        return deque(stream, maxlen=1)[0]  # the last snapshot (there is always one)

    def _looked_up(self, prompt: list[int], table, tasks: list[int] | None, row: int) -> list[int]:
        """The prompt with each fake id replaced by the id its prompt-table row holds (row's task's table)."""
        vocab = self.llm.vocab_size
        if table is None or not any(i >= vocab for i in prompt):
            return prompt
        rows = table[tasks[row] if tasks else row]
        return [int(rows[i - vocab][0]) if i >= vocab else i for i in prompt]

    def _stream(self, prompts, sources, end_id: int, shape) -> Iterator:
        """One snapshot per round in which a row got a token (one at the least, as each request's final response
        gives one in ModelRunnerCpp); ends when every row has ended."""
        generated = [[] for _ in prompts]
        running, yielded = list(range(len(prompts))), False
        try:
            while running:
                added = False
                for row in list(running):
                    token = next(sources[row], None)
                    if token is None:
                        running.remove(row)
                    else:
                        generated[row].append(int(token))
                        added = True
                if added or not (running or yielded):
                    yielded = True
                    yield self._snapshot(prompts, generated, end_id, shape)
        finally:
            for source in sources:
                close = getattr(source, "close", None)
                if close is not None:
                    close()

    def _snapshot(self, prompts, generated, end_id: int, shape):
        import torch

        output_ids = torch.full((len(prompts), 1, self.max_seq_len), end_id, dtype=torch.int32)
        lengths = torch.zeros((len(prompts), 1), dtype=torch.int32)
        for row, (prompt, new) in enumerate(zip(prompts, generated, strict=True)):
            ids = prompt + new
            output_ids[row, 0, :len(ids)] = torch.tensor(ids, dtype=torch.int32)
            lengths[row, 0] = len(ids)
        return_dict, with_lengths = shape
        if not return_dict:
            return output_ids
        return {"output_ids": output_ids, **({"sequence_lengths": lengths} if with_lengths else {})}
