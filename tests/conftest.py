"""Shared pytest configuration: puts the function handlers' folders on sys.path lazily."""
