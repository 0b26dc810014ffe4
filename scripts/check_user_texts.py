"""Check the rule for user texts: every sentence a person reads (a module-level `MSG_*` constant) is defined
in its package's `messages.py`, and other modules import it from there.

    python -m scripts.check_user_texts [ROOT ...]   # default: app setup cpu_runtime; exit 1 on a breach

Why one file per package: the texts of a package are read, reviewed and reworded together, and a test can
hold each against the code that raises it without hunting through every module.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PREFIX = "MSG_"
HOME = "messages.py"
DEFAULT_ROOTS = ("app", "setup", "cpu_runtime")


def stray_texts(source: str) -> list[tuple[int, str]]:
    """(line, name) of each module-level `MSG_*` assignment in `source`."""
    found = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        found += [(node.lineno, t.id) for t in targets if isinstance(t, ast.Name) and t.id.startswith(PREFIX)]
    return found


def breaches(roots: list[Path]) -> list[str]:
    """One line per `MSG_*` defined outside a `messages.py`."""
    lines = []
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else []:
            if path.name != HOME:
                lines += [f"{path}:{line}: {name} belongs in {path.parent / HOME}"
                          for line, name in stray_texts(path.read_text(encoding="utf-8"))]
    return lines


def main(argv: list[str]) -> int:
    found = breaches([Path(a) for a in (argv or DEFAULT_ROOTS)])
    print("\n".join(found) or "user texts: every MSG_ lives in its package's messages.py")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
