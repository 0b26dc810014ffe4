"""app/api/http_guard/hosts.py: one spelling per host name (case, brackets, trailing dot, IPv6 forms),
loopback detection, and which names each kind of bind address admits."""

from __future__ import annotations

import socket

import pytest

from app.api.http_guard.hosts import (
    allowed_host_names,
    host_header_name,
    machine_names,
    origin_name,
)


@pytest.mark.parametrize("header, name", [
    ("[0:0:0:0:0:0:0:1]:7860", "::1"),  # the long IPv6 spelling is compressed
    ("[::1]:7860", "::1"),
    ("::1", "::1"),  # a bare IPv6 address (no port) is still an address
    ("[FE80::1%eth0]:80", None),  # a zone id is no host name
    ("  Example.COM:80  ", "example.com"),
    ("example.com:123456", None),  # six-digit port
    ("example.com:", None),
    ("[::1]x", None),  # junk after the bracket
    ("[::1]:http", None),
    ("ex ample.com", None),
    ("例え.jp", None),  # not ASCII: browsers send punycode
    (".", None),
])
def test_host_header_spellings(header, name):
    assert host_header_name(header) == name


@pytest.mark.parametrize("origin, name", [
    ("http://[0:0:0:0:0:0:0:1]:7860", "::1"),
    ("HTTPS://LOCALHOST.:7860", "localhost"),
    ("http://[::1", None),  # urlsplit refuses it: no name, no exception
    ("ftp://127.0.0.1", None),
    ("ws://127.0.0.1:7860", None),
    ("http://", None),
    ("", None),
])
def test_origin_spellings(origin, name):
    assert origin_name(origin) == name


def test_machine_names_hold_this_hosts_name_in_one_spelling():
    names = machine_names()
    assert socket.gethostname().lower().rstrip(".") in names
    assert all(name == name.lower() and not name.startswith("[") for name in names)


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::", "[::]", ""])
def test_every_wildcard_bind_admits_loopback_and_this_machine(wildcard):
    names = allowed_host_names(wildcard)
    assert {"localhost", "127.0.0.1", "::1"} <= names
    assert socket.gethostname().lower().rstrip(".") in names
    assert not {"0.0.0.0", "::", ""} & names  # a wildcard is no host name


def test_a_bracketed_loopback_bind_admits_the_loopback_names():
    assert allowed_host_names("[::1]") == {"::1", "127.0.0.1", "localhost"}


def test_extra_names_are_normalised_and_blanks_ignored():
    names = allowed_host_names("192.168.1.5", ["GPU-Box.LAN.", "[2001:DB8:0:0::1]", ""])
    assert names == {"192.168.1.5", "gpu-box.lan", "2001:db8::1"}
    assert host_header_name("[2001:db8::0:1]:7860") in names  # another spelling of the same address matches
