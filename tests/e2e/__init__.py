"""Tests across packages or out of process: the docs, dev.py, foreign clients, lean installs."""
