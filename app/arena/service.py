"""Live battles: the two contestants of each battle stay here, keyed by its id, and reach a caller only with the
vote's answer. Every battle is written to the store when it starts, each turn when both answers have ended, the
vote once."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.arena import export as exports
from app.arena.duel import DuelRun
from app.arena.messages import (
    MSG_ARENA_CONTESTANTS,
    MSG_ARENA_FINISHED,
    MSG_ARENA_STILL_ANSWERING,
    MSG_ARENA_UNKNOWN_BATTLE,
    MSG_ARENA_UNKNOWN_CONTESTANT,
    MSG_SET_UNKNOWN,
)
from app.arena.pairing import next_pair
from app.arena.prompt_sets import PromptSet, check_name, read_prompt_set
from app.arena.ratings import leaderboard
from app.arena.records import BattleRecord, Filters, Leaderboard, TurnRecord, check_vote
from app.arena.store import ArenaStore, default_url
from app.chat.adapter_names import adapter_named
from app.chat.messages import BASE_MODEL_WORDS
from app.chat.turns import add_user_message, check_new_turn
from app.context import AppContext
from app.core.conversation import Conversation, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams

LOCAL_VOTER = "local"  # the voter's name when the app has no logins


@dataclass
class LiveBattle:
    """A battle being fought: who sits on each side (never shown before the vote), each side's conversation."""

    id: str
    names: tuple[str, str]
    params: SamplingParams
    conversations: list[Conversation]
    ctx: AppContext
    turns: int = 0
    run: DuelRun | None = None
    asked: tuple[str, tuple[str, ...]] = ("", ())  # the prompt being answered and its attachments' hashes
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def adapters(self) -> list[str | None]:
        return [adapter_named(name) for name in self.names]


def file_hash(source: str | bytes) -> str:
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SetStep:
    """Where a voter stands in a prompt set: the next prompt's number (None when every one is voted), the count,
    how many the voter has voted on."""

    name: str
    number: int | None
    count: int
    text: str = ""
    pictures: tuple[bytes, ...] = ()
    voted: int = 0


class Arena:
    """The battles of one app: a store opened on first use, the live battles by id."""

    def __init__(self, url: str | None, workspace_root: Path):
        self.url = url or default_url(workspace_root)
        self._store: ArenaStore | None = None
        self._lock = threading.Lock()
        self._live: dict[str, LiveBattle] = {}

    @property
    def store(self) -> ArenaStore:
        """The database, opened (and its tables made) on first use; ArenaDbError in a sentence when it cannot be."""
        with self._lock:
            if self._store is None:
                self._store = ArenaStore(self.url)
            return self._store

    def close(self) -> None:
        with self._lock:
            for battle in self._live.values():
                if battle.run is not None:
                    battle.run.cancel()
            if self._store is not None:
                self._store.close()

    @staticmethod
    def contestants(ctx: AppContext) -> list[str]:
        """Who can battle, named as the chat's adapter dropdown names them: the base model, then every adapter."""
        return [BASE_MODEL_WORDS, *ctx.deployment.adapter_names()]

    def chosen(self, ctx: AppContext, raw: object) -> list[str]:
        """The caller's contestants (empty or None: all), checked; InvalidRequest naming an unknown one."""
        choices = self.contestants(ctx)
        if raw is None or raw == [] or raw == "":
            return choices
        if not isinstance(raw, list | tuple) or not all(isinstance(n, str) for n in raw):
            raise InvalidRequest(MSG_ARENA_CONTESTANTS.format(value=raw))
        names = list(dict.fromkeys(n.strip() or BASE_MODEL_WORDS for n in raw))
        for name in names:
            if name not in choices:
                raise InvalidRequest(MSG_ARENA_UNKNOWN_CONTESTANT.format(name=name, choices=", ".join(choices)))
        return names

    def start(self, ctx: AppContext, prompt: str, files: list[str | bytes] | None, contestants: object,
              params: SamplingParams, voter: str, prompt_set: str | None = None, set_index: int | None = None) -> str:
        """Open a battle between two of `contestants` (the pair with the fewest battles) and start both answers;
        its id. Nothing is written when the prompt, the files or the contestants are refused."""
        names = self.chosen(ctx, contestants)
        media = check_new_turn(ctx, prompt, files)
        asked = add_user_message(Conversation(), prompt, media)
        pair = next_pair(names, self.store.pair_counts())
        battle = LiveBattle(secrets.token_hex(8), pair, params, [asked, asked], ctx)
        self.store.add_battle(BattleRecord(battle.id, pair[0], pair[1], time.time(), voter, asdict(params),
                                           prompt_set=prompt_set, set_index=set_index))
        self._open(battle, prompt, files)
        with self._lock:
            self._live[battle.id] = battle
        return battle.id

    def ask(self, battle_id: str, prompt: str, files: list[str | bytes] | None = None) -> None:
        """A follow-up turn: the prompt (and files) to both sides, each with its own earlier answers."""
        battle = self._battle(battle_id)
        with battle.lock:
            if battle.run is not None and not battle.run.done():
                raise InvalidRequest(MSG_ARENA_STILL_ANSWERING)
            media = check_new_turn(battle.ctx, prompt, files)
            battle.conversations = [add_user_message(c, prompt, media) for c in battle.conversations]
        self._open(battle, prompt, files)

    def _open(self, battle: LiveBattle, prompt: str, files: list[str | bytes] | None) -> None:
        with battle.lock:
            battle.asked = (prompt, tuple(file_hash(f) for f in files or ()))
            battle.run = DuelRun(battle.ctx, battle.conversations, battle.adapters, battle.params)

    def answers(self, battle_id: str) -> Iterator[list[str]]:
        """Both answers of the battle's open turn as they grow; once both have ended the turn is kept (also when the
        reader leaves early: then both are stopped first)."""
        battle = self._battle(battle_id)
        run = battle.run
        if run is None:
            return
        try:
            yield from run.updates()
        finally:
            run.cancel()
            self._keep_turn(battle, run)

    def _keep_turn(self, battle: LiveBattle, run: DuelRun) -> None:
        while not run.done():
            time.sleep(0.05)
        with battle.lock:
            if battle.run is not run:
                return
            texts = run.texts()
            battle.turns += 1
            battle.conversations = [c.with_turn(Turn.reply(ReplyVersion(text=t, adapter=a, sampling=battle.params)))
                                    for c, t, a in zip(battle.conversations, texts, battle.adapters, strict=True)]
            prompt, hashes = battle.asked
            battle.run = None
        self.store.add_turn(battle.id, TurnRecord(battle.turns, prompt, texts[0], texts[1], hashes, time.time()))

    def stop(self, battle_id: str) -> None:
        battle = self._live.get(battle_id)
        if battle is not None and battle.run is not None:
            battle.run.cancel()

    def vote(self, battle_id: str, vote: object, voter: str) -> BattleRecord:
        """Record the vote (A, B, tie, both_bad) once; the battle as kept, with both names."""
        vote = check_vote(vote)
        battle = self._live.get(battle_id)
        if battle is not None:
            with battle.lock:
                if battle.run is not None:
                    raise InvalidRequest(MSG_ARENA_STILL_ANSWERING)
        record = self.store.vote(battle_id, vote, voter)
        with self._lock:
            self._live.pop(battle_id, None)
        return record

    def _battle(self, battle_id: str) -> LiveBattle:
        with self._lock:
            battle = self._live.get(str(battle_id))
        if battle is None:
            known = self.store.battles(ids=[str(battle_id)])
            message = MSG_ARENA_FINISHED if known else MSG_ARENA_UNKNOWN_BATTLE
            raise InvalidRequest(message.format(battle=battle_id))
        return battle

    def leaderboard(self, filters: object = None) -> Leaderboard:
        chosen = filters if isinstance(filters, Filters) else Filters.of(filters)
        return leaderboard(self.store.outcomes(chosen), chosen)

    def export(self, fmt: object) -> str:
        return exports.export(self.store.battles(voted_only=True), exports.check_format(fmt))

    def add_prompt_set(self, name: str, jsonl: Path, zip_path: Path | None = None) -> PromptSet:
        parsed = read_prompt_set(name, jsonl, zip_path)
        self.store.add_prompt_set(parsed.name, [(p.text, list(p.pictures)) for p in parsed.prompts], parsed.pictures)
        return parsed

    def set_step(self, name: object, voter: str) -> SetStep:
        """The voter's next unvoted prompt of the set (in order), with its pictures; where the walk resumes."""
        name = check_name(name)
        prompts = self.store.set_prompts(name)
        if prompts is None:
            raise InvalidRequest(MSG_SET_UNKNOWN.format(name=name))
        voted = self.store.voted_set_prompts(name, voter)
        number = next((i for i in range(len(prompts)) if i not in voted), None)
        done = len(voted & set(range(len(prompts))))
        if number is None:
            return SetStep(name, None, len(prompts), voted=done)
        text, pictures = prompts[number]
        return SetStep(name, number, len(prompts), text,
                       tuple(self.store.set_picture(name, p) or b"" for p in pictures), done)
