"""Sample conversations for the tests of stored chats and chat files: a question with its reply, a reply with a cut
version and a whole one, a message with a picture, and the two checks of whether the server still has an image."""

from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.sampling import SamplingParams


def keep_all(_path) -> bool:  # the server still has every image
    return True


def keep_none(_path) -> bool:
    return False


TALK = Conversation((Turn.user("What is the capital of France?"),
                     Turn.reply(ReplyVersion("Paris.", figures="2 tokens · base model · K"))))
CUT = ReplyVersion(text="Arr, the capital be", adapter="pirate", figures="4 tokens · pirate · K", cut_at=4,
                   sampling=SamplingParams(max_tokens=4, top_k=1), context=(0,))
WHOLE = ReplyVersion(text="Paris.", figures="2 tokens · base model · K", saw=(("Labels: tabby cat 91%", "Text: none found"),))
TWO = Turn("assistant", versions=(CUT, WHOLE), shown=0)
PICTURE = Turn.user("What is it?", (Media.of("/tmp/gradio/x/sign.png"),))
