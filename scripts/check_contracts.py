"""Check that the declared protocols are the contract between rooms: outside app/deployments no code probes a
deployment or a reply stream with getattr(); it reads the attributes `Deployment` and `ReplyStream`
(app/deployments/base.py) declare, whose defaults every class inherits (app.core.streams.StreamDefaults,
app.deployments.base.DeploymentDefaults).

    python -m scripts.check_contracts [ROOT ...]   # default: app (app/deployments itself excepted); exit 1 on a breach

A breach is a call getattr(X, ...) where X names a deployment or a stream: a name, attribute or call whose
dotted text contains "deployment" or "stream" (e.g. `stream`, `self._tracked_stream`, `ctx.deployment`).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

WORDS = ("deployment", "stream")
DEFAULT_ROOTS = ("app",)
EXEMPT = ("app", "deployments")  # the kinds themselves may look inside their own objects


def _dotted(node: ast.AST) -> str:
    """The dotted text of a name, attribute or call target, e.g. 'ctx.deployment'; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def probes(source: str) -> list[tuple[int, str]]:
    """(line, object) of each getattr() call on a deployment or stream in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args:
            target = _dotted(node.args[0])
            if any(word in target.lower() for word in WORDS):
                found.append((node.lineno, target))
    return sorted(found)


def _exempt(path: Path) -> bool:
    parts = path.resolve().parts
    return any(parts[i:i + len(EXEMPT)] == EXEMPT for i in range(len(parts)))


def breaches(roots: list[Path]) -> list[str]:
    """One line per getattr() probe of a deployment or stream outside app/deployments."""
    lines = []
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else []:
            if _exempt(path):
                continue
            lines += [f"{path}:{line}: getattr({target}, ...) - read an attribute Deployment/ReplyStream declares "
                      "(app/deployments/base.py) instead" for line, target in probes(path.read_text(encoding="utf-8"))]
    return lines


def main(argv: list[str]) -> int:
    found = breaches([Path(a) for a in (argv or DEFAULT_ROOTS)])
    print("\n".join(found) or "contracts: no getattr() probes of deployments or streams outside app/deployments")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
