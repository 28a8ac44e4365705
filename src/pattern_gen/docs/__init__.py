"""The browsable catalogue: Markdown pages for every card and instance, built with mkdocs-material.

``render_pages`` is pure (catalogue + plans + instance folders -> ``{path: text}``) and
deterministic; the CLI writes them to ``generated/docs/`` with ``output.writer.sync_folder``
(only changed files, stale pages removed); ``build_site`` runs mkdocs in strict mode, so a broken link or a card change
that breaks a page fails the build.

Modules: ``markdown`` (tables, links), ``card_pages``, ``instance_pages``, ``reference_pages``
(index, names, constraints, errors, guide), ``describe`` (card tables and pseudo-code, shared
with ``show``), ``svg`` (flow and timeline pictures) and ``site`` (assembling, building).
"""

from .card_pages import card_page
from .instance_pages import instance_estimate, instance_page, instances_index
from .reference_pages import (
    constraints_page,
    errors_page,
    guide_page,
    index_page,
    names_page,
)
from .site import build_site, mkdocs_config, render_pages

__all__ = ["render_pages", "build_site", "mkdocs_config", "instance_estimate"]
