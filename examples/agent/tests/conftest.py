"""The toolkit's plugin is loaded by ``addopts`` in pyproject.toml; this is where a project
without one would put ``pytest_plugins = ["contextq_fixtures"]``."""
