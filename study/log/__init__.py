"""The event log and what is written to it: coders' decisions, notes, memos and certified
delegations.
"""
