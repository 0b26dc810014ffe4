"""How the Arena tab shows its numbers: the leaderboard table and the pairwise win-rate heatmap as HTML, each
battle side as chatbot messages (display formatting only; the numbers come from app.arena)."""

from __future__ import annotations

from html import escape

from app.arena.records import Leaderboard

EMPTY_BOARD = "<p id='arena-board-empty'>No votes yet.</p>"


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def board_html(board: Leaderboard) -> str:
    """The standings, best first: score with its 95% interval, battles, wins, ties, losses, both bad, win rate."""
    if not board.standings:
        return EMPTY_BOARD
    head = ("<tr><th>#</th><th>Contestant</th><th>Score</th><th>95% interval</th><th>Battles</th><th>Wins</th>"
            "<th>Ties</th><th>Losses</th><th>Both bad</th><th>Win rate</th></tr>")
    rows = "".join(
        f"<tr data-contestant='{escape(s.name, quote=True)}'><td>{rank}</td><td>{escape(s.name)}</td>"
        f"<td>{s.rating:.0f}</td><td>{s.low:.0f} – {s.high:.0f}</td><td class='battles'>{s.battles}</td>"
        f"<td class='wins'>{s.wins}</td><td class='ties'>{s.ties}</td><td class='losses'>{s.losses}</td>"
        f"<td class='both-bad'>{s.both_bad}</td><td>{percent(s.win_rate)}</td></tr>"
        for rank, s in enumerate(board.standings, start=1))
    note = (f"<p><small>{board.votes} vote(s). Bradley-Terry scores on an Elo-like scale (mean 1000); ties count "
            "half a win each; “both bad” votes are counted apart and move no score.</small></p>")
    return f"<table class='arena-board'>{head}{rows}</table>{note}"


def _cell_colour(rate: float) -> str:
    """Red (0%) through white (50%) to green (100%)."""
    if rate >= 0.5:
        fade = int(255 * (1 - (rate - 0.5) * 2))
        return f"rgb({fade},{200 + fade * 55 // 255},{fade})"
    fade = int(255 * rate * 2)
    return f"rgb({200 + fade * 55 // 255},{fade},{fade})"


def heatmap_html(board: Leaderboard) -> str:
    """Row contestant's win rate against the column contestant (wins + ties / 2), with the battles they had."""
    if not board.pairs:
        return ""
    names = [s.name for s in board.standings]
    cells = {(p.first, p.second): p for p in board.pairs}
    head = "<tr><th>win rate of ↓ against →</th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"
    rows = []
    for first in names:
        tds = []
        for second in names:
            cell = cells.get((first, second))
            if cell is None or cell.win_rate is None:
                tds.append("<td>–</td>")
            else:
                tds.append(f"<td style='background:{_cell_colour(cell.win_rate)};color:#000' "
                           f"title='{cell.battles} battle(s)'>{percent(cell.win_rate)}</td>")
        rows.append(f"<tr><th>{escape(first)}</th>{''.join(tds)}</tr>")
    return f"<table class='arena-heatmap'>{head}{''.join(rows)}</table>"


def side_messages(turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    """One side's conversation (prompt, answer) pairs as chatbot messages."""
    out: list[dict[str, str]] = []
    for prompt, answer in turns:
        out += [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    return out


def progress_html(label: str, done: int, count: int) -> str:
    """A prompt set's progress bar."""
    return (f"<div id='arena-progress-bar'><progress value='{done}' max='{count}'></progress> "
            f"<span>{escape(label)}</span></div>")
