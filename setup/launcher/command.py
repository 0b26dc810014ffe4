"""The tritonserver command line, as the backend's launch_triton_server.py builds it (mpirun per rank)."""

from __future__ import annotations

from setup.launcher.options import LaunchOptions, TritonInstall

# How long tritonserver waits for a python-backend stub to start (the backend's default is 30 s). On a small CPU
# machine that is busy, several stubs importing torch at once can take longer, and a stub that misses it makes
# the server abort (boost::interprocess::lock_exception) instead of loading slowly (seen at load average 40).
# A stub that fails for a real reason reports it at once; the limit only ends a stub that never answers.
CPU_STUB_TIMEOUT_SECONDS = 300


def _rank_args(install: TritonInstall, opts: LaunchOptions, rank: int, shm_prefix: str) -> list[str]:
    args = [
        str(install.binary),
        f"--model-repository={opts.model_repo}",
        f"--http-address={opts.address}",
        f"--grpc-address={opts.address}",
        f"--metrics-address={opts.address}",
        f"--http-port={opts.http_port}",
        f"--grpc-port={opts.grpc_port}",
        f"--metrics-port={opts.metrics_port}",
        "--disable-auto-complete-config",
        f"--backend-config=python,shm-region-prefix-name={shm_prefix}{rank}_",
    ]
    if install.backend_dir is not None:
        args.append(f"--backend-directory={install.backend_dir}")
    if opts.cpu_only:
        args += ["--pinned-memory-pool-byte-size=0", "--allow-gpu-metrics=false",
                 f"--backend-config=python,stub-timeout-seconds={CPU_STUB_TIMEOUT_SECONDS}"]
    if rank == 0:
        if opts.multimodal_gpu0_cuda_mem_pool_bytes:
            args.append(f"--cuda-memory-pool-byte-size=0:{opts.multimodal_gpu0_cuda_mem_pool_bytes}")
        if opts.log_verbose:
            args.append(f"--log-verbose={opts.log_verbose}")
    else:
        args.append("--model-control-mode=explicit")
        args += [f"--load-model={name}" for name in opts.engine_model_names]
    return args + list(opts.extra_args)


def build_command(install: TritonInstall, opts: LaunchOptions, shm_prefix: str = "prefix") -> list[str]:
    """The argv to run: tritonserver alone, or under mpirun with one process per rank.

    Rank r's python-backend stubs name their shared-memory segments `<shm_prefix><r>_<uuid>`.
    """
    if opts.world_size == 1 or opts.no_mpi:
        return _rank_args(install, opts, 0, shm_prefix)
    cmd = ["mpirun", "--allow-run-as-root"]
    for rank in range(opts.world_size):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", *_rank_args(install, opts, rank, shm_prefix)]
    return cmd
