"""Argument types and the one-line-error parser shared by every command line (setup, app, bench, benchmarks).

Imports: the standard library only.
"""

from __future__ import annotations

import argparse
import re


class OneLineErrorParser(argparse.ArgumentParser):
    """Bad values end in one line on stderr (`prog: error: ...`), without the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def port_number(text: str) -> int:
    return _whole_number(text, "a port number", 1, "port {value} is outside 1-65535", high=65535)


def positive_int(text: str) -> int:
    return _whole_number(text, "a whole number", 1, "{value} must be at least 1")


def non_negative_int(text: str) -> int:
    return _whole_number(text, "a whole number", 0, "{value} cannot be negative")


def _whole_number(text: str, kind: str, low: int, outside: str, high: int | None = None) -> int:
    """`text` as an int from `low` to `high`, else argparse's error: `kind` names what it should be, `outside`
    (formatted with the value) says why a number is refused."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {kind}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(outside.format(value=value))
    return value


def http_url(text: str) -> str:
    """An http(s) URL with a host, as given (stripped)."""
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", text.strip()):
        raise argparse.ArgumentTypeError(f"'{text}' is not an http(s) URL (for example http://127.0.0.1:8000/v1)")
    return text.strip()


def login_file(path: str) -> tuple[tuple[str, str], ...]:
    """USER:PASSWORD lines of a file (the app's --auth-file, and a client's login to such an app)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from None
    pairs = tuple(tuple(line.split(":", 1)) for line in lines if ":" in line)
    if not pairs or len(pairs) != len(lines) or any(not user or not password for user, password in pairs):
        raise argparse.ArgumentTypeError(f"{path} must hold USER:PASSWORD lines")
    return pairs


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a number above 0")
    return value


def host_port(text: str) -> str:
    """HOST:PORT as given; an IPv6 host goes in brackets ([::1]:8001), so where the port starts is plain."""
    match = re.fullmatch(r"(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.\-]+)):(\d+)", text.strip())
    if not match or not 1 <= int(match.group(3)) <= 65535:
        raise argparse.ArgumentTypeError(f"'{text}' is not HOST:PORT (for example 127.0.0.1:8001, [::1]:8001)")
    return text.strip()


def raise_interrupt(*_args) -> None:
    """SIGTERM handler: leave through the same clean path as Ctrl-C."""
    raise KeyboardInterrupt
