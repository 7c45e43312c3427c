"""The study file: its schema and migrations, its life (create, open, upgrade, check),
locking and WAL checkpoints.
"""
