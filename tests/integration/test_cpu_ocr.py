"""Real tritonserver with the demo repository: images read by the CPU OCR encoder reach the LLM."""

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from app.chat.prompts import PromptBuilder
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from app.vision.multimodal import image_support, prepare_images

QUESTION = "What is the secret code?"


@pytest.fixture(scope="module")
def code_image(tmp_path_factory):
    path = tmp_path_factory.mktemp("images") / "code.png"
    image = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(image).text((20, 60), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    image.save(path)
    return path


@pytest.fixture(scope="module")
def prompts(cpu_model_dir):
    return PromptBuilder(tokenizer_dir=str(cpu_model_dir))


@pytest.mark.parametrize("model", ["tensorrt_llm_bls", "ensemble"])
def test_answer_reads_the_code_in_the_image(triton, code_image, prompts, model):
    client = TritonChatClient(triton.grpc_url, model=model)
    info = client.model_info()
    assert image_support(info).family.name == "cpu-ocr"
    request = prepare_images([code_image], info, QUESTION)
    assert request.text == "<image>\n" + QUESTION
    stream = client.stream(prompts.build(Conversation.asking(request.text)), SamplingParams(max_tokens=24),
                           extra=request.extra)
    chunks = list(stream)
    assert chunks and "4711" in stream.text, stream.text


def test_text_only_requests_still_work_on_the_multimodal_repo(triton, prompts):
    for model in ("tensorrt_llm_bls", "ensemble"):
        client = TritonChatClient(triton.grpc_url, model=model)
        answer = client.generate(prompts.build(Conversation.asking("What is the capital of France?")),
                                 SamplingParams(max_tokens=12))
        assert "Paris" in answer, (model, answer)


def test_two_images_in_one_request(triton, code_image, prompts, tmp_path):
    blank = tmp_path / "blank.png"
    Image.new("RGB", (300, 300), "white").save(blank)
    client = TritonChatClient(triton.grpc_url)
    request = prepare_images([blank, code_image], client.model_info(), QUESTION)
    assert request.extra["image_input"].shape == (1, 2, 3, 1024, 1024)
    answer = client.generate(prompts.build(Conversation.asking(request.text)), SamplingParams(max_tokens=24),
                             extra=request.extra)
    assert "4711" in answer, answer


def test_server_refusals_have_clear_messages(triton, code_image, prompts):
    client = TritonChatClient(triton.grpc_url)
    pixels = prepare_images([code_image], client.model_info(), QUESTION).extra["image_input"]
    params = SamplingParams(max_tokens=4)
    with pytest.raises(InvalidRequest, match="at most 2 image"):
        client.generate("<image><image><image> three", params, extra={"image_input": np.repeat(pixels, 3, axis=1)})
    with pytest.raises(InvalidRequest, match="2 image marker"):
        client.generate("<image><image> one image", params, extra={"image_input": pixels})
    with pytest.raises(InvalidRequest, match="one kind of image input"):
        client.generate("<image> x", params, extra={"image_input": pixels, "image_url_input": "data:image/png;base64,"})
