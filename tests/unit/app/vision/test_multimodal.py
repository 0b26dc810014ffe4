import io

import numpy as np
import pytest
from PIL import Image

from app.core.errors import InvalidImage, InvalidRequest, TextOnlyDeployment, TooManyImages
from app.core.messages import MSG_TEXT_ONLY
from app.triton.client import ModelInfo
from app.vision import messages as M
from app.vision.multimodal import accepts_images, image_support, prepare_images, strip_image_markers


def info(inputs: dict, **parameters) -> ModelInfo:
    base = {"text_input": ("TYPE_STRING", (1,)), "max_tokens": ("TYPE_INT32", (1,))}
    return ModelInfo(name="tensorrt_llm_bls", inputs={**base, **inputs}, decoupled=True, accumulated_text=True,
                     parameters=parameters)


IMAGE_INPUT = {"image_input": ("TYPE_FP16", (-1, 3, -1, -1))}


def png(tmp_path, name="a.png", size=(120, 80), colour=(255, 0, 0)):
    path = tmp_path / name
    Image.new("RGB", size, colour).save(path)
    return path


def test_text_only_deployment_refuses_images(tmp_path):
    text_only = info({})
    assert not accepts_images(text_only) and image_support(text_only) is None
    with pytest.raises(TextOnlyDeployment) as caught:
        prepare_images([png(tmp_path)], text_only, "What is this?")
    assert str(caught.value) == MSG_TEXT_ONLY
    assert prepare_images([], text_only, "hi").extra == {}  # no images: nothing to refuse


def test_cpu_ocr_deployment_gets_fp16_tensor_and_markers(tmp_path):
    deployment = info(IMAGE_INPUT, multimodal_family="cpu-ocr", max_num_images="2")
    support = image_support(deployment)
    assert support.input_name == "image_input" and support.max_num_images == 2
    prompt = prepare_images([png(tmp_path), png(tmp_path, "b.png", (50, 300))], deployment, "Compare them.")
    assert prompt.text == "<image><image>\nCompare them." and prompt.count == 2
    tensor = prompt.extra["image_input"]
    assert tensor.shape == (1, 2, 3, 1024, 1024) and tensor.dtype == np.float16
    assert strip_image_markers(prompt.text, deployment) == "Compare them."


def test_llava_family_uses_its_own_size_and_limit(tmp_path):
    deployment = info(IMAGE_INPUT, multimodal_family="llava-1.5")
    prompt = prepare_images([png(tmp_path)], deployment, "Describe it.")
    assert prompt.extra["image_input"].shape == (1, 1, 3, 336, 336)
    assert prompt.text == "<image>\nDescribe it."
    with pytest.raises(TooManyImages) as caught:
        prepare_images([png(tmp_path), png(tmp_path, "b.png")], deployment, "Both?")
    assert str(caught.value) == M.MSG_TOO_MANY_IMAGES.format(limit=1, count=2)


def test_bytes_family_sends_uint8_hwc(tmp_path):
    deployment = info({"image_bytes_input": ("TYPE_UINT8", (-1, -1, -1, -1))}, multimodal_family="qwen2-vl")
    tensor = prepare_images([png(tmp_path)], deployment, "What is it?").extra["image_bytes_input"]
    assert tensor.shape == (1, 1, 504, 504, 3) and tensor.dtype == np.uint8


def test_unknown_family_and_bad_file(tmp_path):
    with pytest.raises(InvalidRequest, match="image family"):
        image_support(info(IMAGE_INPUT, multimodal_family="nope"))
    bad = tmp_path / "x.png"
    bad.write_bytes(b"")
    with pytest.raises(InvalidImage, match="is empty"):
        prepare_images([bad], info(IMAGE_INPUT, multimodal_family="cpu-ocr"), "q")


def test_large_jpeg_decodes_in_draft_mode_for_cpu_ocr(tmp_path):
    path = tmp_path / "photo.jpg"
    buffer = io.BytesIO()
    Image.effect_noise((4000, 3000), 30).convert("RGB").save(buffer, "JPEG")
    path.write_bytes(buffer.getvalue())
    tensor = prepare_images([path], info(IMAGE_INPUT, multimodal_family="cpu-ocr"), "q").extra["image_input"]
    assert tensor.shape == (1, 1, 3, 1024, 1024)
