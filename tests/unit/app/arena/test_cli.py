"""python -m app arena leaderboard|export|prompt-set on a database filled here: the table, --json, filters, both
exports, a prompt set kept, and one line for a database or a file that cannot be opened."""

from __future__ import annotations

import json

from app.arena.cli import main
from app.arena.records import TIE, A, BattleRecord, TurnRecord
from app.arena.store import ArenaStore


def filled(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    store = ArenaStore(url)
    for i, (vote, judge) in enumerate([(A, "ann"), (A, "ann"), (TIE, "bob")]):
        store.add_battle(BattleRecord(f"b{i}", "pirate", "base model", float(i), judge, {"seed": i}))
        store.add_turn(f"b{i}", TurnRecord(1, "Hi?", "Arr!", "Hello.", (), float(i)))
        store.vote(f"b{i}", vote, judge)
    store.close()
    return url


def test_the_leaderboard_as_a_table_and_as_json_with_a_filter(tmp_path, capsys):
    url = filled(tmp_path)
    assert main(["leaderboard", "--db", url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("contestant") and table[1].startswith("pirate") and table[2].startswith("base model")
    assert main(["leaderboard", "--db", url, "--voter", "ann", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["votes"] == 2 and board["contestants"][0]["name"] == "pirate"
    assert board["contestants"][0]["wins"] == 2


def test_both_exports_and_an_empty_database(tmp_path, capsys):
    url = filled(tmp_path)
    assert main(["export", "--db", url]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["winner"] for row in rows] == ["model_a", "model_a", "tie"]
    out = tmp_path / "votes.csv"
    assert main(["export", "--db", url, "--format", "csv", "--output", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 4  # header and three battles
    assert main(["leaderboard", "--db", f"sqlite:///{tmp_path / 'empty.sqlite3'}"]) == 0
    assert "No votes yet" in capsys.readouterr().out


def test_a_database_that_cannot_be_opened_is_one_error_line(tmp_path, capsys):
    assert main(["leaderboard", "--db", f"sqlite:///{tmp_path / 'missing' / 'deeper' / 'a.sqlite3'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: The arena's database") and err.count("\n") == 1


def test_a_prompt_set_is_kept_from_the_command_line_and_a_bad_file_is_one_line(tmp_path, capsys):
    import zipfile

    from app.arena.service import Arena

    url = f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    prompts = tmp_path / "checks.jsonl"
    prompts.write_text('{"prompt": "What is this?", "images": ["cat.png"]}\n{"prompt": "Say hi."}\n')
    with zipfile.ZipFile(tmp_path / "pictures.zip", "w") as archive:
        archive.writestr("cat.png", b"not looked at here")
    assert main(["prompt-set", str(prompts), "--pictures", str(tmp_path / "pictures.zip"), "--db", url]) == 0
    assert "Kept prompt set 'checks': 2 prompts, 1 pictures" in capsys.readouterr().out
    arena = Arena(url, tmp_path)
    try:
        step = arena.set_step("checks", "local")
        assert (step.number, step.count, step.text, step.pictures) == (0, 2, "What is this?", (b"not looked at here",))
    finally:
        arena.close()
    assert main(["prompt-set", str(tmp_path / "missing.jsonl"), "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Cannot read ") and "missing.jsonl" in err and len(err.splitlines()) == 1
    prompts.write_text("not json\n")
    assert main(["prompt-set", str(prompts), "--name", "broken", "--db", url]) == 2
    assert "line 1" in capsys.readouterr().err
