"""The project's tests, one folder per package they test through (``support``: their helpers)."""
