"""Shared fixtures for the resolver / code generation tests (issue 4: new, generate, run, explain).

- ``cat``: the shipped catalogue (loaded once).
- ``resolve_req(skeleton, atoms, **request fields)`` -> KernelPlan; ``problems(skeleton, atoms, ...)``
  -> the ``[(code, message)]`` of the PatternGenError the request must raise.
- ``cli(*args)`` (tests/conftest.py): the CLI in-process -> ``CliRun`` with exit code,
  stdout, stderr and the problem lines (``error: message [code]``).
- ``small``: small dims per skeleton (the manifest's), so kernels run in milliseconds.
- ``instance_factory(skeleton, atoms, **request fields)`` -> the folder of an instance written into a
  session temp folder (cached per request), ready for ``run_instance``.
- ``generated_dir``: the repository's committed ``generated/``.
- ``stub_estimate``: a stub in place of ptosim's cost estimate (fast runs).

Tests run with ``--import-mode=importlib``: helpers live here as fixtures, never imported.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable

import pytest

from pattern_gen.catalogue.catalogue import Catalogue, load_catalogue
from pattern_gen.output.instances import write_instance
from pattern_gen.plan.kernel_plan import KernelPlan, Request
from pattern_gen.plan.resolver import resolve
from pattern_gen.vocab.errors import PatternGenError
from pattern_gen.vocab.resources import repo_root

SMALL = {
    "SK-03": {"K": 256, "N": 128},
    "SK-04": {"H": 256, "Q": 128, "NH": 4, "D": 64, "DKV": 64, "R": 32},
    "SK-05": {"H": 256, "NQ": 4, "NKV": 2, "D": 64},
    "SK-01": {"NQ": 4, "NKV": 2, "D": 64, "NB": 16, "BS": 32, "MB": 4},
    "SK-06": {"H": 256, "I": 512},
    "SK-02": {"NQ": 4, "NKV": 2, "D": 64, "S": 256},
    "SK-07": {"H": 256, "I": 128, "E": 16, "G": 4, "KG": 2, "K": 4, "IS": 128},
}


@pytest.fixture(autouse=True)
def _no_user_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's PATTERN_GEN_CATALOGUE must not leak into the tests."""
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)


@pytest.fixture(scope="session")
def cat() -> Catalogue:
    return load_catalogue()


@pytest.fixture(scope="session")
def small() -> dict[str, dict[str, int]]:
    return {k: dict(v) for k, v in SMALL.items()}


def make_request(skeleton: str, atoms: str, **fields: Any) -> Request:
    params = dict(fields.pop("params", {}) or {})
    stage_params = {k: dict(v) for k, v in (fields.pop("stage_params", {}) or {}).items()}
    return Request(
        skeleton=skeleton,
        atoms=tuple(a for a in atoms.split(",")),
        params=params,
        stage_params=stage_params,
        dims=dict(fields.pop("dims", {}) or {}),
        platform=fields.pop("platform", None),
        options=dict(fields.pop("options", {}) or {}),
        name=fields.pop("name", None),
        target=fields.pop("target", None),
        tiles=dict(fields.pop("tiles", {}) or {}),
    )


@pytest.fixture(scope="session")
def request_of() -> Callable[..., Request]:
    """``request_of("SK-03", "AT-10", params={...}, dims={...})`` -> Request."""
    return make_request


@pytest.fixture(scope="session")
def resolve_req(cat: Catalogue) -> Callable[..., KernelPlan]:
    def _resolve(skeleton: str, atoms: str, **fields: Any) -> KernelPlan:
        return resolve(cat, make_request(skeleton, atoms, **fields))

    return _resolve


@pytest.fixture(scope="session")
def problems(cat: Catalogue) -> Callable[..., list[tuple[str, str]]]:
    """The problems a request must be refused with (fails the test if it resolves)."""

    def _problems(skeleton: str, atoms: str, **fields: Any) -> list[tuple[str, str]]:
        with pytest.raises(PatternGenError) as info:
            resolve(cat, make_request(skeleton, atoms, **fields))
        return [(p.code, p.message) for p in info.value.problems]

    return _problems




@pytest.fixture(scope="session")
def instances_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("instances")


@pytest.fixture(scope="session")
def instance_factory(cat: Catalogue, instances_root: Path) -> Callable[..., Path]:
    """Write an instance (once per request) into a session folder and return its folder."""
    cache: dict[str, Path] = {}

    def _make(skeleton: str, atoms: str, **fields: Any) -> Path:
        req = make_request(skeleton, atoms, **fields)
        key = req.command()
        if key not in cache:
            _, folder, _ = write_instance(cat, req, instances_root)
            cache[key] = folder
        return cache[key]

    return _make


@pytest.fixture(scope="session")
def generated_dir() -> Path:
    root = repo_root()
    if root is None or not (root / "generated").is_dir():
        pytest.skip("needs the source checkout's generated/ folder")
    return root / "generated"


@pytest.fixture(scope="session")
def instance_dirs(generated_dir: Path) -> list[Path]:
    """Every committed instance folder (those with an instance.json)."""
    return sorted(p.parent for p in generated_dir.glob("*/instance.json"))


STUB_ESTIMATE = {"e2e_us": 12.5, "tasks": 3, "utilization": {"cube": 0.5, "vector": 0.25}}


@pytest.fixture
def stub_estimate(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    """Replace ptosim's cost estimate by a stub (the cost model is ptosim's, tested there): runs stay
    fast, and the tests see that the runner passes the estimate through. None without a cost model."""
    try:
        cost = importlib.import_module("ptosim.cost")
    except ImportError:
        return None

    class _Estimate:
        rules_fired = ("vec-task-per-row-block", "cube-task-per-output-tile")

        def summary(self) -> dict[str, Any]:
            return {k: (dict(v) if isinstance(v, dict) else v) for k, v in STUB_ESTIMATE.items()}

    monkeypatch.setattr(cost, "estimate", lambda record, *a, **k: _Estimate())
    return STUB_ESTIMATE
