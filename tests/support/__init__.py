"""Builders the tests share (tiny datasets, checkpoints, benchmark folders)."""
