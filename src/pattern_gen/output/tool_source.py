"""Where a team's CI installs pattern-gen from: the requirement ``init`` pins.

Never a guessed index name (``pattern-gen`` on PyPI is somebody else's project). In order: the
``--tool-source`` the user gives; the VCS URL and commit this copy was installed from (PEP 610's
``direct_url.json``); this distribution's own name and version when it came from an index. A copy
installed from a local folder gives CI nothing it can reach, so the file is written with the
choices commented out and ``init`` says what to fill in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution

from pathlib import Path

from .. import DISTRIBUTION, __version__
from ..vocab.errors import PatternGenError, Problem

__all__ = ["ToolSource", "resolve_tool_source", "requirements_text", "pinned_requirement"]


@dataclass(frozen=True)
class ToolSource:
    spec: str | None  #: a pip requirement line, or None when nothing reachable is known
    origin: str  #: where the spec came from, for the message


def _installed_from() -> ToolSource:
    try:
        dist = distribution(DISTRIBUTION)
    except PackageNotFoundError:
        return ToolSource(None, "running from a source tree that is not installed")
    raw = dist.read_text("direct_url.json")
    if raw is None:
        return ToolSource(f"{DISTRIBUTION}=={__version__}", f"installed from a package index as {DISTRIBUTION} {__version__}")
    try:
        info = json.loads(raw)
    except ValueError:
        return ToolSource(None, "its install record (direct_url.json) is unreadable")
    url = str(info.get("url", ""))
    vcs = info.get("vcs_info") if isinstance(info.get("vcs_info"), dict) else None
    if vcs and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return ToolSource(f"{DISTRIBUTION} @ git+{url}@{vcs['commit_id']}", "the git commit this copy was installed from")
    if url.startswith("file:"):
        return ToolSource(None, f"installed from the local folder {url[len('file://'):]}, which CI cannot reach")
    return ToolSource(f"{DISTRIBUTION} @ {url}", "the URL this copy was installed from")


def resolve_tool_source(explicit: str | None) -> ToolSource:
    """The requirement to pin: ``explicit`` (checked to be one line), else what this copy knows."""
    if explicit is None:
        return _installed_from()
    spec = explicit.strip()
    if not spec or "\n" in spec or "\r" in spec or spec.startswith("#"):
        raise PatternGenError(
            Problem("bad-path", "--tool-source must be one pip requirement, e.g. git+https://host/team/pattern-gen@v0.1.0 or ./tools/pattern-gen")
        )
    return ToolSource(spec, "--tool-source")


def requirements_text(source: ToolSource) -> str:
    head = (
        "# Where CI (and teammates) install pattern-gen from; pin a tag or a commit.\n"
        f"# The command is `pattern-gen`; the distribution is {DISTRIBUTION}. Never `pip install pattern-gen`:\n"
        "# that index name belongs to an unrelated project.\n"
    )
    if source.spec:
        return head + f"# chosen by `pattern-gen init`: {source.origin}\n{source.spec}\n"
    return head + (
        f"# `pattern-gen init` could not tell ({source.origin}); uncomment one line:\n"
        f"# {DISTRIBUTION} @ git+https://<your-git-host>/<group>/pattern-gen.git@<tag>\n"
        "# -e ./tools/pattern-gen        (a checkout or submodule inside this repository)\n"
    )


def pinned_requirement(path: Path) -> str | None:
    """The first requirement line of a team's requirements file (None: only comments, or no file)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next((line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")), None)
