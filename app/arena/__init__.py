"""The Arena: blind A/B battles between the base model and the adapters, the votes kept in a database
(SQLAlchemy: SQLite in the workspace by default), the Bradley-Terry leaderboard with bootstrap intervals, prompt
sets walked in order, exports in FastChat's arena-log fields and as CSV, `python -m app arena`.

records.py (typed battles, votes, filters, standings), store.py (the database), pairing.py (which pair battles
next), ratings.py (the leaderboard), export.py, prompt_sets.py (JSONL and a zip of pictures), duel.py (two answers
streamed through the chat's request path), service.py (live battles: the names stay here, keyed by battle id),
cli.py.

May import: app.chat and below, setup, sqlalchemy, numpy. No Gradio, no FastAPI.
"""
