"""Codebook versions and waves of responses."""
