"""The adapter audit as the pages show it: table cells, the lines after adding an adapter."""

from __future__ import annotations

from app.adapters.audit import AdapterAudit

APPLIED = "applied: {names} ({percent}% of the weights)"
DROPPED = "dropped: {names} ({percent}% of the weights): {reason}"
NOTHING = "nothing"


def applied_cell(audit: AdapterAudit | None) -> str:
    if audit is None:
        return "-"
    return f"{', '.join(audit.applied.names) or NOTHING} ({audit.applied_percent}%)"


def dropped_cell(audit: AdapterAudit | None) -> str:
    if audit is None or not audit.dropped:
        return "-"
    return "; ".join(f"{', '.join(d.names)} ({audit.percent(d.params)}%)" for d in audit.dropped)


def notes_cell(audit: AdapterAudit | None) -> str:
    if audit is None:
        return "-"
    return " ".join((*audit.refusals, *audit.flags)) or "-"


def audit_lines(audit: AdapterAudit) -> list[str]:
    """'applied: q_proj, k_proj (100% of the weights)', one 'dropped: ...' line per reason, then the notes."""
    lines = [APPLIED.format(names=", ".join(audit.applied.names) or NOTHING, percent=audit.applied_percent)]
    lines += [DROPPED.format(names=", ".join(d.names), percent=audit.percent(d.params), reason=d.reason)
              for d in audit.dropped]
    return lines + list(audit.flags)

