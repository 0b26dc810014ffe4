import pytest

from app.chat.prompts import PromptBuilder, chat_messages
from app.core.conversation import Conversation, Media, ReplyVersion, Turn

HISTORY = Conversation((Turn.user("Hi"), Turn.reply(ReplyVersion("Hello!", figures="2 tokens · base model · K")),
                        Turn.user("What is 2+2?", (Media.of("/x.png"),))))


def test_the_template_gets_each_turns_words_and_never_figures_or_pictures():
    reply = Turn.reply(ReplyVersion("Arr!", "pirate", figures="3 tokens · pirate · K", note="⚠️ slow",
                                    saw=(("Labels: cat 90%",),))).added(ReplyVersion("Arr, again!", "pirate"))
    asked = Conversation((Turn.user("hi"), reply, Turn.user("", (Media.of("/y.png"),)), Turn.user("and this?")))
    assert chat_messages(asked, "Be brief.") == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Arr, again!"}, {"role": "user", "content": "and this?"}]


def test_named_chatml_template():
    prompt = PromptBuilder(template_name="chatml").build(HISTORY, system_prompt="Be brief.")
    assert prompt == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                      "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                      "<|im_start|>assistant\n")
    assert PromptBuilder(template_name="chatml").stop_words() == ["<|im_end|>"]


def test_llama3_and_vicuna_templates():
    llama = PromptBuilder(template_name="llama3").build(Conversation.asking("Hi"))
    assert llama.startswith("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>")
    assert llama.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    vicuna = PromptBuilder(template_name="vicuna").build(Conversation.asking("Hi"))
    assert vicuna == "USER: Hi ASSISTANT:"


def test_unknown_template_is_named():
    with pytest.raises(ValueError, match="Unknown prompt template 'nope'"):
        PromptBuilder(template_name="nope")


def test_tokenizer_chat_template_preferred(cpu_model_dir):
    builder = PromptBuilder(tokenizer_dir=str(cpu_model_dir))
    assert builder.source == "tokenizer chat template"
    prompt = builder.build(Conversation.asking("Hi"))
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert builder.stop_words() == []


def test_a_picture_sent_alone_is_an_empty_message_of_the_person():
    asked = Conversation((Turn.user("", (Media.of("/y.png"),)),))  # a template needs at least one message
    assert chat_messages(asked, None) == [{"role": "user", "content": ""}]
    assert PromptBuilder(template_name="chatml").build(asked) == ("<|im_start|>user\n<|im_end|>\n"
                                                                  "<|im_start|>assistant\n")
