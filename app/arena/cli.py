"""python -m app arena leaderboard|export|prompt-set --db URL: the Arena's leaderboard, its battles, and its prompt
sets from a terminal.

    python -m app arena leaderboard [--db URL] [--pictures text|pictures] [--prompt-set NAME] [--voter NAME] [--json]
    python -m app arena export [--db URL] [--format jsonl|csv] [--output FILE]
    python -m app arena prompt-set FILE.jsonl [--pictures FILE.zip] [--name NAME] [--db URL]

--db defaults to the SQLite file the app keeps in the current folder (the workspace's first folder)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.arena.export import FORMATS, JSONL
from app.arena.messages import MSG_CLI_NO_VOTES, MSG_CLI_SET_KEPT, MSG_CLI_UNREADABLE
from app.arena.records import TEXT_ONLY, WITH_PICTURES, Leaderboard
from app.arena.service import Arena
from app.arena.store import shown_url
from app.core.errors import ChatError
from setup.cli_types import OneLineErrorParser
from setup.workspace import default_roots


def board_dict(board: Leaderboard) -> dict:
    """The leaderboard as the Gradio API and --json give it."""
    return {"votes": board.votes,
            "contestants": [{"name": s.name, "rating": round(s.rating, 1), "low": round(s.low, 1),
                             "high": round(s.high, 1), "battles": s.battles, "wins": s.wins, "ties": s.ties,
                             "losses": s.losses, "both_bad": s.both_bad,
                             "win_rate": None if s.win_rate is None else round(s.win_rate, 4)}
                            for s in board.standings],
            "pairs": [{"model": p.first, "against": p.second, "battles": p.battles,
                       "win_rate": None if p.win_rate is None else round(p.win_rate, 4)} for p in board.pairs]}


def board_lines(board: Leaderboard) -> list[str]:
    """The leaderboard as a plain table."""
    width = max([len(s.name) for s in board.standings] + [10])
    lines = [f"{'contestant':<{width}}  score  95% interval  battles  wins  ties  losses  both bad  win rate"]
    for s in board.standings:
        rate = "-" if s.win_rate is None else f"{s.win_rate:.0%}"
        lines.append(f"{s.name:<{width}}  {s.rating:5.0f}  {s.low:5.0f}..{s.high:<5.0f}  {s.battles:7d}  "
                     f"{s.wins:4d}  {s.ties:4d}  {s.losses:6d}  {s.both_bad:8d}  {rate:>8}")
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="python -m app arena", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    board = sub.add_parser("leaderboard", help="Print the leaderboard.")
    board.add_argument("--pictures", choices=(TEXT_ONLY, WITH_PICTURES), help="Only battles without / with pictures.")
    board.add_argument("--prompt-set", help="Only battles of this prompt set.")
    board.add_argument("--voter", help="Only this voter's votes.")
    board.add_argument("--json", action="store_true", help="Print JSON (as the Gradio API's arena_leaderboard).")
    out = sub.add_parser("export", help="Print (or write) every voted battle.")
    out.add_argument("--format", choices=FORMATS, default=JSONL, help="jsonl (FastChat's arena-log fields) or csv.")
    out.add_argument("--output", type=Path, help="Write to this file instead of printing.")
    kept = sub.add_parser("prompt-set", help="Keep a prompt set (as the tab's upload and arena_prompt_set do).")
    kept.add_argument("jsonl", type=Path, help='One {"prompt": "...", "images": ["a.png"]} object per line.')
    kept.add_argument("--pictures", type=Path, help="A zip of the pictures the prompts name.")
    kept.add_argument("--name", help="The set's name (default: the JSONL file's name; a set kept again is replaced).")
    for each in (board, out, kept):
        each.add_argument("--db", help="The database's SQLAlchemy URL (default: sqlite in the current folder).")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    roots = default_roots()
    arena = Arena(args.db, roots[0] if roots else Path.cwd())
    try:
        if args.command == "prompt-set":
            parsed = arena.add_prompt_set(args.name or args.jsonl.stem, args.jsonl, args.pictures)
            print(MSG_CLI_SET_KEPT.format(name=parsed.name, prompts=len(parsed.prompts),
                                          pictures=len(parsed.pictures), url=shown_url(arena.url)))
            return 0
        if args.command == "export":
            text = arena.export(args.format)
            if args.output:
                args.output.write_text(text, encoding="utf-8")
            else:
                sys.stdout.write(text)
            return 0
        board = arena.leaderboard({"pictures": args.pictures, "prompt_set": args.prompt_set, "voter": args.voter})
        if args.json:
            print(json.dumps(board_dict(board), indent=1))
        else:
            print("\n".join(board_lines(board)) if board.votes else MSG_CLI_NO_VOTES.format(url=shown_url(arena.url)))
        return 0
    except ChatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file named on the command line that cannot be read
        print(f"error: {MSG_CLI_UNREADABLE.format(path=exc.filename, detail=exc.strerror or exc)}", file=sys.stderr)
        return 2
    finally:
        arena.close()
