"""What is written to the event log (:mod:`study.file.events`): coders' decisions, notes,
memos and certified delegations.
"""
