"""`python -m app compare --app URL`: the Compare job through a running app's Gradio API (its `compare`
endpoint, called with gradio_client), so the figures are what the app's users get."""

from __future__ import annotations

from pathlib import Path

from app.cli.messages import (
    MSG_CLI_APP_FAILED,
    MSG_CLI_APP_LOGIN_NEEDED,
    MSG_CLI_APP_LOGIN_REFUSED,
    MSG_CLI_APP_NO_COMPARE,
    MSG_CLI_APP_UNREACHABLE,
)
from app.core.errors import ChatError

ENDPOINT = "/compare"


def compare_through_app(url: str, prompt: str, adapters: list[str | None], max_tokens: int,
                        images: list[Path] | None = None,
                        login: tuple[str, str] | None = None) -> list[dict[str, str | None]]:
    """The final columns ({column, text, state, figures, finish_reason} each) of one Compare run on the app at
    `url`; `adapters` as the endpoint takes them (None for the base model). ChatError with the app's own sentence
    when it refuses, or a sentence when it cannot be reached or asks for a login (`login`: user, password) it did
    not get or refuses. Ctrl-C cancels the job, so the app stops every column."""
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError, AuthenticationError

    try:
        client = Client(url, verbose=False, auth=login)
    except AuthenticationError:
        raise ChatError(MSG_CLI_APP_LOGIN_NEEDED.format(url=url)) from None
    except ValueError as exc:
        if login is not None and "could not login" in str(exc).lower():
            raise ChatError(MSG_CLI_APP_LOGIN_REFUSED.format(url=url, user=login[0])) from None
        raise ChatError(MSG_CLI_APP_UNREACHABLE.format(url=url, detail=str(exc) or type(exc).__name__)) from None
    except Exception as exc:  # noqa: BLE001 - httpx, JSON or Gradio errors: all mean "not this app, not now"
        raise ChatError(MSG_CLI_APP_UNREACHABLE.format(url=url, detail=str(exc) or type(exc).__name__)) from None
    if ENDPOINT not in client.view_api(print_info=False, return_format="dict").get("named_endpoints", {}):
        raise ChatError(MSG_CLI_APP_NO_COMPARE.format(url=url))
    job = client.submit(prompt=prompt, adapters=["" if a is None else a for a in adapters], max_tokens=max_tokens,
                        images=[handle_file(str(image)) for image in images] if images else None, api_name=ENDPOINT)
    try:
        return job.result()
    except AppError as exc:
        raise ChatError(str(exc) or MSG_CLI_APP_FAILED.format(url=url)) from None
    except KeyboardInterrupt:
        job.cancel()
        raise
