"""Streamed replies where the release's runner can give them: the 1.x runner's decoder-only LLMs (not mllama) in a
session whose LLM runner streams (cpp_llm_only: ModelRunnerCpp; python: ModelRunner) and whose
`runner.model.generate` takes `streaming`. The LLM call is the runner's own (llm_call.py) with streaming on; each
snapshot's generated part of batch slot 0, beam 0 is decoded and its new text sent (deltas.py). The generator is
always drained to its end, after a stop string or a cancel too: a stream left unread leaves responses that break
the next generate ([M]). Every other runner sends the whole reply (replies.answer)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from .deltas import StreamedText
from .eras import Era, EraBook
from .llm_call import Contract, llm_call, prepare
from .replies import Reply, apply_settings, per_slot, picture
from .requests import RunnerRequest

WHY_NOT_RECORDED = "the {era} runner's streaming is not recorded (runner_eras.yaml has no streaming for it)"
WHY_ENC_DEC = "{model_type} has an encoder-decoder LLM (EncDecModelRunner's generate has no streaming)"
WHY_OWN_CALL = "{model_type}'s LLM call is its own (its runner does not stream it)"
WHY_SESSION = "the runner's session is {session}; streaming is confirmed only in {sessions}"
WHY_NO_MODEL = "the runner has no LLM runner (runner.model.generate)"
WHY_NO_STREAMING = "its LLM runner ({name}) takes no streaming parameter"
WHY_KWARG = "its LLM runner ({name}) takes no '{kwarg}' and no **kwargs"
MSG_NOTHING = "The LLM runner yielded no output for this request (it streams only on MPI rank 0)."
MSG_SNAPSHOT = "The LLM runner yielded {kind}, not a dict with output_ids and sequence_lengths."


@dataclass(frozen=True)
class StreamPlan:
    """This runner streams: its era's contract and the LLM runner it calls (named for the log)."""

    contract: Contract
    llm_runner: str


def llm_runner_name(generate, book: EraBook) -> str:
    """The recorded LLM runner whose generate has exactly these parameters, else the class's own name."""
    names = tuple(inspect.signature(generate).parameters)
    for name, record in book.llm_runners.items():
        spec = record["generate"]
        if names == (*spec["positional"], *spec["keyword_only"], spec["var_keyword"]):
            return name
    owner = getattr(generate, "__self__", None)
    return type(owner).__name__ if owner is not None else getattr(generate, "__qualname__", "generate")


def stream_plan(runner, era: Era, book: EraBook) -> StreamPlan | str:
    """How this runner streams, or why it cannot (a clause for the log)."""
    if not era.streaming:
        return WHY_NOT_RECORDED.format(era=era.name)
    contract = Contract.from_record(era.streaming)
    model_type = str(getattr(runner, "model_type", "") or "this family")
    if not getattr(runner, "decoder_llm", False):
        return WHY_ENC_DEC.format(model_type=model_type)
    if model_type in contract.whole_reply_types:
        return WHY_OWN_CALL.format(model_type=model_type)
    session = getattr(runner, "session", None)
    if session not in contract.sessions:
        return WHY_SESSION.format(session=session, sessions=" or ".join(contract.sessions))
    generate = getattr(getattr(runner, "model", None), "generate", None)
    if not callable(generate):
        return WHY_NO_MODEL
    name = llm_runner_name(generate, book)
    params = inspect.signature(generate).parameters
    if "streaming" not in params:
        return WHY_NO_STREAMING.format(name=name)
    open_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for kwarg in (*contract.kwargs, *contract.stream_with):
        if kwarg not in params and not open_kwargs:
            return WHY_KWARG.format(name=name, kwarg=kwarg)
    return StreamPlan(contract, name)


@dataclass(frozen=True)
class Streamed:
    """How a streamed reply ended: its text and finish (Reply), the rest to send with the final response, and
    whether the client went away (nothing more is sent)."""

    reply: Reply
    rest: str
    cancelled: bool = False


def decode_generated(snapshot, tokenizer, input_length: int) -> tuple[str, int]:
    """(slot 0, beam 0's generated text, its sequence length) of one snapshot: the prompt, with its fake image ids,
    is never decoded, nor the end_id padding past the sequence length."""
    if not isinstance(snapshot, dict) or "output_ids" not in snapshot or "sequence_lengths" not in snapshot:
        raise RuntimeError(MSG_SNAPSHOT.format(kind=type(snapshot).__name__))
    length = int(snapshot["sequence_lengths"][0][0])
    ids = snapshot["output_ids"][0, 0:1, input_length:length]
    return tokenizer.batch_decode(ids, skip_special_tokens=True)[0], length


def relay(generator, tokenizer, input_length: int, request: RunnerRequest, send: Callable[[str], None],
          cancelled: Callable[[], bool]) -> Streamed:
    """Send each snapshot's new text; drain `generator` to its end whatever happens (its own error ends it)."""
    text = StreamedText(request.stop)
    decoded, length, seen, gone, problem = "", input_length, False, False, None
    for snapshot in generator:
        seen = True
        if gone or problem is not None or text.stopped:
            continue  # keep draining
        if cancelled():
            gone = True
            continue
        try:
            decoded, length = decode_generated(snapshot, tokenizer, input_length)
            delta = text.update(decoded)
        except Exception as exc:  # noqa: BLE001 - ends the request after the drain
            problem = exc
            continue
        if delta:
            try:
                send(delta)
            except Exception:  # noqa: BLE001 - the client is gone: stop sending, keep draining
                gone = True
    if problem is not None:
        raise problem
    if not seen:
        raise RuntimeError(MSG_NOTHING)
    rest = "" if gone else text.finish(decoded)
    reason = "stop" if text.stopped or length - input_length < request.max_tokens else "length"
    return Streamed(Reply(text.sent, reason), rest, gone)


def stream_answer(runner, era: Era, plan: StreamPlan, request: RunnerRequest, send: Callable[[str], None],
                  cancelled: Callable[[], bool] = lambda: False, family_takes_lora: bool = True,
                  family: str = "", defaults: dict | None = None) -> Streamed:
    """The reply to `request` streamed through runner.model.generate (calls are serialised by the caller); a video's
    file and args.video_path stay until the stream is drained (replies.picture)."""
    apply_settings(runner, era, request, family_takes_lora, family, defaults)
    with picture(runner, era, request) as given:
        text, given = per_slot(runner, era, request.text or None, given)
        prepared = prepare(runner, plan.contract, era.params("setup_inputs"), era.name, text, given,
                           request.max_tokens)
        args, kwargs = llm_call(plan.contract, prepared)
        generator = runner.model.generate(*args, **kwargs)
        return relay(generator, runner.tokenizer, prepared.input_length, request, send, cancelled)
