"""Helpers the tests import by name; no tests here."""
