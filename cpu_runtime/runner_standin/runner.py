"""StandInRunner: MultimodalModelRunner's 1.x surface (constructor over `args`, load_test_data,
load_test_audio, setup_inputs, preprocess, generate, run, and `model`, `decoder_llm`, `session`; facts §1-2) on the
CPU. The picture is prepared as the family's processor would size it, seen by the vision step (rows of token ids
saying what is in it), put where the family's format puts the image, and the LLM answers. For a decoder-only
family `model` is ModelRunnerCpp's surface (llm.py), so a caller can redo generate's LLM call with streaming; an
encoder-decoder family's LLM (t5 types, nougat, pix2struct: EncDecModelRunner upstream) has none. Subclasses give
`load_llm`, `load_vision` and `load_output` (the model folder's wiring)."""

from __future__ import annotations

from pathlib import Path

from cpu_runtime.runner_standin.messages import MSG_LAYOUT, MSG_NO_PICTURE

from .formats import FamilyFormat, read_format
from .llm import StandInModel

# The runner's rule for an encoder-decoder LLM ([V] facts §3): the type contains "t5", or is one of these.
ENC_DEC_TYPES = ("nougat", "pix2struct")
# What preprocess returns as ptuning_args for these types ([V]): [visual_features] alone, not [table, tasks, size].
FEATURES_ONLY_TYPES = ("fuyu", "kosmos-2", "phi-3-vision", "llava_next", "pixtral")
# Types whose picture the release does not resize in setup_inputs: qwen2_vl's processor keeps a photo near its own
# size (qwen_vl_utils rounds the sides to 28 px); the only 504x504 resize is in load_test_data, which the runner
# model applies itself (NVIDIA/TensorRT-LLM@65b31db1 multimodal_model_runner.py load_test_data, setup_inputs).
UNRESIZED_TYPES = ("qwen2_vl",)


def decoder_llm(model_type: str) -> bool:
    """The runner's decoder_llm: False for BLIP-2 (T5), Pix2Struct (Deplot) and Nougat."""
    return not ("t5" in model_type or model_type in ENC_DEC_TYPES)


class StandInRunner:
    """The 1.x runner; `prompt_format` says which family format it applies (shown in the reply's figures). Where
    the model meets a release assumption it behaves as the release (NVIDIA/TensorRT-LLM@65b31db1,
    tensorrt_llm/runtime/multimodal_model_runner.py): video-neva's load_test_data returns the path and run() decodes
    it; LLaVA-OneVision's reads args.video_path, not its parameter, and setup_inputs picks video or image mode from
    args.video_path; a qwen2_vl picture is used at the size it comes."""

    def __init__(self, args):
        self.args = args
        args.debug_mode = False  # as the runner does
        engine = Path(args.engine_dir)
        if not (engine / "vision").is_dir() or not (engine / "llm").is_dir():
            raise ValueError(MSG_LAYOUT.format(path=engine))
        self.format: FamilyFormat = read_format(engine / "vision")
        self.model_type = self.format.model_type
        self.decoder_llm = decoder_llm(self.model_type)
        self.session = getattr(args, "session", None) or "cpp_llm_only"
        self.llm, self.tokenizer = self.load_llm(engine / "llm")
        self.model = StandInModel(self.llm) if self.decoder_llm else None
        self.vision = self.load_vision(engine / "vision")
        self.output = self.load_output(engine / "vision") if self.format.twin_output else None
        self._raw: list = []
        self.prompt_format = self.format.describe(self.format.visual_tokens(*(self.format.image_size or (0, 0))))
        self.last_visual_tokens = 0

    @property
    def cpp_e2e(self) -> bool:
        return self.session == "cpp"

    # ---- given by the model folder's wiring -------------------------------------------------------------
    def load_llm(self, folder: Path):
        """(the LLM: llm.TokenLLM, tokenizer)."""
        raise NotImplementedError

    def load_vision(self, folder: Path):
        """see(list of RGB PIL images) -> token ids of what they show."""
        raise NotImplementedError

    def load_output(self, folder: Path):
        """output(list of RGB PIL images as sent, prompt text) -> the family's own reply (its format's
        twin_output: Nougat's markdown, Deplot's table, Kosmos-2's grounded text, Video NeVA's frames), or None
        when the LLM answers instead."""
        raise NotImplementedError

    # ---- the runner's methods ---------------------------------------------------------------------------
    def load_test_data(self, image_path=None, video_path=None):
        """What the release's load_test_data gives: video-neva's video_path as it is (run() decodes it:
        video_preprocess); LLaVA-OneVision's frames of args.video_path (its parameter is not read); else the image
        at image_path."""
        from PIL import Image

        if self.model_type == "video-neva":
            return video_path
        if self.model_type == "llava_onevision" and self._video_path() is not None:
            return self._frames(self._video_path())
        return Image.open(image_path).convert("RGB") if image_path else None

    def _video_path(self):
        return getattr(self.args, "video_path", None)

    def _frames(self, path) -> list:
        """A video's frames, evenly sampled: the family's frame count, else the runner's args.video_num_frames
        (LLaVA-OneVision: run.py's 8)."""
        own = self.format.num_frames or self.format.frames
        asked = getattr(self.args, "video_num_frames", None)
        return read_frames(path, own or asked or self.format.video_frames())

    def video_preprocess(self, video_path):
        """video-neva's frames, read from the path inside run() as the release's decord reader does; anything but a
        path falls to the release's never-set self.video_path."""
        if not isinstance(video_path, str):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'video_path' (video-neva reads "
                                 "a video from the path load_test_data returns)")
        return self._frames(video_path)

    def load_test_audio(self, audio_path):
        return None  # not phi-4-multimodal

    def _prepared(self, raw_image) -> list:
        frames = list(raw_image) if isinstance(raw_image, list | tuple) else [raw_image]
        if self.format.image_size and self.model_type not in UNRESIZED_TYPES:
            height, width = self.format.image_size
            frames = [f.convert("RGB").resize((width, height)) for f in frames]
        return frames

    def setup_inputs(self, input_text, raw_image, raw_audio=None):
        """(input_text, pre_prompt, post_prompt, image, decoder_input_ids, other_vision_inputs, other_audio_inputs,
        other_decoder_inputs), as the late runner returns them. A list of texts (one per batch slot, as qwen2_vl's
        runner takes them) is read by its first."""
        if isinstance(input_text, list | tuple):
            input_text = input_text[0] if input_text else None
        if raw_image is None and self.format.text_only:  # mllama: the question alone, no picture in the prompt
            self.last_visual_tokens = 0
            return (input_text, *self.format.parts(input_text), None, None, {}, {}, {})
        if raw_image is None:
            video = " or a video" if self.format.frames else ""
            raise ValueError(MSG_NO_PICTURE.format(family=self.format.family, video=video))
        if self.model_type == "video-neva":
            raw_image = self.video_preprocess(raw_image)
        if self.model_type == "llava_onevision" and (self._video_path() is not None) != isinstance(raw_image, list):
            mode = "video" if self._video_path() is not None else "image"
            raise ValueError(f"llava_onevision is in {mode} mode (args.video_path) but got "
                             f"{'frames' if isinstance(raw_image, list) else 'one picture'}.")
        pre_prompt, post_prompt = self.format.parts(input_text)
        self._raw = list(raw_image) if isinstance(raw_image, list | tuple) else [raw_image]
        image = self._prepared(raw_image)
        width, height = image[0].size
        self.last_visual_tokens = qwen_tokens(height, width) if self.model_type == "qwen2_vl" else \
            self.format.visual_tokens(height, width)
        return input_text, pre_prompt, post_prompt, image, None, {}, {}, {}

    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, other_vision_inputs={},  # noqa: B006
                 other_audio_inputs={}, other_decoder_inputs={}):  # noqa: B006 - the late runner's signature
        """[[text]] for batch slot 0, beam 0: the LLM's answer to the family's prompt with the picture's rows (the
        prompt up to the family's answer cue, inside the CPU LLM's own chat template: chat_ids), or the family's own
        output (twin_output) from the pictures as sent."""
        text = self.output(self._raw or list(image), pre_prompt + post_prompt) if self.output is not None else None
        if text is not None:  # bounded like a generation: at most max_new_tokens of the tokenizer's tokens
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            if len(ids) > int(max_new_tokens):
                text = self.tokenizer.decode(ids[:int(max_new_tokens)])
            return [[text] for _ in range(int(self.args.batch_size))]
        rows = self.vision(image) if image is not None else []
        ids = self.prompt_ids(pre_prompt, list(rows), post_prompt)
        if self.decoder_llm:
            sampling = {name: getattr(self.args, name) for name in ("temperature", "top_k", "top_p",
                                                                    "repetition_penalty")}
        else:  # EncDecModelRunner takes only num_beams: greedy, the stand-in model's own penalty (formats.py)
            sampling = {"temperature": 1.0, "top_k": 1, "top_p": 0.0,
                        "repetition_penalty": self.format.own_repetition_penalty}
        tokens = self.llm.tokens(ids, int(max_new_tokens), self.tokenizer.eos_token_id, sampling)
        text = self.tokenizer.decode(list(tokens), skip_special_tokens=True).strip()
        return [[text] for _ in range(int(self.args.batch_size))]

    def prompt_ids(self, pre_prompt: str | None, rows: list[int], post_prompt: str | None) -> list[int]:
        """The family's prompt up to its answer cue with the picture's `rows` in place, inside the CPU LLM's chat
        template."""
        encode = lambda text: self.tokenizer.encode(text, add_special_tokens=False) if text else []  # noqa: E731
        cut = self.format.before_answer_cue
        return self.chat_ids(encode(cut(pre_prompt)) + rows + encode(cut(post_prompt)))

    def preprocess(self, pre_prompt, post_prompt, image, other_vision_inputs, other_audio_inputs):
        """(input_ids, input_lengths, ptuning_args, visual_features, model_runner_input) as the late runner's
        preprocess returns them (qwen2_vl: mrope_args last): the prompt with fake ids (from the vocabulary size up)
        where the picture's rows go, and the prompt table holding those rows. A family output (twin_output) is what
        the picture gives: its ids are the rows, and the next model.generate plays them back."""
        import torch

        text = self.output(self._raw or list(image), pre_prompt + post_prompt) \
            if self.output is not None and image is not None else None
        if text is not None:
            rows = self.tokenizer.encode(text, add_special_tokens=False) or [self.tokenizer.eos_token_id]
        else:
            rows = [int(i) for i in self.vision(image)] if image is not None else []
        if self.model is not None:
            self.model.scripted = rows if text is not None else None
        ids = self.prompt_ids(pre_prompt, [self.llm.vocab_size + i for i in range(len(rows))], post_prompt)
        batch = int(self.args.batch_size)
        table = torch.tensor(rows * batch, dtype=torch.int32).view(-1, 1)  # [batch * rows, 1]: one id per row
        args = [table] if self.model_type in FEATURES_ONLY_TYPES else \
            [table, torch.arange(batch, dtype=torch.int32), torch.tensor([len(rows)], dtype=torch.int32)]
        # qwen2_vl's mrope_args (cos/sin table, position deltas): the CPU LLM has plain RoPE, so no table, no deltas
        last = [None, torch.zeros((batch, 1), dtype=torch.int32)] if self.model_type == "qwen2_vl" else None
        return (torch.tensor([ids] * batch, dtype=torch.int32), torch.tensor([len(ids)] * batch, dtype=torch.int32),
                args, table.view(batch, -1, 1), last)

    def prepare_position_ids_for_cogvlm(self, input_ids):
        """Per-row position ids, as the runner gives cogvlm's: here the CPU LLM's plain ones (ModelRunnerCpp drops
        this keyword into **kwargs, [M])."""
        import torch

        return [torch.arange(len(row), dtype=torch.int32) for row in input_ids]

    def chat_ids(self, user_ids: list[int]) -> list[int]:
        """The user turn's ids inside the CPU LLM's own chat template (its answer needs its template)."""
        marker = "\x00"
        try:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": marker}], tokenize=False,
                                                      add_generation_prompt=True)
        except Exception:  # noqa: BLE001 - a tokenizer without a chat template: the ids alone
            return user_ids
        before, _, after = text.partition(marker)
        encode = lambda t: self.tokenizer.encode(t, add_special_tokens=False) if t else []  # noqa: E731
        return encode(before) + user_ids + encode(after)

    def run(self, input_text, input_image, input_audio, max_new_tokens):
        input_text, pre, post, image, decoder_ids, vision, audio, decoder = self.setup_inputs(
            input_text, input_image, input_audio)
        return input_text, self.generate(pre, post, image, decoder_ids, max_new_tokens, vision, audio, decoder)


def qwen_tokens(height: int, width: int) -> int:
    """Qwen2-VL's visual tokens for a picture of this size: sides rounded to 28 px (14 px patches merged 2x2)."""
    return max(1, round(height / 28)) * max(1, round(width / 28))


def read_frames(path, count: int) -> list:
    """`count` frames of the video at `path`, evenly spaced (-1: all), as RGB PIL images (OpenCV reads MP4, WebM,
    GIF...)."""
    import cv2
    from PIL import Image

    capture = cv2.VideoCapture(str(path))
    frames = []
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        capture.release()
    if not frames:
        raise ValueError("The video has no frames OpenCV can read (MP4, WebM or GIF).")
    count = len(frames) if count < 0 else count  # -1: every frame (video-neva's num_frames)
    picks = [frames[round(i * (len(frames) - 1) / max(1, count - 1))] for i in range(min(count, len(frames)))]
    return [Image.fromarray(cv2.cvtColor(f, cv2.COLOR_BGR2RGB)) for f in picks]
