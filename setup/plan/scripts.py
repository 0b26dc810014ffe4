"""Where a TensorRT-LLM example script is: looked up in the user's checkout, else the release's recorded layout.

Releases up to 0.19 keep examples flat (`examples/llama/...`); from 0.20 they sit under
`examples/models/core/` or `examples/models/contrib/`. The visual builder is `build_visual_engine.py` up to
0.18 and `build_multimodal_engine.py` from 0.19. Given a checkout (a folder with `examples/`), the plan
names the file that exists there; without one it names the recorded path and says so in its header.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from setup.plan.messages import MSG_NOT_IN_CHECKOUT

MODEL_GROUPS = ("core", "contrib")
VISUAL_BUILDERS = ("build_multimodal_engine.py", "build_visual_engine.py")
NOTE_NO_CHECKOUT = ("No TensorRT-LLM checkout at {root}: script paths follow the layout recorded for release "
                    "{version} ({layout} examples).")


def _model_part(relative: str) -> tuple[str, str] | None:
    """('llama', 'convert_checkpoint.py') for either layout of an example path; None for other paths."""
    parts = Path(relative).parts
    if len(parts) == 3 and parts[0] == "examples":
        return parts[1], parts[2]
    if len(parts) == 5 and parts[:2] == ("examples", "models") and parts[2] in MODEL_GROUPS:
        return parts[3], parts[4]
    return None


def candidates(relative: str) -> list[str]:
    """Every place `relative` may be in some release's tree, the recorded one first."""
    found = [relative]
    split = _model_part(relative)
    if split:
        model, name = split
        names = VISUAL_BUILDERS if name in VISUAL_BUILDERS else (name,)
        for script in names:
            found.append(f"examples/{model}/{script}")
            found += [f"examples/models/{group}/{model}/{script}" for group in MODEL_GROUPS]
    return list(dict.fromkeys(found))


@dataclass
class ScriptFinder:
    """Resolves example scripts against `root`; collects problems (missing in a checkout) and one note."""

    root: Path
    version: str
    layout: str

    def __post_init__(self):
        self.root = Path(self.root).expanduser().resolve()
        self.problems: list[str] = []

    @property
    def has_checkout(self) -> bool:
        return (self.root / "examples").is_dir()

    def note(self) -> str | None:
        if self.has_checkout:
            return None
        return NOTE_NO_CHECKOUT.format(root=self.root, version=self.version, layout=self.layout)

    def find(self, relative: str) -> str:
        """Absolute path of the script; in a checkout, the candidate that exists there."""
        if not self.has_checkout:
            return str(self.root / relative)
        tried = candidates(relative)
        for option in tried:
            if (self.root / option).is_file():
                return str(self.root / option)
        self.problems.append(MSG_NOT_IN_CHECKOUT.format(script=relative, root=self.root, tried=", ".join(tried),
                                                        version=self.version))
        return str(self.root / relative)
