"""app/web/pages/chat_replies.py: the order of a run's outputs lives in ReplyOutputs, and every update of a run and
every refusal has exactly that many values."""

import gradio as gr

from app.chat.reply_run import ReplySettings
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.web.pages.chat_replies import REPLY_OUTPUTS, ReplyOutputs, refuse, replies
from tests.compare_fakes import RecordingDeployment


def test_the_outputs_are_listed_in_one_order_and_every_update_fills_them():
    with gr.Blocks():
        parts = [gr.Textbox(), gr.Chatbot(), gr.State(), gr.Button(), gr.Button()]
        shown = tuple(gr.Button() for _ in range(7))
        outputs = ReplyOutputs(*parts, shown)
    assert outputs.components() == [*parts, *shown] and len(outputs.components()) == REPLY_OUTPUTS
    assert len(refuse("No.")) == REPLY_OUTPUTS
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1"), deployment=RecordingDeployment())
    session = "replies-test"
    ctx.outbox.start(session)
    updates = list(replies(ctx, session, Conversation(), None, ReplySettings(), ""))
    assert updates and all(len(update) == REPLY_OUTPUTS for update in updates)
