"""A reply's versions and record, carried in the Gradio message's metadata."""

import gradio as gr

from app.chat.versions import Reply, ReplyVersion, content_of, legacy_reply, reply_message, reply_of

FIRST = ReplyVersion(text="Arr, Paris be", adapter="pirate", figures="3 tokens · pirate · K", cut_at=3)
SECOND = ReplyVersion(text="Paris.", figures="2 tokens · base model · K", saw=(("Labels: sign 80%",),))


def test_regenerate_adds_a_shown_version_and_stepping_stays_in_range():
    reply = Reply((FIRST,)).added(SECOND)
    assert reply.current == SECOND and reply.shown == 1
    assert reply.stepped(-1).current == FIRST and reply.stepped(-5).shown == 0 and reply.stepped(3).shown == 1
    longer = ReplyVersion(text="Arr, Paris be the place", adapter="pirate")
    assert reply.stepped(-1).with_current(longer).versions == (longer, SECOND)


def test_the_adapter_is_named_once_and_a_cut_reply_says_so():
    content = content_of(FIRST)
    assert content.count("pirate") == 1 and "*adapter:" not in content
    assert "cut at the 3-token limit" in content
    assert "cut at" not in content_of(SECOND) and "What the model saw" in content_of(SECOND)


def test_the_record_survives_gradios_chatbot_both_ways():
    """Gradio keeps only its own metadata keys; the record rides in `id` and comes back from the browser."""
    chatbot = gr.Chatbot()
    message = reply_message(Reply((FIRST, SECOND), shown=0))
    back = chatbot.preprocess(chatbot.postprocess([{"role": "user", "content": "Hi"}, message]))
    assert reply_of(back[1]) == Reply((FIRST, SECOND), shown=0)
    assert "title" not in (chatbot.postprocess([message]).root[0].metadata or {})  # not folded as a "thought"
    assert reply_of({"role": "assistant", "content": "Paris."}) is None
    assert reply_of({"role": "assistant", "content": "x", "metadata": {"id": "reply:{broken"}}) is None


def test_a_reply_an_older_app_wrote_gives_its_adapter_and_figures():
    old = {"role": "assistant", "content": 'Arr!\n\n<small class="reply-figures">2 tokens · pirate · K</small>'
                                          "\n\n*adapter: pirate*"}
    version = legacy_reply(old).current
    assert (version.text, version.adapter, version.figures) == ("Arr!", "pirate", "2 tokens · pirate · K")


def test_an_error_with_no_words_shows_its_sentence_alone():
    assert content_of(ReplyVersion(text="", note="⚠️ The server is gone.")) == "⚠️ The server is gone."
    assert content_of(ReplyVersion(text="Arr", note="⚠️ Cut off.")) == "Arr\n\n⚠️ Cut off."
