"""The late runner's LLM call, redone: what MultimodalModelRunner.generate does on its decoder-only path up to
`self.model.generate` (setup_inputs afresh, preprocess, end and pad ids, prompt table and tasks, MRoPE values), with
the keyword arguments the era records (runner_eras.yaml `streaming.llm_call`), in their order, each valued as the
runner values it ([V]); `stream_with` then turns on streaming, a dict and the sequence lengths ([M])."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

MSG_RETURNS = "The runner's {method} returned {count} values; the {era} era records {wanted} ({names})."
MSG_UNKNOWN_KWARG = ("runner_eras.yaml records the LLM call keyword '{name}', which runner_lib/llm_call.py does not "
                     "know how to value; known: {known}.")
MSG_NO_MROPE = "MropeParams is neither in the runner's module nor in tensorrt_llm.layers; qwen2_vl cannot stream."


@dataclass(frozen=True)
class Contract:
    """An era's streaming record: the names setup_inputs and preprocess return, what preprocess takes, the LLM
    call's positional and keyword names in order, what turns streaming on, the sessions that stream and the model
    types whose LLM call is their own."""

    setup_inputs_returns: tuple[str, ...]
    preprocess: tuple[str, ...]
    preprocess_returns: tuple[str, ...]
    positional: tuple[str, ...]
    kwargs: tuple[str, ...]
    stream_with: dict
    sessions: tuple[str, ...]
    whole_reply_types: tuple[str, ...]

    @classmethod
    def from_record(cls, record: dict) -> Contract:
        call = record["llm_call"]
        contract = cls(tuple(record["setup_inputs_returns"]), tuple(record["preprocess"]),
                       tuple(record["preprocess_returns"]), tuple(call["positional"]), tuple(call["kwargs"]),
                       dict(record["stream_with"]), tuple(record["sessions"]), tuple(record.get("whole_reply_types") or ()))
        for name in contract.kwargs:
            if name not in KWARG_VALUES:
                raise ValueError(MSG_UNKNOWN_KWARG.format(name=name, known=", ".join(KWARG_VALUES)))
        return contract


@dataclass
class Prepared:
    """One request after preprocess: what the LLM call is built from."""

    runner: object
    input_ids: object
    input_lengths: object
    ptuning_args: list
    visual_features: object
    fifth: object  # model_runner_input, or qwen2_vl's mrope_args
    max_new_tokens: int

    @property
    def model_type(self) -> str:
        return str(getattr(self.runner, "model_type", ""))

    @property
    def cpp_e2e(self) -> bool:
        return bool(getattr(self.runner, "cpp_e2e", getattr(self.runner, "session", None) == "cpp"))

    @property
    def input_length(self) -> int:
        """Slot 0's prompt length (fake image ids included): where its generated part starts."""
        return int(self.input_lengths[0])


def _named(values, names: tuple[str, ...], method: str, era: str) -> dict:
    values = tuple(values)
    if len(values) != len(names):
        raise RuntimeError(MSG_RETURNS.format(method=method, count=len(values), era=era, wanted=len(names),
                                              names=", ".join(names)))
    return dict(zip(names, values, strict=True))


def prepare(runner, contract: Contract, setup_params: tuple[str, ...], era: str, text: str | None, picture,
            max_new_tokens: int) -> Prepared:
    """setup_inputs afresh (its outputs are mutated by preprocess) and preprocess, as the runner's generate does."""
    given = {"input_text": text, "raw_image": picture, "raw_audio": None}
    setup = _named(runner.setup_inputs(*(given[p] for p in setup_params)), contract.setup_inputs_returns,
                   "setup_inputs", era)
    out = _named(runner.preprocess(*(setup[p] for p in contract.preprocess)), contract.preprocess_returns,
                 "preprocess", era)
    return Prepared(runner, out["input_ids"], out["input_lengths"], out["ptuning_args"], out["visual_features"],
                    out["model_runner_input"], max_new_tokens)


# ---- each recorded keyword's value, as generate's decoder-only path gives it ([V]) ----------------------------
def _end_id(p: Prepared):
    tokenizer = p.runner.tokenizer
    if "opt" in p.model_type and "blip2" in p.model_type:  # BLIP2-OPT ends on "\n"
        return tokenizer.encode("\n", add_special_tokens=False)[0]
    return tokenizer.eos_token_id


def _pad_id(p: Prepared):
    tokenizer = p.runner.tokenizer
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.all_special_ids[0]


def _position_ids(p: Prepared):
    return p.runner.prepare_position_ids_for_cogvlm(p.input_ids) if p.model_type == "cogvlm" else None


def mrope_class(runner):
    """The MropeParams the runner's own module uses (tensorrt_llm.layers' in TensorRT-LLM)."""
    found = getattr(sys.modules.get(type(runner).__module__), "MropeParams", None)
    if found is not None:
        return found
    try:
        from tensorrt_llm.layers import MropeParams
    except ImportError:
        raise RuntimeError(MSG_NO_MROPE) from None
    return MropeParams


def _mrope(p: Prepared):
    if p.model_type != "qwen2_vl":
        return None
    return mrope_class(p.runner)(mrope_rotary_cos_sin=p.fifth[0], mrope_position_deltas=p.fifth[1])


def _prompt_table(p: Prepared):
    if p.cpp_e2e:
        return None
    import torch

    table = torch.stack([p.ptuning_args[0]])
    return table.view(len(p.input_ids), -1, table.shape[-1])


def _prompt_tasks(p: Prepared):
    if p.cpp_e2e:
        return None
    import numpy as np

    return ",".join(np.arange(len(p.input_ids), dtype=np.int32).astype(str))


def _arg(name: str) -> Callable[[Prepared], object]:
    return lambda p: getattr(p.runner.args, name)


KWARG_VALUES: dict[str, Callable[[Prepared], object]] = {
    "input_position_ids": _position_ids,
    "mrope_params": _mrope,
    "encoder_input_features": lambda p: p.fifth if p.cpp_e2e else None,
    "sampling_config": lambda p: None,
    "prompt_table": _prompt_table,
    "prompt_tasks": _prompt_tasks,
    "max_new_tokens": lambda p: p.max_new_tokens,
    "end_id": _end_id,
    "pad_id": _pad_id,
    **{name: _arg(name) for name in ("top_k", "top_p", "temperature", "repetition_penalty", "num_beams")},
    "lora_uids": lambda p: p.runner.args.lora_task_uids,
    "output_sequence_lengths": lambda p: False,
    "return_dict": lambda p: False,
    "mm_embedding_offloading": lambda p: p.runner.args.mm_embedding_offloading,
}
POSITIONAL_VALUES = {"input_ids": lambda p: p.input_ids}


def llm_call(contract: Contract, prepared: Prepared) -> tuple[tuple, dict]:
    """(positional arguments, keyword arguments in the recorded order, then `stream_with`) of runner.model.generate."""
    args = tuple(POSITIONAL_VALUES[name](prepared) for name in contract.positional)
    kwargs = {name: KWARG_VALUES[name](prepared) for name in contract.kwargs}
    kwargs.update(contract.stream_with)
    return args, kwargs
