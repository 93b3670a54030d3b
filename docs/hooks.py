"""MkDocs hooks (``hooks:`` in mkdocs.yml): pages the site fills with a file of the
repository.

``docs/changelog.md`` says in words where the changelog is, so it reads on the repository
host; an include (``--8<--``) would show there as a bare marker. The site shows the file
itself on that page instead.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
#: A page of docs/ -> the file of the repository the site shows in its place.
MIRRORED = {"changelog.md": "CHANGELOG.md"}


def on_page_markdown(markdown: str, *, page: Page, **_: object) -> str:
    """MkDocs passes ``config`` and ``files`` too, by name; this needs neither."""
    source = MIRRORED.get(page.file.src_uri)
    return markdown if source is None else (ROOT / source).read_text("utf-8")
