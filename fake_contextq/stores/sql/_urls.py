"""Database URLs: which ones ``SqlStore`` takes, and how they are printed without their
secrets."""

from __future__ import annotations

import sqlalchemy as sa

from adapter.errors import redact


def database_url(url: str | sa.URL) -> sa.URL:
    """The SQLAlchemy URL for ``url``; a bare ``postgresql://`` means psycopg 3, the driver
    the ``postgres`` extra installs. Anything but SQLite or PostgreSQL is refused."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError, TypeError):
        raise ValueError(
            "not a database URL; expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "postgres":
        backend = "postgresql"
    if backend not in ("sqlite", "postgresql"):
        raise ValueError(f"SqlStore speaks sqlite and postgresql, not {backend!r}")
    if backend == "postgresql" and "+" not in parsed.drivername:
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


#: Query parameters of a database URL that hold a secret (libpq's ``password`` and
#: ``sslpassword``, and any other name with "password" in it) ...
_SECRET_PARAM = "password"


def _secret_param(name: str) -> bool:
    """... or any name ``adapter.errors.redact`` masks in a URL (``token``, ``api_key``,
    ``*_secret``...): one list of credential names for every URL the project prints."""
    probe = f"?{name}=v"
    return _SECRET_PARAM in name.lower() or redact(probe) != probe


def url_secrets(url: str | sa.URL) -> list[str]:
    """Every password ``url`` holds, as ``user:pw@`` or as a credential-named query
    parameter (``?password=``, ``&token=``), for scrubbing them from text that may quote it."""
    try:
        parsed = sa.make_url(url)
    except Exception:  # unparsable: nothing to find reliably; the caller shows no URL
        return []
    found = [parsed.password] if parsed.password else []
    for name, value in parsed.query.items():
        if _secret_param(name):
            found += [value] if isinstance(value, str) else list(value)
    return [str(secret) for secret in found if secret]


def redacted_url(url: str | sa.URL) -> str:
    """``url`` as it may be printed: every password replaced by ``***``, whether given as
    ``user:pw@`` or as a query parameter."""
    parsed = sa.make_url(url)
    hidden = {name: "***" if _secret_param(name) else value for name, value in parsed.query.items()}
    if hidden != dict(parsed.query):
        parsed = parsed.set(query=hidden)
    return parsed.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")
