"""The browsable catalogue: Markdown pages for every card and instance, built with mkdocs-material.

``render_pages`` is pure (catalogue + plans + instance folders -> ``{path: text}``) and
deterministic; the CLI writes them to ``generated/docs/`` with ``output.writer.sync_folder``
(only changed files, stale pages removed); ``build_site`` runs mkdocs in strict mode, so a broken link or a card change
that breaks a page fails the build.

Modules: ``markdown`` (tables, links), ``card_pages``, ``instance_pages``, ``reference_pages``
(index, names, constraints, errors, guide), ``describe`` (card tables and pseudo-code, shared
with ``show``), ``svg`` (flow and timeline pictures) and ``site`` (assembling, building).
"""

from __future__ import annotations

import importlib
from typing import Any

#: loaded on first use (PEP 562): ``show`` needs only ``describe``, not the site machinery
_WHERE = {
    "card_page": "card_pages",
    "instance_page": "instance_pages", "instances_index": "instance_pages",
    "constraints_page": "reference_pages", "errors_page": "reference_pages", "guide_page": "reference_pages",
    "index_page": "reference_pages", "names_page": "reference_pages",
    "build_site": "site", "mkdocs_config": "site", "render_pages": "site",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)


__all__ = ["render_pages", "build_site", "mkdocs_config"]
