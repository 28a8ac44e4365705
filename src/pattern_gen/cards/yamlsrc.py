"""YAML with positions: ``yaml.safe_load`` semantics plus a line:col for every value.

Card errors must point at the line a user has to fix. PyYAML's composer keeps a mark on every
node; this module builds plain Python data from the node tree (with the safe constructor, so no
tags, no code) and records ``path -> (line, col)`` for each node, where ``path`` is the tuple of
mapping keys and list indices that pydantic also reports as an error location. Duplicate mapping
keys, which ``safe_load`` silently collapses, are reported.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

import yaml

from ..vocab.errors import PatternGenError, Problem

__all__ = ["Located", "load_located", "load_located_file", "read_source", "locate"]

Path = tuple[Any, ...]


@dataclass
class Located:
    """Parsed YAML data with the source position of every node."""

    data: Any
    file: str
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: Path) -> tuple[int | None, int | None]:
        """Line/col of the deepest node on ``path`` that exists (1-based)."""
        path = tuple(path)
        while path:
            if path in self.key_marks and path not in self.marks:
                return self.key_marks[path]
            if path in self.marks:
                return self.marks[path]
            path = path[:-1]
        return self.marks.get((), (None, None))

    def key_where(self, path: Path) -> tuple[int | None, int | None]:
        """Position of the mapping key at ``path`` (for unknown-key errors)."""
        return self.key_marks.get(tuple(path)) or self.where(path)


#: libyaml's parser when PyYAML was built with it (about 5x faster on the catalogue, same nodes and marks)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


#: cards, profiles, manifests and instance.json are kilobytes; a larger file is a mistake (or an attack)
MAX_FILE_BYTES = 1 << 20
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def read_source(path: FilePath, limit: int = MAX_FILE_BYTES) -> str:
    """A source file's text, checked before anything parses it: a regular file (not a FIFO, a
    device or a symlink loop), at most ``limit`` bytes, UTF-8, no control characters. Each
    refusal is one problem with the position."""
    file = str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PatternGenError(Problem("bad-path", f"cannot read the file: {exc.strerror or exc}", file)) from None
    if not stat.S_ISREG(st.st_mode):
        raise PatternGenError(Problem("bad-path", "not a regular file (a folder, FIFO, device or socket); give a file", file))
    if st.st_size > limit:
        raise PatternGenError(Problem("bad-path", f"the file is {st.st_size} bytes, over the limit of {limit} bytes", file))
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise PatternGenError(Problem("bad-path", f"cannot read the file: {exc.strerror or exc}", file)) from None
    if len(raw) > limit:  # grew while we looked
        raise PatternGenError(Problem("bad-path", f"the file is over the limit of {limit} bytes", file))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise PatternGenError(
            Problem("yaml-syntax", f"byte 0x{raw[exc.start]:02x} is not UTF-8; save the file as UTF-8", file, line, col)
        ) from None
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        col = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise PatternGenError(Problem("yaml-syntax", f"control character U+{ord(bad.group()):04X} in the text; remove it", file, line, col))
    return text


def load_located_file(path: FilePath) -> Located:
    """``load_located`` of a file's text (see ``read_source``)."""
    return load_located(read_source(path), str(path))


def load_located(text: str, file: str) -> Located:
    """Parse ``text``; raise PatternGenError (yaml-syntax) with the position on bad YAML."""
    loader = _LOADER(text)
    located = Located(None, file)
    problems: list[Problem] = []
    try:
        node = loader.get_single_node()
        if node is not None:
            located.data = _build(loader, node, (), located, problems)
    except _TooLarge:
        raise PatternGenError(
            Problem("yaml-syntax", f"the file expands to more than {MAX_NODES} values (aliases of aliases?)", file)
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise PatternGenError(
            Problem(
                "yaml-syntax",
                f"invalid YAML: {what}; check the indentation and quoting on this line",
                file,
                mark.line + 1 if mark else None,
                mark.column + 1 if mark else None,
            )
        ) from None
    except yaml.YAMLError as exc:
        raise PatternGenError(Problem("yaml-syntax", f"invalid YAML: {exc}", file)) from None
    except RecursionError:  # PyYAML composes nested nodes recursively
        raise PatternGenError(
            Problem("yaml-syntax", f"invalid YAML: nested more than {MAX_NESTING} levels deep", file)
        ) from None
    finally:
        loader.dispose()
    if problems:
        raise PatternGenError(problems)
    return located


#: a card needs fewer than ten levels; deeper data is refused before anything recurses over it
MAX_NESTING = 64
#: a card has a few thousand values; aliases of aliases ("billion laughs") must not expand forever
MAX_NODES = 100_000


_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _TooLarge(Exception):
    pass


def _build(loader: yaml.SafeLoader, node: yaml.Node, path: Path, located: Located, problems: list[Problem]) -> Any:
    located.marks[path] = _pos(node)
    if len(located.marks) > MAX_NODES:
        raise _TooLarge
    if len(path) > MAX_NESTING and isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        if not any(p.message.startswith("nested more than") for p in problems):
            problems.append(Problem("yaml-syntax", f"nested more than {MAX_NESTING} levels deep", located.file, *_pos(node)))
        return None
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
        # safe_load refuses python/* tags and builds sets/omaps: neither belongs in a card
        problems.append(Problem("yaml-syntax", f"the YAML tag {node.tag!r} is not allowed in a card", located.file, *_pos(node)))
        return None
    if isinstance(node, yaml.MappingNode):
        own = sum(1 for key_node, _ in node.value if key_node.tag != _MERGE_TAG)
        loader.flatten_mapping(node)  # merged pairs (``<<: *anchor``) first, then the mapping's own
        merged_count = len(node.value) - own
        out: dict[Any, Any] = {}
        merged: set[Any] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            key = _scalar(loader, key_node, located, problems)
            if isinstance(key, (list, dict)):
                problems.append(Problem("yaml-syntax", "a mapping key must be a scalar", located.file, *_pos(key_node)))
                continue
            if index < merged_count:
                merged.add(key)  # a later merged mapping, or the mapping's own key, overrides it
            elif key in merged:
                merged.discard(key)
            elif key in out:
                line, col = _pos(key_node)
                problems.append(
                    Problem("yaml-syntax", f"duplicate key {key!r}; the later value would hide the earlier one", located.file, line, col)
                )
                continue
            located.key_marks[path + (key,)] = _pos(key_node)
            out[key] = _build(loader, value_node, path + (key,), located, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, child, path + (i,), located, problems) for i, child in enumerate(node.value)]
    return _scalar(loader, node, located, problems)


#: more digits than any dim, tile or count needs; Python refuses int() of 4300+ digits itself
MAX_NUMBER_CHARS = 64


def _scalar(loader: Any, node: Any, located: Located, problems: list[Problem]) -> Any:
    numeric = node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    if isinstance(node, yaml.ScalarNode) and numeric and len(node.value) > MAX_NUMBER_CHARS:
        problems.append(Problem("yaml-syntax", f"a number of {len(node.value)} characters; numbers in cards have at most {MAX_NUMBER_CHARS}", located.file, *_pos(node)))
        return 0
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, OverflowError) as exc:
        problems.append(Problem("yaml-syntax", f"cannot read this value: {exc}", located.file, *_pos(node)))
        return None


def locate(located: Located, path: Path) -> dict[str, Any]:
    """``file/line/col`` keyword arguments for a Problem at ``path``."""
    line, col = located.where(path)
    return {"file": located.file, "line": line, "col": col}
