"""The audit of the adapters folder against what a deployment applies (setup/lora/audit.py does the work), kept
per adapter content and target so the table, the dropdown and the APIs read it cheaply; and the intake's check
that refuses an adapter the deployment cannot apply before it appears in the folder."""

from __future__ import annotations

import threading
from pathlib import Path

from app.adapters.intake import AdapterError
from app.adapters.messages import MSG_AUDIT_REFUSED
from setup.lora.adapter_facts import read_adapter
from setup.lora.audit import AdapterAudit, LoraTarget, audit
from setup.lora.convert import LoraConvertError

__all__ = ["AdapterAudit", "AuditBook", "LoraTarget", "audit_folder", "refuse_unusable"]


def audit_folder(folder: Path, target: LoraTarget) -> AdapterAudit:
    """Audit an adapter folder; AdapterError with the reading problem when its files cannot be read."""
    try:
        return audit(read_adapter(Path(folder), target.shapes), target)
    except LoraConvertError as exc:
        raise AdapterError(str(exc)) from None


def refuse_unusable(folder: Path, target: LoraTarget | None, shown: str) -> AdapterAudit | None:
    """The intake's check: AdapterError naming `shown` when `target` would refuse the adapter; its audit otherwise."""
    if target is None:
        return None
    result = audit_folder(folder, target)
    if result.refused:
        raise AdapterError(MSG_AUDIT_REFUSED.format(where=shown, reasons=" ".join(result.refusals)))
    return result


class AuditBook:
    """Audits by (folder, its files' sizes and times, target): a changed adapter or another target is audited
    again, an unchanged one is not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._audits: dict[tuple, AdapterAudit] = {}

    def of(self, folder: Path, stamp: tuple, target: LoraTarget) -> AdapterAudit:
        key = (str(folder), stamp, repr(target))
        with self._lock:
            found = self._audits.get(key)
        if found is None:
            found = audit_folder(folder, target)
            with self._lock:
                self._audits = {k: v for k, v in self._audits.items() if k[0] != key[0] or k[2] != key[2]}
                self._audits[key] = found
        return found
