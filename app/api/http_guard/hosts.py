"""Which host names and origins name this app (bound address, loopback, machine names, --allowed-hosts)."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from app.core.access import is_loopback

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("", "0.0.0.0", "::", "[::]")
_NAME = re.compile(r"[a-z0-9_.\-]+|[0-9a-f:.]+")


def _normal(name: str) -> str:
    """A host name or address in one spelling: lower case, no brackets or trailing dot, IPv6 compressed."""
    name = name.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name.split("%")[0]).compressed
    except ValueError:
        return name


def host_header_name(value: str) -> str | None:
    """The host name of a Host header ('Example.com:7860' -> 'example.com', '[::1]:80' -> '::1'); None
    when it is not a host name at all."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[1:end], value[end + 1:]
        if end < 0 or (rest and not re.fullmatch(r":\d{1,5}", rest)):
            return None
    elif value.count(":") == 1:
        name, port = value.split(":")
        if not re.fullmatch(r"\d{1,5}", port):
            return None
    else:
        name = value
    name = name.rstrip(".")
    return _normal(name) if name and _NAME.fullmatch(name) else None


def origin_name(origin: str) -> str | None:
    """The host name of an Origin header; None for 'null' and anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not name:
        return None
    return _normal(name)


def machine_names() -> set[str]:
    """This machine's host name and the addresses of its network interfaces (for a 0.0.0.0 bind)."""
    names = {socket.gethostname()}
    try:
        import psutil  # noqa: PLC0415 - optional: every interface's addresses when it is installed

        for addresses in psutil.net_if_addrs().values():
            names.update(a.address for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6))
    except Exception:  # noqa: BLE001 - fall back to what the resolver and the routing table say
        pass
    try:
        names.update(str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:  # the address this machine would send from (a UDP connect sends nothing)
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))
                names.add(s.getsockname()[0])
        except OSError:
            pass
    return {_normal(n) for n in names if n}


def allowed_host_names(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a request may name: see the module docstring."""
    names = {_normal(bind_host)} if bind_host not in WILDCARDS else set()
    if bind_host in WILDCARDS:
        names.update(machine_names())
        names.update(LOOPBACK_NAMES)
    elif is_loopback(bind_host):
        names.update(LOOPBACK_NAMES)
    names.update(_normal(n) for n in extra if n)
    return frozenset(names)
