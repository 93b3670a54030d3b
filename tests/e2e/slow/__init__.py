"""Slow tests (subprocesses, a browser, real databases, long fuzzing): ``--quick`` leaves
this folder out."""
