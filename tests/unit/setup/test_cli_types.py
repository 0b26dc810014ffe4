"""setup/cli_types.py: the argument types' accepted values and one-line messages, the parser that ends with one
line instead of the usage block, and the SIGTERM handler (a real signal to a real child process)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import textwrap

import pytest

from setup.cli_types import (
    OneLineErrorParser,
    host_port,
    http_url,
    login_file,
    non_negative_int,
    port_number,
    positive_float,
    positive_int,
    raise_interrupt,
)
from setup.paths import PROJECT_ROOT


@pytest.mark.parametrize("text, value", [("1", 1), ("65535", 65535), (" 8000 ", 8000)])
def test_port_numbers(text, value):
    assert port_number(text) == value


@pytest.mark.parametrize("text, message", [
    ("0", "port 0 is outside 1-65535"), ("65536", "port 65536 is outside 1-65535"), ("-1", "outside"),
    ("http", "'http' is not a port number"), ("80.5", "is not a port number"),
])
def test_bad_port_numbers(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        port_number(text)


def test_positive_int():
    assert positive_int("1") == 1 and positive_int("42") == 42
    with pytest.raises(argparse.ArgumentTypeError, match="^0 must be at least 1$"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match="'2.5' is not a whole number"):
        positive_int("2.5")


@pytest.mark.parametrize("text", ["0", "-1", "inf", "nan", "-inf", "1e-400"])
def test_positive_float_refuses_what_is_not_above_zero(text):
    with pytest.raises(argparse.ArgumentTypeError, match="must be a number above 0"):
        positive_float(text)


def test_positive_float():
    assert positive_float("0.25") == 0.25 and positive_float("1e3") == 1000.0
    with pytest.raises(argparse.ArgumentTypeError, match="'fast' is not a number"):
        positive_float("fast")


@pytest.mark.parametrize("text", ["127.0.0.1:8001", "localhost:1", "[::1]:8001", "gpu-box.lan:65535",
                                  "  10.0.0.2:80 "])
def test_host_port_accepts_and_keeps_the_text(text):
    assert host_port(text) == text.strip()


@pytest.mark.parametrize("text", ["localhost", ":8001", "host:0", "host:65536", "host:port", "a b:1",
                                  "http://host:80", "host:80/path",
                                  "[::1:8001", "::1:8001", "fe80::1:80", "[::1]8001", "[host]:80"])
def test_host_port_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not HOST:PORT"):
        host_port(text)


def test_a_bad_value_ends_in_one_line_with_status_2(capsys):
    parser = OneLineErrorParser(prog="tool")
    parser.add_argument("--port", type=port_number)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--port", "99999"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == "tool: error: argument --port: port 99999 is outside 1-65535 (see --help)\n"


def test_sigterm_leaves_through_keyboard_interrupt():
    script = textwrap.dedent("""
        import signal, sys, time
        from setup.cli_types import raise_interrupt
        signal.signal(signal.SIGTERM, raise_interrupt)
        try:
            print("ready", flush=True)
            time.sleep(30)
        except KeyboardInterrupt:
            print("clean exit", flush=True)
            sys.exit(0)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT)
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0 and out.strip() == "clean exit"
    with pytest.raises(KeyboardInterrupt):
        raise_interrupt(signal.SIGTERM, None)


@pytest.mark.parametrize("text, value", [("0", 0), ("7", 7)])
def test_non_negative_int_takes_zero(text, value):
    assert non_negative_int(text) == value


@pytest.mark.parametrize("text, words", [("-1", "-1 cannot be negative"), ("two", "'two' is not a whole number")])
def test_non_negative_int_refuses(text, words):
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        non_negative_int(text)


@pytest.mark.parametrize("text, ok", [("http://127.0.0.1:8000/v1", True), (" https://gpu.lan/v1 ", True),
                                      ("localhost:7860", False), ("http:///v1", False), ("ftp://h/v1", False)])
def test_http_url(text, ok):
    if ok:
        assert http_url(text) == text.strip()
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="is not an http\\(s\\) URL"):
            http_url(text)


def test_login_file_reads_user_password_lines(tmp_path):
    path = tmp_path / "logins"
    path.write_text("ann:pa:ss\n\nbob:x\n")
    assert login_file(str(path)) == (("ann", "pa:ss"), ("bob", "x"))


@pytest.mark.parametrize("text", ["", "ann\n", "ann:\n", ":pw\n", "ann:pw\nno colon\n"])
def test_login_file_refuses_lines_without_a_user_and_password(tmp_path, text):
    path = tmp_path / "logins"
    path.write_text(text)
    with pytest.raises(argparse.ArgumentTypeError, match="must hold USER:PASSWORD lines"):
        login_file(str(path))
    with pytest.raises(argparse.ArgumentTypeError, match="cannot read"):
        login_file(str(tmp_path / "missing"))
