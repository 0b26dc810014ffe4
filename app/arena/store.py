"""The Arena's database through SQLAlchemy: battles (contestants, sampling, who started it, the vote, the judge,
times), their turns (prompts, both answers, hashes of the attachments, never the files), prompt sets (prompts and
their pictures). SQLite in the workspace by default; any SQLAlchemy URL (PostgreSQL for a team) with --arena-db.

A vote is one conditional UPDATE (only while the battle has none), so two people voting at once lose nothing and a
second vote on a battle is refused whatever the database."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    and_,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from app.arena.messages import MSG_ARENA_DB, MSG_ARENA_FINISHED, MSG_ARENA_UNKNOWN_BATTLE
from app.arena.records import WITH_PICTURES, BattleRecord, Filters, Outcome, TurnRecord
from app.core.errors import ChatError, InvalidRequest

DB_FILE = "arena.sqlite3"
SQLITE_WAIT_SECONDS = 30  # how long a writer waits for another's lock

METADATA = MetaData()
BATTLES = Table(
    "arena_battles", METADATA,
    Column("id", String(32), primary_key=True),
    Column("model_a", String(200), nullable=False), Column("model_b", String(200), nullable=False),
    Column("started", Float, nullable=False), Column("starter", String(200), nullable=False),
    Column("sampling", Text, nullable=False), Column("has_pictures", Boolean, nullable=False, default=False),
    Column("prompt_set", String(100), nullable=True, index=True), Column("set_index", Integer, nullable=True),
    Column("vote", String(10), nullable=True), Column("judge", String(200), nullable=True),
    Column("voted", Float, nullable=True),
)
TURNS = Table(
    "arena_turns", METADATA,
    Column("battle_id", String(32), ForeignKey("arena_battles.id"), primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("prompt", Text, nullable=False), Column("answer_a", Text, nullable=False),
    Column("answer_b", Text, nullable=False), Column("attachments", Text, nullable=False),
    Column("tstamp", Float, nullable=False),
)
SETS = Table(
    "arena_prompt_sets", METADATA,
    Column("name", String(100), primary_key=True), Column("created", Float, nullable=False),
)
SET_PROMPTS = Table(
    "arena_set_prompts", METADATA,
    Column("set_name", String(100), ForeignKey("arena_prompt_sets.name"), primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("prompt", Text, nullable=False), Column("pictures", Text, nullable=False),
)
SET_PICTURES = Table(
    "arena_set_pictures", METADATA,
    Column("set_name", String(100), ForeignKey("arena_prompt_sets.name"), primary_key=True),
    Column("name", String(255), primary_key=True), Column("data", LargeBinary, nullable=False),
)


class ArenaDbError(ChatError):
    """The database cannot be opened or used; the message says which and why."""


def default_url(workspace_root: Path) -> str:
    """SQLite in the first workspace folder."""
    return f"sqlite:///{Path(workspace_root) / DB_FILE}"


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(url)


def _engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    engine = create_engine(parsed, connect_args={"timeout": SQLITE_WAIT_SECONDS, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record) -> None:  # readers never wait for a writer; foreign keys checked
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
    return engine


class ArenaStore:
    """Battles, turns, votes and prompt sets in one database."""

    def __init__(self, url: str):
        """Open (and create the tables of) the database at `url`; ArenaDbError in a sentence when it cannot."""
        self.url = url
        try:
            self.engine = _engine(url)
            METADATA.create_all(self.engine)
        except (ArgumentError, SQLAlchemyError, OSError, ValueError, ImportError) as exc:  # ImportError: no driver
            detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise ArenaDbError(MSG_ARENA_DB.format(url=shown_url(url), detail=detail)) from None

    def close(self) -> None:
        self.engine.dispose()

    def add_battle(self, battle: BattleRecord) -> None:
        with self.engine.begin() as db:
            db.execute(BATTLES.insert().values(
                id=battle.id, model_a=battle.model_a, model_b=battle.model_b, started=battle.started,
                starter=battle.starter, sampling=json.dumps(battle.sampling, sort_keys=True),
                has_pictures=battle.has_pictures, prompt_set=battle.prompt_set, set_index=battle.set_index))

    def add_turn(self, battle_id: str, turn: TurnRecord) -> None:
        """Keep a finished turn (and mark the battle as one with pictures when the turn had attachments)."""
        with self.engine.begin() as db:
            db.execute(TURNS.insert().values(battle_id=battle_id, number=turn.number, prompt=turn.prompt,
                                             answer_a=turn.answer_a, answer_b=turn.answer_b,
                                             attachments=json.dumps(list(turn.attachments)), tstamp=turn.tstamp))
            if turn.attachments:
                db.execute(BATTLES.update().where(BATTLES.c.id == battle_id).values(has_pictures=True))

    def vote(self, battle_id: str, vote: str, judge: str, when: float | None = None) -> BattleRecord:
        """Record `vote` on a battle that has none; InvalidRequest for an unknown or already voted battle."""
        with self.engine.begin() as db:
            done = db.execute(BATTLES.update().where(and_(BATTLES.c.id == battle_id, BATTLES.c.vote.is_(None)))
                              .values(vote=vote, judge=judge, voted=time.time() if when is None else when))
            if done.rowcount != 1:
                known = db.execute(select(BATTLES.c.id).where(BATTLES.c.id == battle_id)).first()
                raise InvalidRequest((MSG_ARENA_FINISHED if known else MSG_ARENA_UNKNOWN_BATTLE)
                                     .format(battle=battle_id))
        return self.battle(battle_id)

    def battle(self, battle_id: str) -> BattleRecord:
        """A battle with its turns; InvalidRequest when there is none by that id."""
        found = self.battles(ids=[battle_id])
        if not found:
            raise InvalidRequest(MSG_ARENA_UNKNOWN_BATTLE.format(battle=battle_id))
        return found[0]

    def battles(self, filters: Filters | None = None, voted_only: bool = False,
                ids: Iterable[str] | None = None) -> list[BattleRecord]:
        """Battles (with turns) in the order they were voted, then started; `filters` as the leaderboard's."""
        filters = filters or Filters()
        query = select(BATTLES)
        if ids is not None:
            query = query.where(BATTLES.c.id.in_(list(ids)))
        if voted_only:
            query = query.where(BATTLES.c.vote.is_not(None))
        if filters.pictures:
            query = query.where(BATTLES.c.has_pictures.is_(filters.pictures == WITH_PICTURES))
        if filters.prompt_set:
            query = query.where(BATTLES.c.prompt_set == filters.prompt_set)
        if filters.voter:
            query = query.where(BATTLES.c.judge == filters.voter)
        query = query.order_by(BATTLES.c.voted, BATTLES.c.started, BATTLES.c.id)
        with self.engine.connect() as db:
            rows = db.execute(query).mappings().all()
            turns: dict[str, list[TurnRecord]] = {}
            chosen = [row["id"] for row in rows]
            for start in range(0, len(chosen), 500):
                for t in db.execute(select(TURNS).where(TURNS.c.battle_id.in_(chosen[start:start + 500]))
                                    .order_by(TURNS.c.number)).mappings():
                    turns.setdefault(t["battle_id"], []).append(TurnRecord(
                        t["number"], t["prompt"], t["answer_a"], t["answer_b"], tuple(json.loads(t["attachments"])),
                        t["tstamp"]))
        return [BattleRecord(row["id"], row["model_a"], row["model_b"], row["started"], row["starter"],
                             json.loads(row["sampling"]), bool(row["has_pictures"]), row["prompt_set"],
                             row["set_index"], row["vote"], row["judge"], row["voted"],
                             tuple(turns.get(row["id"], ()))) for row in rows]

    def outcomes(self, filters: Filters | None = None) -> list[Outcome]:
        """The voted battles as the ratings read them, in the order they were voted."""
        return [b.outcome() for b in self.battles(filters, voted_only=True)]

    def pair_counts(self) -> dict[frozenset[str], int]:
        """How many battles each pair of contestants has had (voted or not)."""
        query = select(BATTLES.c.model_a, BATTLES.c.model_b, func.count()).group_by(BATTLES.c.model_a,
                                                                                    BATTLES.c.model_b)
        out: dict[frozenset[str], int] = {}
        with self.engine.connect() as db:
            for a, b, count in db.execute(query):
                out[frozenset((a, b))] = out.get(frozenset((a, b)), 0) + count
        return out

    def choices(self) -> tuple[list[str], list[str]]:
        """The prompt sets and the voters the leaderboard can be filtered by."""
        with self.engine.connect() as db:
            sets = [row[0] for row in db.execute(select(SETS.c.name).order_by(SETS.c.name))]
            voters = [row[0] for row in db.execute(select(BATTLES.c.judge).where(BATTLES.c.judge.is_not(None))
                                                   .distinct().order_by(BATTLES.c.judge))]
        return sets, voters

    def add_prompt_set(self, name: str, prompts: list[tuple[str, list[str]]], pictures: dict[str, bytes]) -> None:
        """Keep (or replace) a prompt set: its prompts in order with the names of their pictures, and the pictures."""
        with self.engine.begin() as db:
            for table in (SET_PICTURES, SET_PROMPTS):
                db.execute(table.delete().where(table.c.set_name == name))
            db.execute(SETS.delete().where(SETS.c.name == name))
            db.execute(SETS.insert().values(name=name, created=time.time()))
            if prompts:
                db.execute(SET_PROMPTS.insert(), [dict(set_name=name, number=i, prompt=text,
                                                       pictures=json.dumps(names))
                                                  for i, (text, names) in enumerate(prompts)])
            if pictures:
                db.execute(SET_PICTURES.insert(), [dict(set_name=name, name=key, data=value)
                                                   for key, value in pictures.items()])

    def set_prompts(self, name: str) -> list[tuple[str, list[str]]] | None:
        """A set's prompts in order (text, picture names); None when there is no such set."""
        with self.engine.connect() as db:
            if db.execute(select(SETS.c.name).where(SETS.c.name == name)).first() is None:
                return None
            return [(row.prompt, json.loads(row.pictures)) for row in db.execute(
                select(SET_PROMPTS).where(SET_PROMPTS.c.set_name == name).order_by(SET_PROMPTS.c.number))]

    def set_picture(self, name: str, picture: str) -> bytes | None:
        with self.engine.connect() as db:
            row = db.execute(select(SET_PICTURES.c.data).where(and_(SET_PICTURES.c.set_name == name,
                                                                    SET_PICTURES.c.name == picture))).first()
        return None if row is None else bytes(row[0])

    def voted_set_prompts(self, name: str, voter: str) -> set[int]:
        """The numbers of the set's prompts `voter` has voted on (an evaluation session resumes after them)."""
        query = select(BATTLES.c.set_index).where(and_(BATTLES.c.prompt_set == name, BATTLES.c.judge == voter,
                                                       BATTLES.c.vote.is_not(None)))
        with self.engine.connect() as db:
            return {row[0] for row in db.execute(query) if row[0] is not None}
