"""The demo start tries tritonserver once more after the Python backend's intermittent abort, and only then.

The abort (triton-inference-server/server#8882) cannot be made to happen on demand, so `start` here is a function
that raises the launcher's error with the text tritonserver printed when it happened; the real starts are covered by
every server test."""

from __future__ import annotations

import pytest

from setup.cpu.demo import BACKEND_ABORT, start_once_more_after_an_abort
from setup.cpu.messages import MSG_BACKEND_ABORT_RETRY
from setup.launcher import LaunchError

ABORTED = ("tritonserver exited with code -6 before it was ready.\n"
           f"terminate called after throwing an instance of '{BACKEND_ABORT}'")
NOT_READY = "tritonserver was not ready after 180 s.\nI1128 model 'tensorrt_llm' loading"


def starts(*errors: str):
    """A start() raising LaunchError(error) for each of `errors` in turn, then returning "server"; and its calls."""
    calls: list[int] = []

    def start():
        calls.append(1)
        if len(calls) <= len(errors):
            raise LaunchError(errors[len(calls) - 1])
        return "server"

    return start, calls


def test_an_aborted_start_is_tried_once_more_and_says_so():
    start, calls = starts(ABORTED)
    said: list[str] = []
    assert start_once_more_after_an_abort(start, said.append) == "server"
    assert len(calls) == 2 and said == [MSG_BACKEND_ABORT_RETRY]


@pytest.mark.parametrize(("errors", "tries"), [((ABORTED, ABORTED), 2), ((NOT_READY,), 1)])
def test_a_second_abort_or_another_failure_is_raised(errors, tries):
    start, calls = starts(*errors)
    said: list[str] = []
    with pytest.raises(LaunchError, match=errors[-1].splitlines()[0][:30]):
        start_once_more_after_an_abort(start, said.append)
    assert len(calls) == tries and said == [MSG_BACKEND_ABORT_RETRY] * (tries - 1)
