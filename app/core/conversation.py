"""The conversation as the app keeps it: typed turns (a person's message with its pictures and every version an
edit made, each with the turns that followed it; a reply with every version Regenerate made) and which of them the
model sees for the next reply.

Every layer reads these fields (the deployments build prompts and wire messages from them, so they live here,
below app.deployments); display formats (Gradio messages, reply HTML) are made from them in app.web, and their
saved JSON form is app.chat.conversation_json's."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from app.core.sampling import SamplingParams

USER, ASSISTANT = "user", "assistant"
ROLES = (USER, ASSISTANT)
IMAGE, VIDEO, PDF = "image", "video", "pdf"
MEDIA_KINDS = (IMAGE, VIDEO, PDF)
MAX_VERSIONS = 20  # Regenerate beyond this drops the oldest


@dataclass(frozen=True)
class Media:
    """A file sent with a message: on the server (`path`, an upload), as bytes (`data`, from an API caller), or
    only named (a picture of an imported conversation, or one the server no longer has: shown, never sent)."""

    name: str = ""
    path: str | None = None
    data: bytes | None = field(default=None, repr=False)
    kind: str = IMAGE
    # A video or a PDF: the sampled frames / rendered pages (PNG paths or bytes) that the model is sent as
    # pictures, each with its label ("1.5 s", "page 2"); `detail` says what was taken ("12 of 240 frames").
    frames: tuple[str | bytes, ...] = field(default=(), repr=False)
    labels: tuple[str, ...] = ()
    detail: str = ""
    as_video: bool = False  # the whole video file is sent (the model's video input), not its frames

    @classmethod
    def of(cls, source: str | Path | bytes) -> Media:
        """An image from a path or from bytes."""
        if isinstance(source, bytes):
            return cls(data=source)
        return cls(name=Path(source).name, path=str(source))

    @property
    def source(self) -> str | bytes | None:
        """What a deployment reads: the path or the bytes, None when the file is gone."""
        return self.path if self.path is not None else self.data

    @property
    def pictures(self) -> tuple[str | bytes, ...]:
        """The pictures a deployment is sent for this file: an image itself, a video's frames, a PDF's pages."""
        if self.kind == IMAGE or self.as_video:
            return (self.source,) if self.source is not None else ()
        return self.frames


@dataclass(frozen=True)
class ReplyVersion:
    """One version of a reply."""

    text: str  # the model's words: what later turns send back to it, what Continue goes on from
    adapter: str | None = None  # None: the base model
    sampling: SamplingParams | None = None  # the settings it was made with (None: not recorded)
    figures: str = ""  # the plain figures line ("" for a reply that failed)
    saw: tuple[tuple[str, ...], ...] = ()  # per image, plain lines of what the encoder found
    context: tuple[int, ...] = ()  # the places (in the conversation) of the turns the model was sent
    cut_at: int | None = None  # the max-new-tokens limit that ended it, None when it ended otherwise
    stopped: bool = False  # the person pressed Stop
    note: str = ""  # a warning said under the text (an error, an adapter that seems not applied)
    # What the reply's text was parsed into (app.chat.reply_outputs.ReplyOutputs: a chart's table, grounded
    # boxes, a markdown page); None when it is plain prose. Typed there: app.core cannot import app.outputs.
    outputs: object = None

    @property
    def can_continue(self) -> bool:
        """Continue may go on with it: cut at the token limit, or stopped by the person with some words said."""
        return bool(self.cut_at) or (self.stopped and bool(self.text.strip()) and not self.note)


@dataclass(frozen=True)
class Branch:
    """One version of a person's message (the original, or an edit) and the turns that followed it. The shown
    branch keeps no `later` turns: they are the conversation's own."""

    text: str
    media: tuple[Media, ...] = ()
    later: tuple[Turn, ...] = ()


@dataclass(frozen=True)
class Turn:
    """A person's message (text and media; `branches`: its versions after an edit, oldest first, `shown` the one
    the chat shows) or a reply (its versions, oldest first; `shown` is the one the chat shows and later turns use;
    `text` is that version's words)."""

    role: str
    text: str = ""
    media: tuple[Media, ...] = ()
    versions: tuple[ReplyVersion, ...] = ()
    shown: int = -1
    branches: tuple[Branch, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"a turn's role is {' or '.join(ROLES)}, not {self.role!r}")
        if self.branches:
            if self.role == ASSISTANT:
                raise ValueError("a reply has versions, not branches")
            shown = self.shown % len(self.branches)
            drop = max(0, len(self.branches) - MAX_VERSIONS)  # beyond the limit the oldest go
            branches, shown = self.branches[drop:], max(0, shown - drop)
            object.__setattr__(self, "branches", branches)
            object.__setattr__(self, "shown", shown)
            object.__setattr__(self, "text", branches[shown].text)
            object.__setattr__(self, "media", branches[shown].media)
        if self.role == ASSISTANT:
            if not self.versions:
                raise ValueError("a reply has at least one version")
            versions = self.versions[-MAX_VERSIONS:]
            object.__setattr__(self, "versions", versions)
            object.__setattr__(self, "shown", self.shown % len(versions))
            object.__setattr__(self, "text", versions[self.shown].text)
        elif self.versions:
            raise ValueError("a person's message has no reply versions")

    @classmethod
    def user(cls, text: str, media: tuple[Media, ...] | list[Media] = ()) -> Turn:
        return cls(USER, text, tuple(media))

    @classmethod
    def reply(cls, version: ReplyVersion) -> Turn:
        return cls(ASSISTANT, versions=(version,))

    @property
    def is_reply(self) -> bool:
        return self.role == ASSISTANT

    @property
    def current(self) -> ReplyVersion | None:
        """The shown version of a reply (None for a person's message)."""
        return self.versions[self.shown] if self.versions else None

    @property
    def adapter(self) -> str | None:
        """The adapter of a reply's shown version (None for the base model and for a person's message)."""
        return self.current.adapter if self.current else None

    @property
    def images(self) -> tuple[str | bytes, ...]:
        """The images a deployment can read (paths or bytes; a video's frames, a PDF's pages; gone ones left out)."""
        return tuple(picture for m in self.media for picture in m.pictures)

    @property
    def has_pictures(self) -> bool:
        """A message that came with pictures, a video or a PDF (even ones the server no longer has)."""
        return bool(self.media)

    def added(self, version: ReplyVersion) -> Turn:
        """This reply with a new version (a regenerated reply), shown."""
        return Turn(ASSISTANT, versions=(*self.versions, version))

    def stepped(self, by: int) -> Turn:
        """This reply showing the version `by` places later (earlier when negative), within the versions there are."""
        return replace(self, shown=max(0, min(len(self.versions) - 1, self.shown + by)))

    def with_text(self, text: str) -> Turn:
        """This turn with other words (a reply: its shown version's; an edited message: its shown branch's)."""
        if self.current:
            return self.with_current(replace(self.current, text=text))
        if self.branches:
            branches = list(self.branches)
            branches[self.shown] = replace(branches[self.shown], text=text)
            return replace(self, branches=tuple(branches))
        return replace(self, text=text)

    def with_current(self, version: ReplyVersion) -> Turn:
        """This reply with its shown version replaced (Continue extends it)."""
        versions = list(self.versions)
        versions[self.shown] = version
        return Turn(ASSISTANT, versions=tuple(versions), shown=self.shown)


@dataclass(frozen=True)
class ContextPolicy:
    """Which earlier turns the model is sent with a new message.

    `same_adapter`: only the exchanges answered by the reply's adapter (so styles do not leak between adapters);
    `keep_pictures`: False (the default) makes a message with a new picture start what the model sees, so a reply
    about it is not mixed up with earlier pictures; True keeps the whole conversation (models that can hold it)."""

    same_adapter: bool = True
    keep_pictures: bool = False


@dataclass(frozen=True)
class Conversation:
    """Turns in order; a reply answers the person's message(s) before it."""

    turns: tuple[Turn, ...] = ()

    @classmethod
    def asking(cls, text: str, images: tuple | list = ()) -> Conversation:
        """A conversation of one message (paths or bytes as its images)."""
        return cls((Turn.user(text, tuple(Media.of(image) for image in images or ())),))

    def __len__(self) -> int:
        return len(self.turns)

    def __bool__(self) -> bool:
        return bool(self.turns)

    def with_turn(self, turn: Turn) -> Conversation:
        return Conversation((*self.turns, turn))

    @property
    def last_reply(self) -> Turn | None:
        """The last turn when it is a reply."""
        return self.turns[-1] if self.turns and self.turns[-1].is_reply else None

    def branches_at(self, index: int) -> tuple[Branch, ...]:
        """The versions of the person's message at `index`, each with the turns that followed it (the shown one's
        are this conversation's turns after it); one version for a message never edited."""
        turn = self.turns[index]
        if turn.is_reply:
            raise ValueError("only a person's message has branches")
        later = self.turns[index + 1:]
        if not turn.branches:
            return (Branch(turn.text, turn.media, later),)
        return tuple(replace(b, later=later) if i == turn.shown else b for i, b in enumerate(turn.branches))

    def edited(self, index: int, text: str) -> Conversation:
        """The conversation up to the person's message at `index`, now saying `text` (its media kept) as a new
        version of that message, shown; the earlier versions keep the turns that followed them."""
        branches = (*self.branches_at(index), Branch(text, self.turns[index].media))
        return self._showing(index, branches, len(branches) - 1)

    def stepped_branch(self, index: int, by: int) -> Conversation:
        """The conversation showing the version `by` places later (earlier when negative) of the person's message
        at `index`, with the turns that followed that version."""
        branches = self.branches_at(index)
        return self._showing(index, branches, max(0, min(len(branches) - 1, self.turns[index].shown % len(branches)
                                                         + by)))

    def _showing(self, index: int, branches: tuple[Branch, ...], shown: int) -> Conversation:
        later = branches[shown].later
        kept = tuple(replace(b, later=()) if i == shown else b for i, b in enumerate(branches))
        return Conversation((*self.turns[:index], Turn(USER, branches=kept, shown=shown), *later))

    def branched(self) -> tuple[int, ...]:
        """The places of the person's messages that have more than one version."""
        return tuple(i for i, turn in enumerate(self.turns) if len(turn.branches) > 1)

    def with_last_reply(self, reply: Turn) -> Conversation:
        """The conversation with its last turn (a reply) replaced."""
        return Conversation((*self.turns[:-1], reply))

    def without_last_reply(self) -> Conversation:
        """Up to the last message of the person (the turns after it are the replies to answer again)."""
        turns = list(self.turns)
        while turns and turns[-1].is_reply:
            turns.pop()
        return Conversation(tuple(turns))

    def current_media(self) -> tuple[Media, ...]:
        """The media of the trailing message(s) of the person (after the last reply), as sent."""
        media: list[Media] = []
        for turn in reversed(self.turns):
            if turn.is_reply:
                break
            media[:0] = turn.media
        return tuple(media)

    def current_images(self) -> tuple[str | bytes, ...]:
        """The images of the trailing message(s) of the person (after the last reply)."""
        images: list[str | bytes] = []
        for turn in reversed(self.turns):
            if turn.is_reply:
                break
            images[:0] = turn.images
        return tuple(images)

    def latest_images(self) -> tuple[str | bytes, ...]:
        """The images of the last message that has readable ones (for a model that needs one on every request)."""
        return next((turn.images for turn in reversed(self.turns) if not turn.is_reply and turn.images), ())

    def last_user_text(self) -> str:
        return next((turn.text for turn in reversed(self.turns) if not turn.is_reply and turn.text), "")

    def context_start(self, policy: ContextPolicy) -> int:
        """Where what the model sees begins: at the last message with a picture, unless the policy keeps all."""
        if policy.keep_pictures:
            return 0
        return max((i for i, turn in enumerate(self.turns) if not turn.is_reply and turn.has_pictures), default=0)

    def context_for_reply(self, policy: ContextPolicy, adapter: str | None) -> Context:
        """The turns the model is sent for a reply by `adapter` (None: the base model) to this conversation."""
        kept: list[int] = []
        waiting: list[int] = []  # the person's messages since the last reply
        for index in range(self.context_start(policy), len(self.turns)):
            turn = self.turns[index]
            if not turn.is_reply:
                waiting.append(index)
                continue
            if not policy.same_adapter or turn.adapter == (adapter or None):
                kept += [*waiting, index]
            waiting = []
        kept += waiting
        sent = (Turn.user(t.text, t.media) if t.branches else t for t in (self.turns[i] for i in kept))
        return Context(Conversation(tuple(sent)), tuple(kept))  # a message's other versions are not sent


@dataclass(frozen=True)
class Context:
    """What the model is sent: the turns, and their places in the whole conversation."""

    conversation: Conversation
    places: tuple[int, ...]
