"""Battles and votes out of the Arena: JSONL with the fields FastChat's arena logs use (so existing rating scripts
read it: model_a, model_b, winner as model_a / model_b / tie / tie (bothbad), judge, turn, tstamp, conversation_a,
conversation_b) plus this app's own (battle, prompt_set, has_pictures, attachments, sampling); and CSV, one row
per battle. `outcomes_from_jsonl` reads an export back into the votes the leaderboard counts."""

from __future__ import annotations

import csv
import io
import json

from app.arena.messages import MSG_ARENA_BAD_FORMAT
from app.arena.records import BOTH_BAD, TIE, A, B, BattleRecord, Outcome
from app.core.errors import InvalidRequest

JSONL, CSV = "jsonl", "csv"
FORMATS = (JSONL, CSV)
WINNERS = {A: "model_a", B: "model_b", TIE: "tie", BOTH_BAD: "tie (bothbad)"}
VOTES_OF = {winner: vote for vote, winner in WINNERS.items()}
CSV_FIELDS = ("battle", "model_a", "model_b", "winner", "judge", "turn", "tstamp", "prompt_set", "has_pictures",
              "first_prompt")
MIME = {JSONL: "application/jsonl", CSV: "text/csv"}


def check_format(value: object) -> str:
    if value not in FORMATS:
        raise InvalidRequest(MSG_ARENA_BAD_FORMAT.format(value=value))
    return str(value)


def conversation(battle: BattleRecord, side: str) -> list[dict[str, str]]:
    """One side's conversation in OpenAI's message shape, as FastChat's logs hold it."""
    out = []
    for turn in battle.turns:
        out += [{"role": "user", "content": turn.prompt},
                {"role": "assistant", "content": turn.answer_a if side == A else turn.answer_b}]
    return out


def fastchat_row(battle: BattleRecord) -> dict:
    """A voted battle as one FastChat arena-log record (plus this app's fields)."""
    return {"model_a": battle.model_a, "model_b": battle.model_b, "winner": WINNERS[battle.vote],
            "judge": battle.judge, "turn": len(battle.turns), "anony": True, "tstamp": battle.voted,
            "conversation_a": conversation(battle, A), "conversation_b": conversation(battle, B),
            "battle": battle.id, "prompt_set": battle.prompt_set, "has_pictures": battle.has_pictures,
            "attachments": [h for turn in battle.turns for h in turn.attachments], "sampling": battle.sampling}


def to_jsonl(battles: list[BattleRecord]) -> str:
    return "".join(json.dumps(fastchat_row(b), ensure_ascii=False) + "\n" for b in battles if b.vote)


def to_csv(battles: list[BattleRecord]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for b in battles:
        if b.vote:
            writer.writerow([b.id, b.model_a, b.model_b, WINNERS[b.vote], b.judge, len(b.turns), b.voted,
                             b.prompt_set or "", b.has_pictures, b.turns[0].prompt if b.turns else ""])
    return out.getvalue()


def export(battles: list[BattleRecord], fmt: str) -> str:
    """The voted battles in `fmt` (jsonl or csv)."""
    return to_jsonl(battles) if check_format(fmt) == JSONL else to_csv(battles)


def outcomes_from_jsonl(text: str) -> list[Outcome]:
    """The votes of an exported JSONL (or a FastChat arena log) in file order."""
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [Outcome(row["model_a"], row["model_b"], VOTES_OF[row["winner"]]) for row in rows]
