"""Hardware profiles (``patterns/platforms/*.yaml``) and the capacity rules computed from them.

The profile files are the single source of the hardware numbers: ptosim's checks and cost model
read them here, and pattern-gen's resolver calls the same rule functions (``vec_footprint``,
``cube_capacity``) so that a tile the resolver accepts is a tile ptosim accepts.

The file's keys, types and bounds are checked by ``profile_schema`` (unknown keys included), which
reports every problem with its key path in one ``PlatformError``.

Search order for a profile name: ``$PTOSIM_PLATFORMS`` (a folder), the copy shipped inside an
installed wheel (``ptosim/_platforms``), then the source tree's ``patterns/platforms``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import yaml

from .dtypes import DataType
from .errors import PlatformError
from .profile_schema import MatmulPair, validate_profile

#: the platform a kernel runs on unless told otherwise
DEFAULT_PLATFORM = "a2a3"

__all__ = [
    "DEFAULT_PLATFORM",
    "Profile",
    "load_platform",
    "platform_dirs",
    "available_platforms",
    "OpKind",
    "vec_footprint",
    "cube_capacity",
    "ceil_align",
    "profile_from_mapping",
]

OpKind = Literal["unary", "binary", "reduce", "broadcast"]


@dataclass(frozen=True)
class Profile:
    """A parsed platform profile. ``raw`` keeps the whole YAML mapping for the cost model."""

    name: str
    title: str
    aic: int
    aiv: int
    clock_mhz: float
    buffers: Mapping[str, int]
    fractal: Mapping[str, tuple[int, int, int]]
    features: frozenset[str]
    cv_mix: bool
    dtypes: frozenset[DataType]
    vec_align_bytes: int
    vec_max_rank: int
    footprint_factor: Mapping[str, int]
    reduce_tile_max_bytes: int
    cube_align_bytes: int
    capacity_align: Mapping[str, int]
    matmul_pairs: tuple[tuple[DataType, DataType, frozenset[DataType]], ...]
    scaled_mm_pairs: tuple[tuple[DataType, DataType, frozenset[DataType]], ...]
    #: (a, b, bias dtypes a matmul of these operands takes through ``extend_params``)
    matmul_bias: tuple[tuple[DataType, DataType, frozenset[DataType]], ...]
    scaled_mm_k_align: int
    op_dtypes: Mapping[str, frozenset[DataType]]
    casts: Mapping[DataType, frozenset[DataType]]
    source: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ub(self) -> int:
        return self.buffers["UB"]

    def has_feature(self, feature: str) -> bool:
        return feature in self.features

    def supports_dtype(self, dtype: DataType) -> bool:
        return dtype in self.dtypes

    def can_cast(self, src: DataType, dst: DataType) -> bool:
        return src == dst or dst in self.casts.get(src, frozenset())

    def op_accepts(self, op: str, dtype: DataType) -> bool:
        allowed = self.op_dtypes.get(op)
        return allowed is None or dtype in allowed

    def matmul_outputs(self, a: DataType, b: DataType, *, scaled: bool = False) -> frozenset[DataType]:
        pairs = self.scaled_mm_pairs if scaled else self.matmul_pairs
        for pa, pb, outs in pairs:
            if pa == a and pb == b:
                return outs
        return frozenset()

    def matmul_bias_dtypes(self, a: DataType, b: DataType) -> frozenset[DataType]:
        return next((bias for pa, pb, bias in self.matmul_bias if pa == a and pb == b), frozenset())

    def cube_fractal(self, dtype: DataType) -> tuple[int, int, int]:
        return self.fractal.get(dtype.short, self.fractal["default"])


def _pairs(rows: Sequence[MatmulPair]) -> tuple[tuple[DataType, DataType, frozenset[DataType]], ...]:
    return tuple((r.a, r.b, frozenset(r.out)) for r in rows)


def profile_from_mapping(data: Mapping[str, Any], source: str = "") -> Profile:
    """Build a Profile from a parsed YAML mapping, checked against ``profile_schema.ProfileModel``
    (a PlatformError with ``path`` and ``problems`` naming every offending key)."""
    m = validate_profile(data, source)
    vec, cube = m.vec_rules, m.cube_rules
    return Profile(
        name=m.name,
        title=m.title if m.title is not None else m.name,
        aic=m.cores.aic,
        aiv=m.cores.aiv,
        clock_mhz=float(m.clock_mhz),
        buffers=m.buffers.model_dump(exclude_none=True),
        fractal=dict(m.fractal),
        features=frozenset(m.features),
        cv_mix=m.cv_mix,
        dtypes=frozenset(m.dtypes),
        vec_align_bytes=vec.last_axis_align_bytes,
        vec_max_rank=vec.max_rank,
        footprint_factor=vec.footprint_factor.model_dump(),
        reduce_tile_max_bytes=vec.reduce_tile_max_bytes,
        cube_align_bytes=cube.align_bytes,
        capacity_align=dict(cube.capacity_align),
        matmul_pairs=_pairs(cube.matmul_pairs),
        scaled_mm_pairs=_pairs(cube.scaled_mm_pairs),
        matmul_bias=tuple((r.a, r.b, frozenset(r.bias)) for r in cube.matmul_pairs),
        scaled_mm_k_align=cube.scaled_mm_k_align,
        op_dtypes={op: frozenset(ds) for op, ds in m.op_dtypes.items()},
        casts={src: frozenset(ds) for src, ds in m.casts.items()},
        source=source,
        raw=dict(data),
    )


def platform_dirs() -> list[Path]:
    """Folders searched for ``<name>.yaml``, in priority order."""
    dirs = []
    env = os.environ.get("PTOSIM_PLATFORMS")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    here = Path(__file__).resolve().parent
    dirs.append(here / "_platforms")
    dirs.append(here.parent.parent / "patterns" / "platforms")
    return [d for d in dirs if d.is_dir()]


def available_platforms() -> list[str]:
    names: set[str] = set()
    for d in platform_dirs():
        names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


#: a profile is a page of YAML; a device or a huge file named *.yaml is not read whole
MAX_PROFILE_BYTES = 1 << 20


@lru_cache(maxsize=32)
def _load_path(path: str) -> Profile:
    with open(path, "rb") as fh:
        raw = fh.read(MAX_PROFILE_BYTES + 1)
    if len(raw) > MAX_PROFILE_BYTES:
        raise PlatformError(f"platform profile {path} is larger than {MAX_PROFILE_BYTES} bytes; a profile is a page of YAML")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: a 5000-digit int
        raise PlatformError(f"platform profile {path} is not readable YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if not isinstance(data, Mapping):
        raise PlatformError(f"platform profile {path} is not a mapping")
    return profile_from_mapping(data, source=path)


def load_platform(name_or_path: str | os.PathLike[str] | Profile) -> Profile:
    """A profile by name (``a2a3``), by path to a YAML file, or passed through."""
    if isinstance(name_or_path, Profile):
        return name_or_path
    text = os.fspath(name_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        if not os.path.isfile(text):
            raise PlatformError(f"platform profile file {text} does not exist")
        return _load_path(os.path.abspath(text))
    for d in platform_dirs():
        candidate = d / f"{text}.yaml"
        if candidate.is_file():
            return _load_path(str(candidate))
    raise PlatformError(
        f"unknown platform {text!r}; available: {', '.join(available_platforms()) or 'none found'}"
    )


# --- the shared capacity rules ---------------------------------------------------------------


def ceil_align(value: int, align: int) -> int:
    return -(-value // align) * align


def vec_footprint(kind: OpKind, tile: Sequence[int], widest_dtype_bytes: int, profile: Profile) -> int:
    """UB bytes one vector op needs: tile bytes at the widest operand dtype times n(kind).

    The UB rule (catalogue C-TILE), with n taken from the profile (2 unary, 3 binary, 4 reduce/broadcast).
    """
    return math.prod(int(t) for t in tile) * widest_dtype_bytes * int(profile.footprint_factor[kind])


@dataclass(frozen=True)
class CubeUse:
    """Bytes each cube buffer needs for one matmul tile configuration, and their limits."""

    l0a: int
    l0b: int
    l0c: int
    l1: int
    limits: Mapping[str, int]

    def overflows(self) -> list[tuple[str, int, int]]:
        """``[(buffer, used, limit)]`` for every buffer that does not fit."""
        used = {"L0A": self.l0a, "L0B": self.l0b, "L0C": self.l0c, "L1": self.l1}
        return [(b, u, self.limits[b]) for b, u in used.items() if u > self.limits[b]]


def cube_capacity(
    m: Sequence[int],
    k: Sequence[int],
    n: Sequence[int],
    a: DataType,
    b: DataType,
    acc: DataType,
    profile: Profile,
) -> CubeUse:
    """L0A/L0B/L0C/L1 use of a cube tile ``m=[mL0,mL1]``, ``k=[kL0,kAL1(,kBL1)]``, ``n=[nL0,nL1]``.

    CA(v, a) pads every axis to the capacity alignment of the input dtype (16 for 16-bit/32-bit,
    32 for 8-bit); m is free in the API but padded here, as PyPTO's capacity formulas do.
    """
    ca_a = profile.capacity_align.get(a.short, profile.capacity_align["default"])
    ca_b = profile.capacity_align.get(b.short, profile.capacity_align["default"])
    k_al1 = k[1]
    k_bl1 = k[2] if len(k) > 2 else k[1]
    l0a = ceil_align(m[0], ca_a) * ceil_align(k[0], ca_a) * a.nbytes
    l0b = ceil_align(n[0], ca_b) * ceil_align(k[0], ca_b) * b.nbytes
    l0c = ceil_align(m[0], 16) * ceil_align(n[0], 16) * acc.nbytes
    l1 = ceil_align(m[1], ca_a) * ceil_align(k_al1, ca_a) * a.nbytes + ceil_align(n[1], ca_b) * ceil_align(
        k_bl1, ca_b
    ) * b.nbytes
    limits = {key: profile.buffers[key] for key in ("L0A", "L0B", "L0C", "L1")}
    return CubeUse(l0a, l0b, l0c, l1, limits)
