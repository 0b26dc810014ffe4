"""The conversation as the Chatbot shows it: pictures before the text, a reply's shown version with its cut mark,
note, folded findings and which turns went in, the figures line; the reply being written and the waiting ones."""

from app.chat.outbox import Queued
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.web.chat_view import PENDING_PREFIX, chat_messages, context_line, reply_content, saw_block

FIRST = ReplyVersion(text="Arr, Paris be", adapter="pirate", figures="3 tokens · pirate · K", cut_at=3)
SECOND = ReplyVersion(text="Paris.", figures="2 tokens · base model · K", saw=(("Labels: sign <80%>",),))


def test_the_adapter_is_named_once_and_a_cut_reply_says_so():
    content = reply_content(FIRST)
    assert content.count("pirate") == 1 and "*adapter:" not in content
    assert "cut at the 3-token limit" in content and content.endswith(
        '<small class="reply-figures">3 tokens · <span class="reply-adapter">pirate</span> · K</small>')
    assert "cut at" not in reply_content(SECOND) and "What the model saw" in reply_content(SECOND)


def test_an_error_with_no_words_shows_its_sentence_alone():
    assert reply_content(ReplyVersion(text="", note="⚠️ The server is gone.")) == "⚠️ The server is gone."
    assert reply_content(ReplyVersion(text="Arr", note="⚠️ Cut off.")) == "Arr\n\n⚠️ Cut off."
    assert reply_content(ReplyVersion(text="Arr", stopped=True)) == "Arr (stopped)"


def test_the_block_is_one_escaped_line_and_numbers_several_images():
    block = saw_block((("Text: <b>hi</b>",), ("Text: OPEN",)))
    assert block.startswith('\n\n<details class="model-saw"><summary>What the model saw</summary>')
    assert "\n" not in block[2:] and "<b>hi</b>" not in block and "&lt;b&gt;hi&lt;/b&gt;" in block
    assert "<b>Image 1</b>" in block and "<b>Image 2</b>" in block
    assert saw_block(()) == ""


ROCKET, COFFEE = Media.of("/up/rocket.png"), Media.of("/up/coffee.png")
BEFORE = (Turn.user("a rocket?", (ROCKET,)), Turn.reply(ReplyVersion("A rocket.")), Turn.user("how fast?"),
          Turn.reply(ReplyVersion("Fast.")), Turn.user("and this?", (COFFEE,)))


def test_what_the_model_saw_says_which_turns_went_in():
    fresh = ReplyVersion("An espresso.", saw=(("Labels: espresso 95%",),), context=(4,))
    assert context_line(fresh, BEFORE) == ("Sent to the model: your message 3 of 3; a new picture starts what the "
                                           "model sees.")
    assert "your message 3 of 3" in reply_content(fresh, BEFORE)
    whole = ReplyVersion("An espresso and a rocket.", saw=(("Labels: espresso 95%",),), context=(0, 1, 2, 3, 4))
    assert context_line(whole, BEFORE) == "Sent to the model: your messages 1–3 (the whole conversation)."
    follow_up = ReplyVersion("Hot.", context=(4, 5, 6))
    after = (*BEFORE, Turn.reply(fresh), Turn.user("is it hot?"))
    assert context_line(follow_up, after) == ("Sent to the model: your messages 3–4 of 4; a new picture starts what "
                                              "the model sees.")
    assert context_line(ReplyVersion("Hi.", context=(0, 1, 2)), BEFORE[:3]) == ""  # nothing left out, no pictures
    assert context_line(ReplyVersion("Hi."), BEFORE) == ""  # not recorded (an older app's reply)


def test_turns_left_out_for_another_adapter_say_so_not_a_picture():
    """No picture in the chat; the reply after switching adapters was sent its own adapter's turns only (the "same
    adapter" history setting), so that is the reason given."""
    talk = (Turn.user("hello"), Turn.reply(ReplyVersion("Hi.", adapter=None)), Turn.user("and in pirate?"))
    reply = ReplyVersion("Arr.", adapter="pirate", context=(2,))
    line = context_line(reply, talk)
    assert line.startswith("Sent to the model: your message 2 of 2; the earlier ones were answered with another")
    assert "picture" not in line


def test_pictures_come_before_the_text_and_a_gone_one_is_named():
    talk = Conversation((Turn.user("What is it?", (ROCKET, Media("gone.png"))), Turn.reply(FIRST)))
    shown = chat_messages(talk)
    assert shown[:3] == [{"role": "user", "content": {"path": "/up/rocket.png"}},
                         {"role": "user", "content": "[image gone.png: not kept]"},
                         {"role": "user", "content": "What is it?"}]
    assert shown[3]["role"] == "assistant" and shown[3]["content"].startswith("Arr, Paris be")


def test_the_reply_being_written_and_the_waiting_messages_come_last():
    talk = Conversation((Turn.user("First"),))
    shown = chat_messages(talk, "Par", [Queued("Second question"), Queued("What is it?", ("/a.png", "/b.png"))])
    assert shown == [{"role": "user", "content": "First"}, {"role": "assistant", "content": "Par"},
                     {"role": "user", "content": PENDING_PREFIX + "Second question"},
                     {"role": "user", "content": PENDING_PREFIX + "[2 images] What is it?"}]


def test_the_adapter_that_answered_is_a_label_in_the_figures_line():
    pirate = ReplyVersion("Arr.", adapter="pirate", figures="3 tokens · 9.1 tokens/s · pirate · Triton engine topology")
    shown = reply_content(pirate)
    assert '· <span class="reply-adapter">pirate</span> ·' in shown
    assert "<span" not in reply_content(ReplyVersion("Hi.", figures="2 tokens · base model · Triton"))
    odd = ReplyVersion("x", adapter="<b>", figures="1 token · <b>")
    assert '<span class="reply-adapter">&lt;b&gt;</span>' in reply_content(odd)


def test_a_chatbot_message_is_found_in_its_turn():
    from app.web.chat_view import message_turn
    talk = Conversation((Turn.user("What is it?", (Media.of("/tmp/gradio/x/cat.png"),)),
                         Turn.reply(ReplyVersion("A cat.")), Turn.user("Sure?")))
    assert [message_turn(talk, index) for index in range(5)] == [0, 0, 1, 2, None]
