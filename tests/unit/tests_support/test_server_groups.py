"""tests/server_groups.py: which tests of the server pass share an xdist worker."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.server_groups import ONE_WORKER, REACHES, TestNeeds, group_summary, server_groups, servers_of

TESTS = Path(__file__).resolve().parents[2]


def need(module: str, name: str, *fixtures: str) -> TestNeeds:
    path = f"tests/integration/{module}.py"
    return TestNeeds(f"{path}::{name}", path, frozenset(fixtures))


def test_modules_on_cheap_servers_only_are_groups_of_their_own():
    groups = server_groups([need("test_a", "one", "triton", "app_served"), need("test_a", "two", "browser_context"),
                            need("test_b", "three", "triton")])
    assert groups == {"tests/integration/test_a.py::one": "tests/integration/test_a.py",
                      "tests/integration/test_a.py::two": "tests/integration/test_a.py",
                      "tests/integration/test_b.py::three": "tests/integration/test_b.py"}


def test_a_server_of_one_worker_keeps_its_modules_together_with_their_other_tests():
    groups = server_groups([need("test_a", "uses_vllm", "vllm", "triton"), need("test_a", "plain", "triton"),
                            need("test_b", "page", "vllm_app", "vllm"), need("test_c", "other", "dynamo")])
    assert groups == {"tests/integration/test_a.py::uses_vllm": "vllm", "tests/integration/test_a.py::plain": "vllm",
                      "tests/integration/test_b.py::page": "vllm", "tests/integration/test_c.py::other": "dynamo"}


def test_servers_a_module_shares_are_one_group_named_by_all_of_them():
    groups = server_groups([need("test_a", "x", "llmapi_triton"), need("test_a", "y", "xcomposer2_triton"),
                            need("test_b", "z", "xcomposer2_triton"), need("test_c", "w", "pacing")])
    assert set(groups.values()) == {"llmapi+xcomposer2", "paced"}
    assert groups["tests/integration/test_b.py::z"] == "llmapi+xcomposer2"


def test_fixtures_that_reach_a_server_at_run_time_count_as_using_it():
    assert servers_of(need("test_a", "x", "demo_app", "demo_page")) == {"llmapi"}
    assert servers_of(need("test_a", "x", "twin")) == {"llmapi"}
    groups = server_groups([need("test_a", "x", "demo_app"), need("test_b", "y", "llmapi_app_served", "llmapi_triton")])
    assert set(groups.values()) == {"llmapi"}


def test_summary_lists_groups_largest_first_with_their_modules():
    groups = server_groups([need("test_a", "x", "vllm"), need("test_b", "y", "vllm"), need("test_b", "z", "vllm"),
                            need("test_c", "w")])
    assert group_summary(groups) == ["vllm: 3 tests: test_a.py (1), test_b.py (2)",
                                     "tests/integration/test_c.py: 1 tests: test_c.py (1)"]


def _suite_sources() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text()) for path in TESTS.rglob("*.py") if "unit" not in path.parts}


def test_every_named_fixture_is_defined_in_the_suite():
    defined = {node.name for tree in _suite_sources().values() for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef)}
    named = set(ONE_WORKER) | set(REACHES) | {f for reached in REACHES.values() for f in reached}
    assert named - defined == set()


def test_every_fixture_that_calls_getfixturevalue_is_in_reaches():
    """A fixture that picks a server at run time is invisible in a test's fixture names: REACHES must say which."""
    callers = set()
    for tree in _suite_sources().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(call, ast.Attribute) and call.attr == "getfixturevalue" for call in ast.walk(node)):
                callers.add(node.name)
    assert callers and callers <= set(REACHES), callers - set(REACHES)
