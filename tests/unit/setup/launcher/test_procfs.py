"""setup/launcher/procfs.py on this machine's /proc: the process table, process-group members (with a real
child in its own session), which sockets listen on a port and which process holds them, the health probe
against a real loopback HTTP server."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from setup.launcher.procfs import group_members, health_ok, listening_inodes, process_table, socket_inodes


def test_the_process_table_holds_this_process_with_its_parent_and_group():
    rows = {pid: (ppid, pgid, state) for pid, ppid, pgid, state in process_table()}
    ppid, pgid, state = rows[os.getpid()]
    assert ppid == os.getppid() and pgid == os.getpgrp() and state in "RS"


def test_group_members_of_a_new_session_and_its_zombies():
    script = ("import os, subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
              "done = subprocess.Popen([sys.executable, '-c', 'pass'])\n"
              "os.waitid(os.P_PID, done.pid, os.WEXITED | os.WNOWAIT)\n"  # exited, not reaped: a zombie
              "print(child.pid, done.pid, flush=True); time.sleep(30)\n")
    leader = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        child, zombie = (int(p) for p in leader.stdout.readline().split())
        assert sorted(group_members(leader.pid)) == sorted([leader.pid, child])
        assert sorted(group_members(leader.pid, zombies=True)) == sorted([leader.pid, child, zombie])
        assert os.getpid() not in group_members(leader.pid)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()
    end = time.monotonic() + 15
    while group_members(leader.pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert group_members(leader.pid) == []


@pytest.mark.parametrize("family, host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_a_listening_socket_is_found_and_traced_to_this_process(family, host):
    try:
        server = socket.socket(family)
        server.bind((host, 0))
    except OSError:
        pytest.skip(f"no {host} here")
    with server:
        port = server.getsockname()[1]
        assert listening_inodes(port) == set()  # bound, not listening yet
        server.listen()
        inodes = listening_inodes(port)
        assert len(inodes) == 1 and inodes <= socket_inodes(os.getpid())
        with socket.create_connection((host, port)):  # a connected socket is not a listener
            assert listening_inodes(port) == inodes
    assert listening_inodes(port) == set()


def test_socket_inodes_of_a_process_that_is_gone_are_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert socket_inodes(child.pid) == set()


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200 if self.path == "/v2/health/ready" else 503)
        self.end_headers()

    def log_message(self, *_):
        pass


def test_health_ok_only_for_a_200():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert health_ok(base + "/v2/health/ready")
        assert not health_ok(base + "/v2/health/live")  # 503
    finally:
        server.shutdown()
        server.server_close()
    assert not health_ok(base + "/v2/health/ready", timeout=0.5)  # nobody listens now
