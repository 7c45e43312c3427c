"""Scoring configurations and the scores stored under them."""
