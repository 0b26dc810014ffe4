"""A family's format as TensorRT-LLM's runner applies it, read from the stand-in visual folder's config.json
(`runner_format`, written by setup/cpu/runner_demo.py from the family file): the text the question is wrapped in,
where the picture goes, the image size and the family's visual token count (fixed, Fuyu's 30-pixel patches,
Deplot's flattened patches, Video NeVA's frames), and where the family's own assistant turn starts (answer_cue)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

IMAGE = "{image}"  # where the picture's rows go in `prompt`


@dataclass(frozen=True)
class FamilyFormat:
    family: str
    model_type: str
    prompt: str                      # with {image} and {question}
    question: str = "kept"           # kept | fixed | ignored
    fixed_question: str = ""
    default_question: str = ""
    image_size: tuple[int, int] | None = None  # height, width the processor resizes to
    tokens: int = 0                  # visual tokens per image (per frame for videos)
    patch: int = 0                   # tokens = patches of this many pixels (Fuyu, Deplot)
    max_patches: int = 0
    frames: int = 0                  # a video of this many frames (Video NeVA)
    image_marker: str = "<image>"    # how the figures show the picture's place (Phi-3's <|image_1|>)
    answer_cue: str = ""             # where the family's own assistant turn starts (its LLM answers after it)
    twin_output: str = ""            # the family's own output the twin gives instead of chat (markdown, ...)
    num_frames: int = 0              # builder_config.num_frames, what video-neva's runner reads (-1: all frames)
    token_label: str = "visual tokens"  # what the count is (mllama's: cross-attention positions, not prompt rows)
    text_only: bool = False          # the runner answers without a picture (mllama: cross-attention skipped)
    # An encoder-decoder family's twin: the release's EncDecModelRunner applies no sampling (greedy, no penalty),
    # and the small chat LLM standing in for a short-answer model (BLIP-2's T5) repeats itself there; the twin's own
    # stand-in model holds this penalty, whatever the request asks (the request's sampling stays unapplied).
    own_repetition_penalty: float = 1.0

    def video_frames(self) -> int:
        """How many frames of a video the runner reads: the visual config's num_frames, else the family's
        frame count, else 8 (llava-onevision's video_num_frames default)."""
        return self.num_frames or self.frames or 8

    def question_text(self, asked: str | None) -> str:
        if self.question == "fixed":
            return self.fixed_question
        if self.question == "ignored":
            return ""
        # as sent: a family whose runner takes the text verbatim gets the app's prompt, spaces and all
        return asked if (asked or "").strip() else self.default_question

    def parts(self, asked: str | None) -> tuple[str, str]:
        """(text before the picture, text after it), the question filled in."""
        text = self.prompt.replace("{question}", self.question_text(asked))
        before, _, after = text.partition(IMAGE)
        return before, after

    def before_answer_cue(self, text: str | None) -> str:
        """`text` up to the family's answer cue: the CPU LLM answers after its own chat template's cue, so the
        family's (its assistant marker, NeVA's SteerLM attributes) is not given to it; the whole text without one."""
        text = text or ""
        return text.partition(self.answer_cue)[0] if self.answer_cue else text

    def visual_tokens(self, height: int, width: int) -> int:
        """The family's visual token count for a picture of this size (what its vision tower would give)."""
        if self.patch:
            count = math.ceil(height / self.patch) * math.ceil(width / self.patch)
            return min(count, self.max_patches) if self.max_patches else count
        return self.tokens * max(1, self.frames)

    def describe(self, tokens: int) -> str:
        """For the reply's figures: which family format the twin used."""
        size = f", {self.image_size[1]}x{self.image_size[0]} px" if self.image_size else ""
        frames = f", {self.frames} frames" if self.frames else ""
        shown = self.prompt if self.question == "kept" else self.prompt.replace("{question}", self.question_text(""))
        prompt = shown.replace(IMAGE, self.image_marker).replace("\n", "\\n")
        count = f"one visual token per {self.patch} px patch" if self.patch else f"{tokens} {self.token_label}"
        return f"{self.family} ({self.model_type}): '{prompt}'{size}{frames}, {count}"


def read_format(vision_dir: str | Path) -> FamilyFormat:
    """The family format in `vision_dir`/config.json; ValueError when the folder has none."""
    path = Path(vision_dir) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    raw = config.get("runner_format")
    if not isinstance(raw, dict):
        raise ValueError(f"{path} has no runner_format section: it is not a CPU twin's visual folder.")
    size = raw.get("image_size")
    return FamilyFormat(
        family=str(raw["family"]), model_type=str(config["builder_config"]["model_type"]), prompt=str(raw["prompt"]),
        question=str(raw.get("question", "kept")), fixed_question=str(raw.get("fixed_question", "")),
        default_question=str(raw.get("default_question", "")),
        image_size=tuple(int(v) for v in size) if size else None, tokens=int(raw.get("tokens") or 0),
        patch=int(raw.get("patch") or 0), max_patches=int(raw.get("max_patches") or 0),
        frames=int(raw.get("frames") or 0), image_marker=str(raw.get("image_marker", "<image>")),
        answer_cue=str(raw.get("answer_cue", "")),
        twin_output=str(raw.get("twin_output", "")),
        num_frames=int(config["builder_config"].get("num_frames") or 0),
        own_repetition_penalty=float(raw.get("own_repetition_penalty") or 1.0),
        token_label=str(raw.get("token_label", "visual tokens")), text_only=bool(raw.get("text_only", False)))
