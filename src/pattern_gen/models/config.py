"""A Hugging Face ``config.json``, read from a file (nothing is downloaded), with typed field access
whose every refusal names the field and its line: ``config.json:7: hidden_size: ...``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..vocab.errors import PatternGenError, Problem
from ..vocab.paths import NotAFile, read_text_file
from ..vocab.text import quote

__all__ = ["HFConfig", "read_hf_config"]

#: a config.json is a few kB; anything far larger is not one
MAX_CONFIG_BYTES = 1 << 20
_MISSING = object()


class HFConfig:
    """The parsed JSON object and where each top-level key sits in the file."""

    def __init__(self, path: Path, text: str, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self._text = text

    @property
    def model_type(self) -> str:
        return self.str("model_type")

    def line_of(self, key: str) -> int | None:
        match = re.search(r'"%s"\s*:' % re.escape(key), self._text)
        return self._text.count("\n", 0, match.start()) + 1 if match else None

    def problem(self, key: str, message: str) -> PatternGenError:
        top = key.split(".")[0]
        return PatternGenError(Problem("model-config", f"{key}: {message}", file=str(self.path), line=self.line_of(top)))

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.problem(key, "missing; a config.json of this family carries it (or give the dims with --dim)")
            return default
        return value

    def int(self, key: str, default: Any = _MISSING) -> int:
        value = self.raw(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.problem(key, f"{quote(value)} is not a positive whole number")
        return value

    def float(self, key: str, default: Any = _MISSING) -> float:
        value = self.raw(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value == value) or value in (float("inf"), float("-inf")):
            raise self.problem(key, f"{quote(value)} is not a finite number")
        return float(value)

    def bool(self, key: str, default: Any = _MISSING) -> bool:
        value = self.raw(key, default)
        if value is default:
            return value
        if not isinstance(value, bool):
            raise self.problem(key, f"{quote(value)} is not true or false")
        return value

    def str(self, key: str, default: Any = _MISSING) -> str:
        value = self.raw(key, default)
        if value is default:
            return value
        if not isinstance(value, str):
            raise self.problem(key, f"{quote(value)} is not a string")
        return value

    def dict(self, key: str) -> dict[str, Any] | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.problem(key, f"{quote(value)} is not an object")
        return value


def read_hf_config(path: Path) -> HFConfig:
    """Read and parse ``path``; a file that is not a JSON object is one ``model-config`` problem."""
    where = str(path)
    try:
        text = read_text_file(path, limit=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise PatternGenError(Problem("model-config", "no such file; --model takes the path of a Hugging Face config.json", file=where)) from None
    except NotAFile as exc:
        raise PatternGenError(Problem("model-config", f"{exc}; --model takes a Hugging Face config.json", file=where)) from None
    except UnicodeDecodeError:
        raise PatternGenError(Problem("model-config", "not UTF-8 text; --model takes a Hugging Face config.json", file=where)) from None
    try:
        data = json.loads(text, parse_constant=lambda name: float("nan"))
    except json.JSONDecodeError as exc:
        raise PatternGenError(Problem("model-config", f"not JSON: {exc.msg}", file=where, line=exc.lineno, col=exc.colno)) from None
    except RecursionError:
        raise PatternGenError(Problem("model-config", "nested too deeply to be a config.json", file=where)) from None
    if not isinstance(data, dict):
        raise PatternGenError(Problem("model-config", "the file holds a JSON " + type(data).__name__ + ", not an object of settings", file=where, line=1))
    return HFConfig(path, text, data)
