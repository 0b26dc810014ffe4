"""Launcher: binary discovery, the command line it builds (compared with the backend launcher's
documented behaviour), and process supervision with a real short-lived process."""

import os
import stat
import sys
from pathlib import Path

import pytest

from setup.launcher import (
    LaunchError,
    LaunchOptions,
    TritonInstall,
    TritonProcess,
    build_command,
    find_tritonserver,
)
from tests.proc_helpers import live_members


def opts(tmp_path, **kw) -> LaunchOptions:
    return LaunchOptions(model_repo=tmp_path, **kw)


def fake_binary(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "tritonserver"
    path.write_text(f"#!{sys.executable}\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_single_rank_command(tmp_path):
    install = TritonInstall(binary=Path("/opt/tritonserver/bin/tritonserver"))
    cmd = build_command(install, opts(tmp_path, http_port=9000, grpc_port=9001, metrics_port=9002))
    assert cmd[0] == "/opt/tritonserver/bin/tritonserver"
    assert f"--model-repository={tmp_path}" in cmd
    assert {"--http-port=9000", "--grpc-port=9001", "--metrics-port=9002"} <= set(cmd)
    assert "--disable-auto-complete-config" in cmd
    assert "--backend-config=python,shm-region-prefix-name=prefix0_" in cmd
    assert "--http-address=127.0.0.1" in cmd and "--grpc-address=127.0.0.1" in cmd  # loopback by default
    assert not any(a.startswith("--cuda-memory-pool-byte-size") for a in cmd)


def test_multi_rank_command_uses_mpirun_like_the_backend_launcher(tmp_path):
    install = TritonInstall(binary=Path("/bin/ts"))
    cmd = build_command(install, opts(tmp_path, world_size=2, multimodal_gpu0_cuda_mem_pool_bytes=300_000_000,
                                      engine_model_names=("tensorrt_llm", "multimodal_encoders")))
    assert cmd[:2] == ["mpirun", "--allow-run-as-root"]
    ranks = " ".join(cmd).split(" : ")
    assert len(ranks) == 2
    assert "-n 1 /bin/ts" in ranks[0] and "-n 1 /bin/ts" in ranks[1]
    assert "shm-region-prefix-name=prefix0_" in ranks[0] and "shm-region-prefix-name=prefix1_" in ranks[1]
    assert "--cuda-memory-pool-byte-size=0:300000000" in ranks[0]
    assert "--cuda-memory-pool-byte-size" not in ranks[1]
    assert "--model-control-mode=explicit" in ranks[1] and "--model-control-mode" not in ranks[0]
    assert "--load-model=tensorrt_llm" in ranks[1] and "--load-model=multimodal_encoders" in ranks[1]


@pytest.mark.parametrize("kw, message", [
    ({"http_port": 0}, "http port must be between 1 and 65535"),
    ({"http_port": 8001}, "must all differ"),
    ({"world_size": 0}, "world size must be at least 1"),
    ({"multimodal_gpu0_cuda_mem_pool_bytes": -1}, "cannot be negative"),
])
def test_bad_options(tmp_path, kw, message):
    with pytest.raises(LaunchError, match=message):
        opts(tmp_path, **kw).validate()


def test_missing_repository(tmp_path):
    with pytest.raises(LaunchError, match="does not exist"):
        LaunchOptions(model_repo=tmp_path / "nope").validate()


def test_find_prefers_explicit_then_env(tmp_path, monkeypatch):
    binary = fake_binary(tmp_path, "pass")
    assert find_tritonserver(binary).binary == binary
    monkeypatch.setenv("TRITONSERVER", str(binary))
    assert find_tritonserver().source == "$TRITONSERVER"
    with pytest.raises(LaunchError, match="not an executable file"):
        find_tritonserver(tmp_path / "missing")


def test_wheel_install_has_stub_and_library_paths(monkeypatch):
    monkeypatch.delenv("TRITONSERVER", raising=False)
    install = find_tritonserver()
    if install.source != "nvidia-pytriton wheel":
        pytest.skip("an NVIDIA container binary takes precedence here")
    assert (install.backend_dir / "python" / "triton_python_backend_stub").is_file()
    assert (install.backend_dir / "python" / "libtriton_python.so").is_file()
    assert install.env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert "nvidia_pytriton.libs" in install.env["LD_LIBRARY_PATH"]


def test_failed_start_reports_log_tail(tmp_path):
    binary = fake_binary(tmp_path, "import sys; print('model load failed: bad config'); sys.exit(3)")
    process = TritonProcess(TritonInstall(binary=binary), opts(tmp_path, http_port=free()), tmp_path / "log.txt")
    process.start()
    with pytest.raises(LaunchError, match=r"(?s)exited with code 3.*model load failed: bad config"):
        process.wait_ready(timeout=20)


def test_stop_terminates_the_process_group_we_started(tmp_path):
    # a server that never becomes ready and starts a child: stop() must end both
    script = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
              " print('child started', flush=True); time.sleep(60)")
    binary = fake_binary(tmp_path, script)
    process = TritonProcess(TritonInstall(binary=binary), opts(tmp_path, http_port=free()), tmp_path / "log.txt")
    process.start()
    with pytest.raises(LaunchError, match="not ready after"):
        process.wait_ready(timeout=1.5)
    pgid = process.pid
    process.stop(grace=5)
    assert not process.is_running()
    assert live_members(pgid) == []


def free() -> int:
    from tests.servers import free_port

    return free_port()
