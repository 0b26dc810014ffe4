"""setup/launcher/options.py: the probe address, port validation edges, and the free-port check against real
sockets on loopback (IPv4 and IPv6)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from setup.launcher.options import LaunchError, LaunchOptions, check_ports_free, port_in_use


def options(tmp_path: Path, **kw) -> LaunchOptions:
    return LaunchOptions(model_repo=tmp_path, **kw)


@pytest.mark.parametrize("address, probe", [
    ("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"), ("", "127.0.0.1"), ("[::1]", "::1"),
    ("192.168.1.5", "192.168.1.5"),
])
def test_probe_host(tmp_path, address, probe):
    assert options(tmp_path, address=address).probe_host == probe


@pytest.mark.parametrize("ports, message", [
    ({"grpc_port": 65536}, "grpc port must be between 1 and 65535, got 65536"),
    ({"metrics_port": -5}, "metrics port must be between 1 and 65535"),
    ({"metrics_port": 8000}, "must all differ"),
])
def test_bad_ports(tmp_path, ports, message):
    with pytest.raises(LaunchError, match=message):
        options(tmp_path, **ports).validate_ports()


def test_edge_ports_are_valid(tmp_path):
    options(tmp_path, http_port=1, grpc_port=65535, metrics_port=2).validate()


def listening(family=socket.AF_INET, host="127.0.0.1") -> socket.socket:
    s = socket.socket(family)
    s.bind((host, 0))
    s.listen()
    return s


def test_port_in_use_sees_a_listener_and_a_free_port():
    with listening() as taken:
        port = taken.getsockname()[1]
        assert port_in_use(port) and port_in_use(port, "0.0.0.0")
    assert not port_in_use(port)


def test_port_in_use_on_ipv6_loopback():
    try:
        held = listening(socket.AF_INET6, "::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with held:
        port = held.getsockname()[1]
        assert port_in_use(port, "[::1]") and port_in_use(port, "::1")


def test_the_first_taken_port_is_named_with_its_kind(tmp_path):
    with listening() as grpc, listening() as metrics:
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        http_port = free.getsockname()[1]
        free.close()
        opts = options(tmp_path, http_port=http_port, grpc_port=grpc.getsockname()[1],
                       metrics_port=metrics.getsockname()[1])
        with pytest.raises(LaunchError, match=f"Triton's gRPC port {opts.grpc_port} on 127.0.0.1 is already in use.*"
                                              "pick another with --grpc-port"):
            check_ports_free(opts)
        with pytest.raises(LaunchError, match="pick another port"):
            check_ports_free(opts, port_flag=None)
        with pytest.raises(LaunchError, match="--triton-grpc-port"):
            check_ports_free(opts, port_flag="--triton-{kind}-port")


def test_invalid_ports_are_refused_before_probing(tmp_path):
    with pytest.raises(LaunchError, match="must all differ"):
        check_ports_free(options(tmp_path, http_port=9000, grpc_port=9000))


def test_too_little_shared_memory_is_one_line_naming_both_sizes(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from setup.launcher import options as launcher_options

    monkeypatch.setattr(launcher_options.os, "statvfs", lambda _: SimpleNamespace(f_bavail=10 * 256, f_frsize=4096))
    with pytest.raises(LaunchError) as info:
        launcher_options.check_shared_memory(tmp_path)
    assert str(info.value) == (f"Triton's Python models need shared memory: {tmp_path} has 10 MiB free, at least "
                               "64 MiB are needed (in Docker, start with --shm-size=1g).")
    monkeypatch.undo()
    launcher_options.check_shared_memory()  # this machine's /dev/shm is large enough for the suite's servers
