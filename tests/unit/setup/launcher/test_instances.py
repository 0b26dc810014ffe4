"""setup/launcher/instances.py: claiming and releasing instance folders (real files and flocks): what a dead
owner left is cleared without following symlinks, release keeps or removes the folder, and processes racing
for one folder get it once. The live-owner and dead-owner basics are in tests/unit/setup/test_launcher_safety.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from setup.launcher.instances import InstanceFolder, claim_instance_folder
from setup.launcher.options import LaunchError
from setup.paths import PROJECT_ROOT


def test_a_claim_records_the_owner_and_leaves_other_folders_alone(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep").write_text("x")
    folder = claim_instance_folder(tmp_path, "9000-9001-9002")
    try:
        assert folder.path == tmp_path / "9000-9001-9002"
        assert (folder.path / InstanceFolder.LOCK_NAME).read_text() == f"{os.getpid()}\n"
        assert (tmp_path / "other" / "keep").read_text() == "x"
    finally:
        folder.release()


def test_what_a_dead_owner_left_is_cleared_without_following_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me")
    left = tmp_path / "parent" / "a"
    (left / "repo" / "model").mkdir(parents=True)
    (left / "log.txt").write_text("old")
    (left / "link").symlink_to(outside, target_is_directory=True)
    (left / InstanceFolder.LOCK_NAME).write_text("999999\n")  # a stale lock file, nobody holds its flock
    folder = claim_instance_folder(tmp_path / "parent", "a")
    try:
        assert sorted(p.name for p in folder.path.iterdir()) == [InstanceFolder.LOCK_NAME]
        assert (outside / "precious").read_text() == "keep me"
        assert (folder.path / InstanceFolder.LOCK_NAME).read_text() == f"{os.getpid()}\n"  # not "999999\n..."
    finally:
        folder.release()


def test_release_without_removing_keeps_the_files_and_frees_the_folder(tmp_path):
    folder = claim_instance_folder(tmp_path, "a")
    (folder.path / "server.log").write_text("kept")
    folder.release(remove=False)
    assert (folder.path / "server.log").read_text() == "kept"
    again = claim_instance_folder(tmp_path, "a")  # free again; the next owner starts empty
    assert not (again.path / "server.log").exists()
    again.release()
    again.release()  # a second release does nothing
    assert not again.path.exists()


def test_a_held_folder_is_refused_with_its_owner(tmp_path):
    folder = claim_instance_folder(tmp_path, "a")
    try:
        with pytest.raises(LaunchError, match=rf"{tmp_path / 'a'} belongs to a running server \(pid {os.getpid()}\)"):
            claim_instance_folder(tmp_path, "a")
    finally:
        folder.release()


RACER = textwrap.dedent("""
    import sys, time
    from setup.launcher.instances import claim_instance_folder
    from setup.launcher.options import LaunchError
    sys.stdin.readline()  # start together
    try:
        folder = claim_instance_folder(sys.argv[1], "shared")
    except LaunchError:
        print("refused", flush=True)
    else:
        print("claimed", flush=True)
        sys.stdin.readline()  # hold it until the test has counted
""")


def test_processes_racing_for_one_folder_get_it_once(tmp_path):
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT) for _ in range(4)]
    try:
        for racer in racers:
            racer.stdin.write("go\n")
            racer.stdin.flush()
        answers = sorted(racer.stdout.readline().strip() for racer in racers)
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()
    assert answers == ["claimed", "refused", "refused", "refused"]
