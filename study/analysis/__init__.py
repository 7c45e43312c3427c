"""Work over a study: the validity screen, delegation planning, comparison of
configurations, reconciliation.
"""
