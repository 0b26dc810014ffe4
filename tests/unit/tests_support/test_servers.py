"""tests/servers.py's on_free_ports: which failed starts are tried again on new ports, and how often."""

from __future__ import annotations

import pytest

from setup.launcher.options import LaunchError
from tests.servers import on_free_ports

SLOW = "tritonserver was not ready after 300 s.\nI1128 model 'preprocessing' loading"
TAKEN = "tritonserver exited with code 1 before it was ready.\nfailed to start HTTP service: port already in use"


def failing(*errors: str):
    """A start() that raises LaunchError(error) for each of `errors` in turn, then returns its ports."""
    calls = []

    def start(*ports):
        calls.append(ports)
        if len(calls) <= len(errors):
            raise LaunchError(errors[len(calls) - 1])
        return "server"

    return start, calls


@pytest.mark.parametrize("errors", [(SLOW,), (TAKEN, TAKEN), (TAKEN, SLOW, TAKEN)])
def test_a_start_that_may_pass_next_time_is_tried_again_on_new_ports(errors):
    start, calls = failing(*errors)
    ports, server = on_free_ports(start)
    assert server == "server" and list(ports) == list(calls[-1]) and len(calls) == len(errors) + 1
    assert len({tuple(c) for c in calls}) == len(calls)  # new ports each time


@pytest.mark.parametrize(("errors", "tries"), [((SLOW, SLOW), 2), ((TAKEN,) * 3, 3),
                                               (("tritonserver exited with code 1: no such model",), 1)])
def test_a_start_that_keeps_failing_or_fails_for_good_reason_raises(errors, tries):
    start, calls = failing(*errors)
    with pytest.raises(LaunchError, match=errors[-1].splitlines()[0][:30]):
        on_free_ports(start)
    assert len(calls) == tries
