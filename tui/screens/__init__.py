"""Screens of the review app: the main review screen and its dialogs."""
