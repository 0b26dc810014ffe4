import pytest

from app.chat.prompts import PromptBuilder, message_text

HISTORY = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
    {"role": "user", "content": [{"type": "file", "file": {"path": "/x.png"}}]},
    {"role": "user", "content": "What is 2+2?"},
]


def test_message_text_handles_gradio_blocks():
    assert message_text([{"type": "text", "text": "a"}, {"type": "file", "file": {}}]) == "a"
    assert message_text("plain") == "plain"
    assert message_text({"path": "/img.png"}) == ""


def test_named_chatml_template():
    prompt = PromptBuilder(template_name="chatml").build(HISTORY, system_prompt="Be brief.")
    assert prompt == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                      "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                      "<|im_start|>assistant\n")
    assert PromptBuilder(template_name="chatml").stop_words() == ["<|im_end|>"]


def test_llama3_and_vicuna_templates():
    llama = PromptBuilder(template_name="llama3").build([{"role": "user", "content": "Hi"}])
    assert llama.startswith("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>")
    assert llama.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    vicuna = PromptBuilder(template_name="vicuna").build([{"role": "user", "content": "Hi"}])
    assert vicuna == "USER: Hi ASSISTANT:"


def test_unknown_template_is_named():
    with pytest.raises(ValueError, match="Unknown prompt template 'nope'"):
        PromptBuilder(template_name="nope")


def test_tokenizer_chat_template_preferred(cpu_model_dir):
    builder = PromptBuilder(tokenizer_dir=str(cpu_model_dir))
    assert builder.source == "tokenizer chat template"
    prompt = builder.build([{"role": "user", "content": "Hi"}])
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert builder.stop_words() == []
