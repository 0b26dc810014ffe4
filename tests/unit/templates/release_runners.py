"""Behavioural stand-ins for TensorRT-LLM's MultimodalModelRunner, one per release read at a release commit.

TensorRT-LLM cannot be installed here (no GPU), so these classes play the releases where a wrapper can observe them:
which methods exist and their parameters, which `args` fields the constructor reads, what generate reads from args
and when, when a video file is opened, what happens to a picture of the wrong shape, an unknown LoRA uid, a call
from another thread. They are written from the sources, not from runner_eras.yaml, so a test against them checks
the model's recorded data too. Each behaviour cites repo@commit:path:line; keys (tensorrt_llm/runtime/
multimodal_model_runner.py unless another file is named):

  R012 = ertkonuk/TensorRT-LLM@28fb9aac (version.py 0.12.0)
  R013 = ertkonuk/TensorRT-LLM@201135e5 (0.13.0)
  R016 = StudyingShao/TensorRT-LLM@42a7b09 (0.16.0; ertkonuk@38562657, 0.16.0.dev, has the same shapes)
  R1X  = NVIDIA/TensorRT-LLM@65b31db1 (1.x; read through a file index, so cited by method, not line)

Names for other tests (items 6-8 of #47): `Release012`, `Release013`, `Release016`, `Release1X`; `with_type(cls,
model_type, **attrs)` makes one for a model type. Encoder-decoder types (t5, nougat, pix2struct) record
`sampling=None` (their LLM call passes num_beams only); a 1.x LoRA uid the engine was not built with raises KeyError.
Every instance keeps what it saw in `calls` and the last instance is `cls.last`.
"""

from __future__ import annotations

import json
import math
import threading
import types
from pathlib import Path

from PIL import Image

DEMO_PICTURE = "merlion.png downloaded from storage.googleapis.com"  # the loaders' default picture (no path given)
SAMPLING = ("top_k", "top_p", "temperature", "repetition_penalty")
# What setup_inputs has a branch for. Another type falls through every branch and uses names never set.
HANDLES_012 = ("blip2", "nougat", "cogvlm", "phi-3-vision", "pix2struct", "neva", "video-neva", "llava_next",
               "llava", "vila", "fuyu", "kosmos-2")  # R012:871-1060 (R013:952-1140 the same)
HANDLES_016 = HANDLES_012 + ("qwen2_vl", "internvl", "mllama", "llava_onevision")  # R016:1681-1931
HANDLES_1X = HANDLES_016 + ("internlm", "phi-4-multimodal", "pixtral")  # R1X setup_inputs


class Frames(tuple):
    """A video's decoded frames (what decord / av give the processor)."""


class _Tokenizer:
    def encode(self, text, add_special_tokens=False):
        return str(text).split()


class _Release:
    """What every release shares. Subclasses give FIELDS (args read by the constructor), HANDLES, the methods with
    their release's parameters, and how the engine folders are found."""

    FIELDS: tuple[str, ...] = ()
    HANDLES: tuple[str, ...] = ()
    LORA_UIDS: tuple[str, ...] = ()  # the adapters the LLM engine was built with (trtllm-build --lora_dir), "0", "1"..
    MAX_INPUT_LEN = 2048  # the LLM engine's max_input_len (the runner families' build defaults)
    last = None

    def __init__(self, args):
        # every release reads these fields as attributes: a missing one is an AttributeError (R012:153-185,
        # R013:161-223, R016:285-379, R1X __init__)
        for name in self.FIELDS:
            getattr(args, name)
        self.args = args
        # R012:161-162, R013:169-170, R016:293-294, R1X __init__: torch.cuda.Stream(...) then torch.cuda.set_stream:
        # the stream is current in the constructing thread only (PyTorch's current stream is per thread)
        self.stream_thread = threading.get_ident()
        config = json.loads((self.visual_dir() / "config.json").read_text() or "{}")
        # R012:165-168 (and every release): the type and precision come from the visual engine's builder_config
        self.model_type = (config.get("builder_config") or {}).get("model_type", getattr(self, "MODEL_TYPE", "llava"))
        # R012:171-174, R013:179-182, R016:303-306, R1X: t5 types, nougat and pix2struct have encoder-decoder LLMs
        self.decoder_llm = not ("t5" in self.model_type or self.model_type in ("nougat", "pix2struct"))
        if self.model_type == "llava_onevision":
            # R016:326-330, R1X: video_num_frames None means 8; both an image and a video path fail an assert
            self.num_frames = args.video_num_frames or 8
            assert args.video_path is None or args.image_path is None
        if self.model_type == "video-neva":
            self.num_frames = (config.get("builder_config") or {}).get("num_frames", -1)
        self.tokenizer = _Tokenizer()
        self.calls: list = []
        type(self).last = self

    def visual_dir(self) -> Path:
        return Path(self.args.visual_engine_dir)

    def _check_thread(self):
        if threading.get_ident() != self.stream_thread:
            raise RuntimeError("called from another thread than the one that constructed the runner: its CUDA "
                               "stream is not current here (facts §0 threads)")

    # ---- video-neva: R012:289-312, R013:337-360, R016:600-623, R1X video_preprocess -------------------------------
    def video_preprocess(self, video_path):
        if isinstance(video_path, str):
            data = Path(video_path).read_bytes()  # decord's VideoReader opens the file here, inside run()
            frames = Frames((data,))
        else:
            frames = self.video_path  # never set by the runner: AttributeError
        self.calls.append(("frames", frames))
        return frames

    # ---- llava_onevision's video: R016:1650-1672, R1X load_test_data (av.open(self.args.video_path)) -------------
    def _onevision_video(self):
        with open(self.args.video_path, "rb") as container:
            return Frames((container.read(),))

    def _loaded(self, video_path_given):
        """What a loader returns for this type (video-neva: the path it was given; llava_onevision: frames from
        args.video_path, else the default branch's demo picture; others: the default branch's demo picture)."""
        if self.model_type == "video-neva":
            return video_path_given
        if self.model_type == "llava_onevision" and self.args.video_path is not None:
            return self._onevision_video()
        return DEMO_PICTURE

    # ---- setup_inputs: the picture's and the text's shape per type ------------------------------------------------
    def _prepare(self, input_text, raw_image):
        if not any(self.model_type == t or (t in ("blip2", "internlm") and t in self.model_type)
                   for t in self.HANDLES):
            raise UnboundLocalError(f"{self.model_type}: no branch of setup_inputs sets pre_prompt")
        seen = {"text": input_text, "picture": raw_image}
        if self.model_type == "video-neva":
            seen["picture"] = self.video_preprocess(raw_image)  # R012:962, R013:1038, R016:1816, R1X setup_inputs
        elif self.model_type == "llava_onevision":
            # R016:1917-1929, R1X: the mode comes from args.video_path, not from what raw_image is
            video = self.args.video_path is not None
            if video != isinstance(raw_image, Frames):
                raise ValueError(f"llava_onevision in {'video' if video else 'image'} mode (args.video_path) got "
                                 f"{type(raw_image).__name__}")
            seen["mode"] = "video" if video else "image"
        elif self.model_type == "qwen2_vl":
            seen.update(self._qwen(input_text, raw_image))
        return seen

    def _qwen(self, input_text, raw_image) -> dict:
        raise NotImplementedError  # 0.16 and 1.x only

    @staticmethod
    def qwen_tokens(image) -> int:
        """Visual tokens qwen_vl_utils + the Qwen2-VL processor give a picture of this size: sides rounded to 28 px
        (14 px patches merged 2x2), between 4 and 16384 tokens (qwen_vl_utils MIN_PIXELS, MAX_PIXELS)."""
        width, height = image.size
        h, w = max(28, round(height / 28) * 28), max(28, round(width / 28) * 28)
        if h * w > 16384 * 28 * 28:
            scale = math.sqrt(h * w / (16384 * 28 * 28))
            h, w = math.floor(height / scale / 28) * 28, math.floor(width / scale / 28) * 28
        return (h // 28) * (w // 28)

    def _check_length(self, tokens: int):
        if tokens > self.MAX_INPUT_LEN:  # the LLM engine refuses a longer prompt
            raise RuntimeError(f"input length {tokens} exceeds max_input_len {self.MAX_INPUT_LEN}")

    # ---- generate's LLM call: what it reads from args ----------------------------------------------------------
    def _llm(self, seen, max_new_tokens):
        self._check_thread()
        if self.decoder_llm:
            # R012:559-563, R013:630-634, R016:959-963 (mllama R016:1041-1047), R1X generate: read on every call
            sampling = {name: getattr(self.args, name) for name in SAMPLING}
        else:
            # enc_dec_model_runner.py R012:414-429, R013:415-430, R016:415-430: EncDecModelRunner.generate takes
            # num_beams and no sampling; the runner passes nothing else (R012:576-587, R016:1075-1086)
            sampling = None
        lora = self._lora()
        self.calls.append(("generate", seen, max_new_tokens, sampling, lora))
        text = seen["text"][0] if isinstance(seen["text"], list) else seen["text"]
        picture = seen["picture"]
        shown = getattr(picture, "size", picture[0] if isinstance(picture, list) and picture else picture)
        shown = getattr(shown, "size", shown)
        reply = f"answer to {text} about {shown}"
        return [[reply] * int(self.args.num_beams)] * int(self.args.batch_size)

    def _lora(self):
        return None  # only the 1.x runner passes a LoRA task


class Release012(_Release):
    """TensorRT-LLM 0.12.0 (R012)."""

    # R012:153-185, 263-273 (ModelRunner only: no use_py_session), 806-869, 871-1081
    FIELDS = ("visual_engine_dir", "llm_engine_dir", "hf_model_dir", "visual_engine_name", "batch_size", "num_beams",
              "top_k", "top_p", "temperature", "repetition_penalty", "enable_context_fmha_fp32_acc", "image_path",
              "video_path", "path_sep")
    HANDLES = HANDLES_012

    def load_test_image(self):  # R012:806; video-neva: image = self.args.video_path (R012:856)
        return self._loaded(self.args.video_path)

    def setup_inputs(self, input_text, raw_image):  # R012:871, returns 6 values (R012:1081)
        seen = self._prepare(input_text, raw_image)
        return input_text, "pre", "post", seen, None, None

    def preprocess(self, warmup, pre_prompt, post_prompt, image, attention_mask): ...  # R012:324

    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, attention_mask,
                 warmup=False):  # R012:525-532
        return self._llm(image, max_new_tokens)

    def run(self, input_text, input_image, max_new_tokens):  # R012:1083-1095
        input_text, pre, post, image, decoder_ids, mask = self.setup_inputs(input_text, input_image)
        return input_text, self.generate(pre, post, image, decoder_ids, max_new_tokens, attention_mask=mask,
                                         warmup=False)


class Release013(_Release):
    """TensorRT-LLM 0.13.0 (R013)."""

    # R013:161-223 (adds use_py_session; sets debug_mode itself, R013:204), 301-335
    FIELDS = Release012.FIELDS + ("use_py_session",)
    HANDLES = HANDLES_012

    def load_test_image(self):  # R013:887; video-neva R013:937
        return self._loaded(self.args.video_path)

    def setup_inputs(self, input_text, raw_image):  # R013:952, returns 5 values (R013:1157)
        seen = self._prepare(input_text, raw_image)
        return input_text, "pre", "post", seen, None

    def preprocess(self, warmup, pre_prompt, post_prompt, image): ...  # R013:372

    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, warmup=False):  # R013:585-591
        return self._llm(image, max_new_tokens)

    def run(self, input_text, input_image, max_new_tokens):  # R013:1159-1170
        input_text, pre, post, image, decoder_ids = self.setup_inputs(input_text, input_image)
        return input_text, self.generate(pre, post, image, decoder_ids, max_new_tokens, warmup=False)


class Release016(_Release):
    """TensorRT-LLM 0.16.0 (R016). No load_test_data: load_test_image() only (R016:1580)."""

    # R016:285-379, 551-598
    FIELDS = Release013.FIELDS + ("enable_chunked_context", "kv_cache_free_gpu_memory_fraction",
                                  "cross_kv_cache_fraction", "multi_block_mode", "video_num_frames")
    HANDLES = HANDLES_016

    def load_test_image(self):  # R016:1580; video-neva R016:1631; llava_onevision R016:1650-1672
        return self._loaded(self.args.video_path)

    def _qwen(self, input_text, raw_image):
        # R016:1693-1712: one message {"image": raw_image, "text": input_text}; a list is no picture for
        # qwen_vl_utils' fetch_image, and load_test_image's only resize is of its own demo picture (R016:1640-1649)
        if not isinstance(raw_image, Image.Image) or not isinstance(input_text, str | None):
            raise TypeError("0.16's qwen2_vl takes one text and one PIL image")
        tokens = self.qwen_tokens(raw_image)
        self._check_length(tokens)
        return {"visual_tokens": tokens}

    def setup_inputs(self, input_text, raw_image):  # R016:1681, returns 7 values (R016:1970)
        seen = self._prepare(input_text, raw_image)
        return input_text, "pre", "post", seen, None, {}, {}

    def preprocess(self, warmup, pre_prompt, post_prompt, image, other_vision_inputs): ...  # R016:635

    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, warmup=False,
                 other_vision_inputs={}, other_decoder_inputs={}):  # noqa: B006 - R016:897-905
        return self._llm(image, max_new_tokens)

    def run(self, input_text, input_image, max_new_tokens):  # R016:1972-1984
        input_text, pre, post, image, decoder_ids, vision, decoder = self.setup_inputs(input_text, input_image)
        return input_text, self.generate(pre, post, image, decoder_ids, max_new_tokens, warmup=False,
                                         other_vision_inputs=vision, other_decoder_inputs=decoder)


class Release1X(_Release):
    """TensorRT-LLM 1.x (R1X): engine_dir with vision/ and llm/, session, lora_task_uids, load_test_data."""

    # R1X __init__, init_llm, visual_engine_dir/llm_engine_dir properties
    FIELDS = ("engine_dir", "hf_model_dir", "visual_engine_name", "batch_size", "num_beams", "top_k", "top_p",
              "temperature", "repetition_penalty", "enable_context_fmha_fp32_acc", "enable_chunked_context",
              "kv_cache_free_gpu_memory_fraction", "cross_kv_cache_fraction", "multi_block_mode",
              "mm_embedding_offloading", "session", "lora_task_uids", "image_path", "video_path", "path_sep",
              "video_num_frames")
    HANDLES = HANDLES_1X

    def __init__(self, args):
        super().__init__(args)
        self.session = args.session
        if self.model_type == "qwen2_vl":
            args.session = "cpp_llm_only"  # R1X __init__: qwen2_vl is forced to the C++ LLM runner

    def visual_dir(self) -> Path:
        return Path(self.args.engine_dir) / "vision"  # R1X visual_engine_dir

    def load_test_data(self, image_path=None, video_path=None):
        # R1X load_test_data: video-neva returns its video_path parameter; llava_onevision ignores it and reads
        # args.video_path; qwen2_vl reads args.image_path (a list) and resizes each picture to 504x504
        return self._loaded(video_path)

    def load_test_audio(self, audio_path):  # R1X: None unless phi-4-multimodal
        return None

    def _qwen(self, input_text, raw_image):
        # R1X setup_inputs: messages built from input_text[idx] and raw_image[idx] for each batch slot
        slots = int(self.args.batch_size)
        if not isinstance(raw_image, list) or not isinstance(input_text, list | None):
            raise TypeError("1.x's qwen2_vl reads input_text[idx] and raw_image[idx] per batch slot")
        tokens = sum(self.qwen_tokens(raw_image[i]) for i in range(slots))
        self._check_length(tokens // slots)
        return {"visual_tokens": tokens // slots}

    def setup_inputs(self, input_text, raw_image, raw_audio=None):  # R1X, returns 8 values
        if self.model_type not in ("qwen2_vl", "vila", "llava") and isinstance(input_text, list):
            input_text = input_text[0]  # R1X setup_inputs: other types read the first text
        seen = self._prepare(input_text, raw_image)
        return input_text, "pre", "post", seen, None, {}, {}, {}

    def preprocess(self, pre_prompt, post_prompt, image, other_vision_inputs, other_audio_inputs): ...  # R1X

    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens,  # R1X generate: no warmup
                 other_vision_inputs={}, other_audio_inputs={}, other_decoder_inputs={}):  # noqa: B006
        return self._llm(image, max_new_tokens)

    def _lora(self):
        # R1X generate: lora_uids=self.args.lora_task_uids on the decoder-only, non-mllama call only (commented out
        # on the mllama call, absent from the enc-dec one); ModelRunnerCpp's LoraManager numbers the engine's
        # adapters "0", "1", ... and uid_to_low_ranks raises KeyError for another (lora_manager.py R016:786-788)
        uids = self.args.lora_task_uids
        if not self.decoder_llm or self.model_type == "mllama" or uids is None:
            return None
        for uid in uids:
            if uid != "-1" and uid not in self.LORA_UIDS:
                raise KeyError(uid)
        return list(uids)

    def run(self, input_text, input_image, input_audio, max_new_tokens):  # R1X run
        input_text, pre, post, image, decoder_ids, vision, audio, decoder = self.setup_inputs(
            input_text, input_image, input_audio)
        return input_text, self.generate(pre, post, image, decoder_ids, max_new_tokens, other_vision_inputs=vision,
                                         other_audio_inputs=audio, other_decoder_inputs=decoder)


RELEASES = {"0.12": Release012, "0.13": Release013, "0.16": Release016, "1.x": Release1X}


def with_type(cls: type, model_type: str, **attrs) -> type:
    """`cls` whose visual engine records `model_type` (when its config.json names none), with `attrs` set."""
    return types.new_class(cls.__name__, (cls,), exec_body=lambda ns: ns.update(MODEL_TYPE=model_type, last=None,
                                                                                  **attrs))
