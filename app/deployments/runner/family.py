"""What the runner kind needs to know of the served family, read from its family file (setup/data/families/<id>.yaml):

- `runner_prompt`: for the families whose `input_text` TensorRT-LLM's runner uses verbatim (BLIP-2, CogVLM, Fuyu,
  Kosmos-2, Nougat, Deplot: multimodal_runner_facts.md §0 "templates"), the template the app puts the question in
  before sending it, with where the template comes from (`source`). Families without one get the bare question:
  their runner adds its own template.
- `runner_llm.encoder_decoder`: the family's LLM goes through EncDecModelRunner, whose only generation argument is
  num_beams, so sampling, penalties and LoRA are not applied (facts §0 "encoder-decoder").
"""

from __future__ import annotations

from dataclasses import dataclass

from setup.catalog.family_data import family_files

QUESTION = "{question}"


@dataclass(frozen=True)
class RunnerPrompt:
    """The family's prompt as the app writes it for a verbatim runner."""

    template: str
    source: str
    without_question: str | None = None  # sent as it is when the message has no words (Kosmos-2's, Fuyu's caption)

    @property
    def reads_question(self) -> bool:
        return QUESTION in self.template

    def apply(self, question: str) -> str:
        question = (question or "").strip()
        if not question and self.without_question is not None:
            return self.without_question
        return self.template.replace(QUESTION, question)


@dataclass(frozen=True)
class RunnerFamily:
    """The served family's facts the app acts on (an unknown or unnamed family: none of them)."""

    id: str = ""
    display_name: str = ""
    prompt: RunnerPrompt | None = None
    encoder_decoder: bool = False

    @property
    def name(self) -> str:
        return self.display_name or self.id or "this family"


def runner_family(family_id: str) -> RunnerFamily:
    """The facts of `family_id` from its family file; an empty RunnerFamily when there is no such file."""
    raw = family_files().get(family_id or "")
    if not raw:
        return RunnerFamily(id=family_id or "")
    prompt = raw.get("runner_prompt")
    llm = raw.get("runner_llm") or {}
    return RunnerFamily(
        id=str(raw["id"]), display_name=str(raw.get("display_name") or raw["id"]),
        prompt=RunnerPrompt(template=str(prompt["template"]), source=str(prompt["source"]),
                            without_question=None if prompt.get("without_question") is None
                            else str(prompt["without_question"])) if prompt else None,
        encoder_decoder=bool(llm.get("encoder_decoder")))
