"""The study file: its schema and migrations, its life (create, open, upgrade, check),
locking, WAL checkpoints and the event log's one writer (``events``).
"""
