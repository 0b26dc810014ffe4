"""app/__main__.py's command line, run as real subprocesses: help on every option, one-line errors for bad values."""

import subprocess
import sys

import pytest

from app.context import AppConfig
from app.core.constants import LLMAPI_MODEL


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=120)


def test_help():
    result = run("--help")
    assert result.returncode == 0 and "usage:" in result.stdout


@pytest.mark.parametrize("args, message", [
    ((), "one of the arguments --demo --triton --openai is required"),
    (("--triton", "localhost"), "is not HOST:PORT"),
    (("--demo", "--port", "70000"), "outside 1-65535"),
    (("--demo", "--triton", "a:1"), "not allowed with argument"),
    (("--triton", "a:1", "--twin", "xcomposer2"), "--twin xcomposer2 picks the CPU demo's repository; use it with "
                                                   "--demo (against a running server give its kind instead: "
                                                   "--deployment engine)"),
    (("--openai", "http://a:1/v1", "--model-adapter", "x"), "--model-adapter is for the Triton engine topology"),
    (("--triton", "a:1", "--twin", "kosmos-2"), "use it with --demo (against a running server give its kind instead: "
                                                "--deployment runner)"),
    (("--demo", "--deployment", "qwen2-vl-twin"), "invalid choice: 'qwen2-vl-twin'"),
    (("--demo", "--twin", "qwen2-vl-twin"), "invalid choice: 'qwen2-vl-twin'"),
    (("--demo", "--twin", "kosmos-2", "--deployment", "engine"), "--twin kosmos-2 is served as the runner kind"),
    (("--demo", "--deployment", "runner"), "pick one with --twin FAMILY (blip2-t5, "),
])
def test_bad_values_give_one_line_errors(args, message):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("family", ["blip2-opt", "llava-1.5", "vila", "gpt", "llama"])
def test_each_template_twin_is_a_demo_twin(family):
    """`--demo --twin <family>` parses for each template twin (the family list comes from the family files)."""
    from app.__main__ import TEMPLATE_TWINS, build_parser

    assert family in TEMPLATE_TWINS
    args = build_parser().parse_args(["--demo", "--twin", family])
    assert args.demo and args.twin == family
    result = run("--demo", "--twin", family, "--help")
    assert result.returncode == 0 and "llava-1.5 or llama" in " ".join(result.stdout.split())


@pytest.mark.parametrize("argv, repository, kind, model", [
    (["--demo"], "engine", "engine", AppConfig.model),
    (["--demo", "--twin", "engine"], "engine", "engine", AppConfig.model),
    (["--demo", "--deployment", "llmapi"], "llmapi", "llmapi", LLMAPI_MODEL),
    (["--demo", "--twin", "xcomposer2"], "xcomposer2", "engine", AppConfig.model),
    (["--demo", "--twin", "kosmos-2"], "kosmos-2", "runner", "multimodal_runner"),
    (["--demo", "--twin", "kosmos-2", "--deployment", "runner"], "kosmos-2", "runner", "multimodal_runner"),
    (["--demo", "--twin", "llava-1.5"], "llava-1.5", "engine", AppConfig.model),
    (["--triton", "a:1", "--deployment", "runner"], None, "runner", "multimodal_runner"),
])
def test_twin_picks_the_demo_repository_and_the_kind_follows(argv, repository, kind, model):
    """--twin names the CPU demo repository start_demo_triton writes; the app talks to it as the twin's kind."""
    from app.__main__ import build_parser, config_from_args, demo_repository, refuse_contradictions

    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_contradictions(parser, args)
    if repository is not None:
        assert demo_repository(args) == repository
    config = config_from_args(args, "127.0.0.1:1", None)
    assert config.deployment == kind and config.model == model


@pytest.mark.parametrize("twin", ["kosmos-2", "xcomposer2", "llava-1.5", "llama"])
def test_a_twin_under_deployment_is_refused_naming_twin(twin):
    """--deployment names only the server kind; a twin's name there gets one line naming its replacement."""
    result = run("--demo", "--deployment", twin)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert (f"'{twin}' is a CPU twin, picked with --twin {twin} (with --demo); --deployment names the server kind: "
            "engine, llmapi or runner") in lines[0]
    assert run("--demo", f"--deployment={twin}").stderr == result.stderr


def test_twin_without_demo_is_refused(capsys):
    """--twin picks the CPU demo's repository; against a server the sentence names the kind to give instead."""
    from app.__main__ import build_parser, refuse_contradictions
    from app.cli.messages import MSG_TWIN_WITHOUT_DEMO

    parser = build_parser()
    for where in (["--triton", "a:1"], ["--openai", "http://a:1/v1"]):
        args = parser.parse_args([*where, "--twin", "kosmos-2"])
        with pytest.raises(SystemExit) as ended:
            refuse_contradictions(parser, args)
        assert ended.value.code == 2
        assert MSG_TWIN_WITHOUT_DEMO.format(twin="kosmos-2", kind="runner") in capsys.readouterr().err
