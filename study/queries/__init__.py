"""Read-side queries: the review queue, the response mode's order, their filters and the
progress summaries.

Other rooms reach them through the handle (``Study.queries``), so the wing has no door of
its own. ``pairs``, ``page_rows`` and ``score_curves`` are also read by other wings of
``study``, and ``records`` and ``learning`` are the work floor's reads; ``_filters``,
``_listings``, ``_responses`` and ``_summaries`` are the wing's own.
"""
