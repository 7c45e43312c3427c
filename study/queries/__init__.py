"""Read-side queries: the review queue, the response mode's order, their filters and the
progress summaries.
"""
