"""setup/launcher/command.py: the tritonserver argv per rank beyond what tests/unit/setup/test_launcher.py
checks: bind address, backend folder, CPU-only flags, verbosity on rank 0 alone, extra arguments last."""

from __future__ import annotations

from pathlib import Path

from setup.launcher.command import CPU_STUB_TIMEOUT_SECONDS, build_command
from setup.launcher.options import LaunchOptions, TritonInstall

BINARY = Path("/opt/tritonserver/bin/tritonserver")


def options(**kw) -> LaunchOptions:
    return LaunchOptions(model_repo=Path("/models/repo"), **kw)


def test_every_service_binds_the_given_address():
    cmd = build_command(TritonInstall(binary=BINARY), options(address="0.0.0.0"))
    assert [a for a in cmd if "-address=" in a] == [
        "--http-address=0.0.0.0", "--grpc-address=0.0.0.0", "--metrics-address=0.0.0.0"]


def test_a_backend_folder_is_passed_only_when_the_install_has_one():
    with_dir = build_command(TritonInstall(binary=BINARY, backend_dir=Path("/cache/backends")), options())
    assert "--backend-directory=/cache/backends" in with_dir
    assert not any(a.startswith("--backend-directory") for a in build_command(TritonInstall(binary=BINARY), options()))


def test_cpu_only_turns_off_pinned_memory_and_gpu_metrics():
    cmd = build_command(TritonInstall(binary=BINARY), options(cpu_only=True))
    assert {"--pinned-memory-pool-byte-size=0", "--allow-gpu-metrics=false"} <= set(cmd)
    assert f"--backend-config=python,stub-timeout-seconds={CPU_STUB_TIMEOUT_SECONDS}" in cmd
    assert not any("stub-timeout" in arg for arg in build_command(TritonInstall(binary=BINARY), options()))
    assert "--allow-gpu-metrics=false" not in build_command(TritonInstall(binary=BINARY), options())


def test_verbosity_on_rank_zero_alone_and_extra_arguments_last_on_every_rank():
    cmd = build_command(TritonInstall(binary=BINARY),
                        options(world_size=2, log_verbose=2, extra_args=("--exit-on-error=false", "--x=1")))
    ranks = " ".join(cmd).split(" : ")
    assert "--log-verbose=2" in ranks[0] and "--log-verbose" not in ranks[1]
    assert all(rank.endswith("--exit-on-error=false --x=1") for rank in ranks)
    assert build_command(TritonInstall(binary=BINARY), options(log_verbose=0)).count("--log-verbose=0") == 0


def test_a_single_rank_runs_the_binary_directly_with_every_model():
    cmd = build_command(TritonInstall(binary=BINARY), options(extra_args=("--strict-readiness=true",)))
    assert cmd[0] == str(BINARY) and cmd[-1] == "--strict-readiness=true"
    assert not any(a.startswith(("--load-model", "--model-control-mode")) for a in cmd)


def test_four_ranks_have_their_own_prefix_and_three_load_only_the_engine():
    cmd = build_command(TritonInstall(binary=BINARY), options(world_size=4), shm_prefix="tvl9r")
    ranks = " ".join(cmd).split(" : ")
    assert len(ranks) == 4 and cmd.count(":") == 3
    for rank, text in enumerate(ranks):
        assert f"shm-region-prefix-name=tvl9r{rank}_" in text
        assert ("--load-model=tensorrt_llm" in text) is (rank > 0)
