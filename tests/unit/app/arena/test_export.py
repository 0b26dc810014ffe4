"""Exports: FastChat's arena-log fields, CSV rows, and a JSONL that reads back into the same leaderboard."""

from __future__ import annotations

import csv
import io
import json

import pytest

from app.arena.export import export, outcomes_from_jsonl
from app.arena.ratings import leaderboard
from app.arena.records import BOTH_BAD, TIE, A, B, BattleRecord, TurnRecord
from app.core.errors import InvalidRequest

FASTCHAT_FIELDS = {"model_a", "model_b", "winner", "judge", "turn", "tstamp", "conversation_a", "conversation_b"}


def battles() -> list[BattleRecord]:
    votes = [A, B, TIE, BOTH_BAD, A, A, None]
    return [BattleRecord(f"id{i}", "base model" if i % 2 else "pirate", "french" if i % 3 else "base model",
                         float(i), "local", {"seed": i}, vote=vote, judge="ann", voted=100.0 + i,
                         turns=(TurnRecord(1, f"Question {i}?", f"a{i}", f"b{i}"),
                                TurnRecord(2, "More?", "a more", "b more")))
            for i, vote in enumerate(votes)]


def test_jsonl_rows_carry_fastchats_fields_and_winner_words():
    rows = [json.loads(line) for line in export(battles(), "jsonl").splitlines()]
    assert len(rows) == 6  # the unvoted battle is left out
    assert all(FASTCHAT_FIELDS <= set(row) for row in rows)
    assert [row["winner"] for row in rows[:4]] == ["model_a", "model_b", "tie", "tie (bothbad)"]
    first = rows[0]
    assert first["turn"] == 2 and first["judge"] == "ann" and first["tstamp"] == 100.0
    assert first["conversation_a"] == [{"role": "user", "content": "Question 0?"}, {"role": "assistant", "content": "a0"},
                                       {"role": "user", "content": "More?"}, {"role": "assistant", "content": "a more"}]
    assert first["conversation_b"][1] == {"role": "assistant", "content": "b0"}


def test_the_export_reads_back_into_the_same_leaderboard():
    kept = battles()
    direct = leaderboard([b.outcome() for b in kept if b.vote], rounds=40)
    assert leaderboard(outcomes_from_jsonl(export(kept, "jsonl")), rounds=40) == direct


def test_csv_has_a_header_and_one_row_per_voted_battle():
    rows = list(csv.DictReader(io.StringIO(export(battles(), "csv"))))
    assert len(rows) == 6
    assert rows[3]["winner"] == "tie (bothbad)" and rows[0]["first_prompt"] == "Question 0?" and rows[0]["turn"] == "2"


def test_an_unknown_format_gets_a_sentence():
    with pytest.raises(InvalidRequest, match="format must be jsonl or csv; got 'xml'"):
        export(battles(), "xml")
