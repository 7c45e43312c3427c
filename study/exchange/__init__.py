"""A study's data out and in: exports, their tables and writers, codes imported from files."""
