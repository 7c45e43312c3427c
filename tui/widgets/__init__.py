"""Widgets of the review app."""
