"""The fake's version, apart from the package face so any layer may name it."""

__version__ = "0.1.0"
