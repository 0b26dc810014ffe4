"""`${placeholder}` filling with the semantics of the backend's fill_template tool, done right.

Differences from the original tool, on purpose: a backslash escapes exactly the next character
(so `\\,` and `\\:` work in one pass and a value may contain unescaped colons after the first),
optional parameters left empty are dropped instead of leaking a literal `${...}` to Triton, and
every problem is reported with its key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from string import Template

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# One `parameters { ... string_value: "${name}" }` entry per line, as our templates write them.
_OPTIONAL_PARAM_LINE = re.compile(r'^\s*parameters:\s*\{.*string_value:\s*"\$\{(?P<name>\w+)\}".*\}\s*$')


class FillError(ValueError):
    """A fill argument or value is malformed, unknown, or missing."""


def _split_unescaped(text: str, sep: str, maxsplit: int = -1) -> list[str]:
    """Split on `sep` not preceded by a backslash; a backslash escapes any one character."""
    parts, current, i, splits = [], [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep and (maxsplit < 0 or splits < maxsplit):
            parts.append("".join(current))
            current, splits = [], splits + 1
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_fill_args(spec: str) -> dict[str, str]:
    """Parse `k1:v1,k2:v2` (fill_template's argument); `\\,` and `\\:` escape separators."""
    values: dict[str, str] = {}
    for piece in _split_unescaped(spec.strip(), ","):
        if not piece.strip():
            continue
        key_value = _split_unescaped(piece, ":", maxsplit=1)
        if len(key_value) != 2:
            raise FillError(f"'{_unescape(piece)}' has no ':' between key and value.")
        key, value = _unescape(key_value[0]).strip(), _unescape(key_value[1])
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise FillError(f"'{key}' is not a valid placeholder name.")
        values[key] = value
    return values


def placeholders(text: str) -> set[str]:
    """Every placeholder name in a template (`${x}` and `$x`), commented lines included."""
    return {m.group(1) or m.group(2) for m in PLACEHOLDER.finditer(text)}


def format_value(value: object) -> str:
    """Config text for a Python value (booleans as true/false, as protobuf text expects)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def fill(text: str, values: Mapping[str, object], optional: set[str] = frozenset()) -> str:
    """Fill placeholders; drop lines of optional parameters that have no value.

    Raises FillError naming every placeholder that is still unfilled afterwards.
    """
    given = {k: format_value(v) for k, v in values.items() if v is not None and format_value(v) != ""}
    kept = []
    for line in text.splitlines(keepends=True):
        m = _OPTIONAL_PARAM_LINE.match(line)
        if m and m.group("name") in optional and m.group("name") not in given:
            continue
        kept.append(line)
    kept_text = "".join(kept)
    left = sorted(placeholders(kept_text) - set(given))
    if left:
        raise FillError("no value for " + ", ".join(left))
    return Template(kept_text).safe_substitute(given)
