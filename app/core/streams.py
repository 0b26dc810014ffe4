"""What every reply stream reports where its kind has nothing of its own to say (`StreamDefaults`, the one place
those defaults live), and the wrapper base that hands the declared figures on from the stream it wraps
(`ForwardedStream`). app.deployments.base.ReplyStream declares what each of them means; they live here, in the
lowest layer, because app.triton's TokenStream inherits them too."""

from __future__ import annotations

from collections.abc import Callable


class StreamDefaults:
    """The defaults of the figures a reply stream reports (see app.deployments.base.ReplyStream)."""

    finish_reason: str | None = None  # unknown: the kind does not say why a reply ended
    lora_bytes_sent: int = 0  # no LoRA inputs sent
    weights_sent: bool = False  # no adapter weights sent
    adapter: str | None = None  # the request carried no adapter the stream knows of
    whole_reply: bool = False  # the reply streams (not sent at once)
    image_report: Callable[[], list[dict] | None] | None = None  # no encoder findings to show
    notes: tuple[str, ...] = ()  # the request was sent as asked
    reads_on_loop: bool = False  # read by the thread that iterates it

    def details_line(self) -> str:
        """The kind's own figures line; none by default."""
        return ""

    async def ready(self) -> None:
        """Nothing to wait for: a stream that does not read on the loop waits inside next()."""


class ForwardedStream:
    """A stream wrapper's reads of the declared figures, each handed on from `_inner()` (the stream it wraps)."""

    def _inner(self):
        raise NotImplementedError

    @property
    def text(self) -> str:
        return self._inner().text

    @property
    def cancelled(self) -> bool:
        return self._inner().cancelled

    @property
    def chunks(self) -> int:
        return self._inner().chunks

    @property
    def time_to_first_token(self) -> float | None:
        return self._inner().time_to_first_token

    @property
    def finish_reason(self) -> str | None:
        return self._inner().finish_reason

    @property
    def lora_bytes_sent(self) -> int:
        return self._inner().lora_bytes_sent

    @property
    def weights_sent(self) -> bool:
        return self._inner().weights_sent

    @property
    def adapter(self) -> str | None:
        return self._inner().adapter

    @property
    def whole_reply(self) -> bool:
        return self._inner().whole_reply

    @property
    def image_report(self) -> Callable[[], list[dict] | None] | None:
        return self._inner().image_report

    @property
    def notes(self) -> tuple[str, ...]:
        return self._inner().notes

    @property
    def reads_on_loop(self) -> bool:
        return self._inner().reads_on_loop

    def details_line(self) -> str:
        return self._inner().details_line()

    async def ready(self) -> None:
        await self._inner().ready()
