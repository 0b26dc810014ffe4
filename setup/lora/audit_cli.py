"""`python -m setup lora audit --adapter DIR [--engine DIR]`: what an engine (or any server, without --engine)
will apply of an adapter, as a small table; exit 0 when it is applied (whole or in part), 1 when it is refused,
2 with one sentence when the folders cannot be read."""

from __future__ import annotations

import argparse
from pathlib import Path

from setup.lora.adapter_facts import read_adapter
from setup.lora.audit import AdapterAudit, LoraTarget, audit, engine_target
from setup.lora.messages import MSG_AUDIT_ANY_SERVER


def add_audit_command(lora_sub) -> None:
    """The `audit` subcommand of `python -m setup lora`."""
    command = lora_sub.add_parser("audit", help="What an engine will apply of an adapter: applied and dropped "
                                                "modules with their share of the weights, refusals and flags.")
    command.add_argument("--adapter", type=Path, required=True,
                         help="Adapter folder (PEFT, or a converted model.lora_{weights,config}.npy pair).")
    command.add_argument("--engine", type=Path, default=None,
                         help="Engine folder whose config.json says what it applies (lora_target_modules, "
                              "max_lora_rank, the model's shapes); without it, any server's language model.")


def audit_lines(result: AdapterAudit) -> list[str]:
    """The audit as the terminal shows it."""
    applied = result.applied
    lines = [f"adapter base: {result.base_model} · served: {result.served_model} ({result.server}) · "
             f"rank {result.rank} · {result.dtype}",
             f"applied: {', '.join(applied.names) or 'nothing'} ({result.applied_percent}% of the weights)"]
    lines += [f"dropped: {', '.join(d.names)} ({result.percent(d.params)}% of the weights): {d.reason}"
              for d in result.dropped]
    lines += [f"note: {flag}" for flag in result.flags]
    lines += [f"refused: {reason}" for reason in result.refusals]
    return lines


def cmd_audit(args: argparse.Namespace) -> int:
    target = engine_target(args.engine) if args.engine else LoraTarget(server=MSG_AUDIT_ANY_SERVER)
    result = audit(read_adapter(args.adapter, target.shapes), target)
    print("\n".join(audit_lines(result)))
    return 1 if result.refused else 0
