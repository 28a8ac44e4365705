"""The catalogue: every card, the constraint catalogue, platform profiles, renames and naming.

``load_catalogue`` reads the shipped ``patterns/`` folder plus any user folders, collecting every
problem of every file before it fails (one run shows them all). Queries used by the rest of the
tool live here: a card by id, a card's effective parameters (its own plus those inherited from
the atoms it calls), and ``used_by`` (derived, never written in a card).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from ptosim.errors import PlatformError
from ptosim.platform import Profile, load_platform

from ..cards import model as m
from ..cards.loader import LoadedCard, load_card, problems_from_validation
from ..cards.yamlsrc import Located, load_located_file
from ..vocab.identifiers import token_problem
from ..vocab.errors import FlowError, PatternGenError, Problem, did_you_mean
from ..vocab.ops import OPS
from ..vocab.paths import checked_path
from ..vocab.resources import package_patterns_dir, user_catalogue_dirs

__all__ = ["Catalogue", "load_catalogue", "card_files"]


@dataclass
class Catalogue:
    cards: dict[str, Any] = field(default_factory=dict)
    located: dict[str, Located] = field(default_factory=dict)
    constraints: dict[str, m.Constraint] = field(default_factory=dict)
    platforms: dict[str, Profile] = field(default_factory=dict)
    renames: dict[str, dict[str, str]] = field(default_factory=dict)
    naming: dict[str, Any] = field(default_factory=dict)
    dirs: list[Path] = field(default_factory=list)
    _params: dict[str, dict[str, m.ParamSpec]] = field(default_factory=dict, repr=False)
    _origins: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)

    # -- lookups ------------------------------------------------------------------------------
    def card(self, card_id: str, from_card: str | None = None, path: tuple[Any, ...] = ()) -> Any:
        card = self.cards.get(card_id)
        if card is None:
            hint = did_you_mean(card_id, self.cards)
            if from_card is not None:
                raise FlowError("unknown-card", f"unknown card {card_id!r}{hint}", from_card, path)
            raise PatternGenError(Problem("unknown-card", f"unknown card {card_id!r}; cards: {', '.join(sorted(self.cards))}{hint}"))
        return card

    def file_of(self, card_id: str) -> str:
        return self.located[card_id].file

    def where(self, card_id: str, path: tuple[Any, ...]) -> dict[str, Any]:
        located = self.located.get(card_id)
        if located is None:
            return {}
        line, col = located.where(path)
        return {"file": located.file, "line": line, "col": col}

    def atoms(self) -> list[Any]:
        return [c for c in self.sorted_cards() if c.kind == "atom"]

    def skeletons(self) -> list[Any]:
        return [c for c in self.sorted_cards() if c.kind == "skeleton"]

    def sorted_cards(self) -> list[Any]:
        return [self.cards[k] for k in sorted(self.cards)]

    def platform(self, name: str) -> Profile:
        profile = self.platforms.get(name)
        if profile is None:
            raise PatternGenError(
                Problem(
                    "unknown-platform",
                    f"unknown platform {name!r}; available: {', '.join(sorted(self.platforms))}" + did_you_mean(name, self.platforms),
                )
            )
        return profile

    # -- derived facts ------------------------------------------------------------------------
    def calls_of(self, card: Any) -> list[str]:
        """Cards a card calls or splices directly (ops ``call:``, items ``use:``, slot defaults)."""
        out: list[str] = []
        items = list(card.stages) + list(getattr(card, "prologue", [])) + list(getattr(card, "after", []))
        for item in items:
            if isinstance(item, m.UseItem):
                out.append(item.use)
            elif isinstance(item, m.Stage):
                out.extend(op.call for op in item.ops if isinstance(op, m.CallOp))
        if card.kind == "skeleton":
            out.extend(spec.default for spec in card.slots.values())
        return list(dict.fromkeys(out))

    def used_by(self, card_id: str) -> list[str]:
        return sorted(c.id for c in self.cards.values() if card_id in c.depends_on)

    def effective_params(self, card_id: str) -> dict[str, m.ParamSpec]:
        """Own parameters plus those inherited from called atoms that the call does not bind."""
        if card_id in self._params:
            return self._params[card_id]
        card = self.card(card_id)
        self._params[card_id] = {}  # cycle guard; cycles are reported by the checks
        self._origins[card_id] = {}
        params: dict[str, m.ParamSpec] = {}
        origins: dict[str, str] = {}
        if card.kind == "atom":
            for item in card.stages:
                calls: list[tuple[str, Mapping[str, Any]]] = []
                if isinstance(item, m.UseItem):
                    calls.append((item.use, item.params))
                elif isinstance(item, m.Stage):
                    calls.extend((op.call, op.params) for op in item.ops if isinstance(op, m.CallOp))
                for callee, bound in calls:
                    if callee not in self.cards:
                        continue
                    for name, spec in self.effective_params(callee).items():
                        if name not in bound and name not in params:
                            params[name] = spec
                            origins[name] = self._origins[callee][name]
        params.update(card.params)
        origins.update({name: card.id for name in card.params})
        self._params[card_id] = params
        self._origins[card_id] = origins
        return params

    def param_defaults(self, card_id: str) -> dict[str, Any]:
        """A card's effective parameters, each at its default."""
        return {n: s.default for n, s in self.effective_params(card_id).items()}

    def slot_param_defaults(self, skeleton: Any, atom_id: str) -> dict[str, Any]:
        """An atom's parameter defaults in a skeleton's slot: its own, where the skeleton's
        ``slot_defaults`` do not override them."""
        defaults = self.param_defaults(atom_id)
        defaults.update({k: v for k, v in skeleton.slot_defaults.items() if k in defaults})
        defaults.update({n: spec.default for n, spec in skeleton.params.items()})
        return defaults

    def slot_specs(self, skeleton: Any, atom_id: str) -> dict[str, m.ParamSpec]:
        """The parameters a request sets for a skeleton with ``atom_id`` in its slot: the atom's
        (own and inherited) and the skeleton's own (e.g. SK-04's ``kv_layout``)."""
        return {**self.effective_params(atom_id), **skeleton.params}

    def param_origin(self, card_id: str, name: str) -> str:
        """The card that declares a parameter a card has (itself, or the atom it inherits from)."""
        self.effective_params(card_id)
        return self._origins.get(card_id, {}).get(name, card_id)

    def slot_atoms(self, skeleton: Any) -> list[Any]:
        """Atoms whose tags the skeleton's slot accepts."""
        spec = next(iter(skeleton.slots.values()))
        return [a for a in self.atoms() if set(a.tags) & set(spec.accepts)]


# --- loading ------------------------------------------------------------------------------------


def card_files(folder: Path) -> list[Path]:
    """Card files of a catalogue folder: ``atoms/`` and ``skeletons/``, or the folder itself."""
    subdirs = [folder / "atoms", folder / "skeletons"]
    if any(d.is_dir() for d in subdirs):
        return sorted(p for d in subdirs if d.is_dir() for p in d.glob("*.yaml"))
    return sorted(p for p in folder.glob("*.yaml") if p.name not in _SPECIAL_FILES)


#: what a catalogue folder may hold; a folder with none of it and other entries ("/", a source tree)
#: is a mistyped setting, not an empty catalogue
_CATALOGUE_ENTRIES = ("atoms", "skeletons", "golden", "platforms")


def _not_a_catalogue(folder: Path) -> bool:
    if any((folder / d).is_dir() for d in _CATALOGUE_ENTRIES) or card_files(folder) or any(folder.glob("*.yaml")):
        return False
    try:
        return next(iter(folder.iterdir()), None) is not None
    except OSError:
        return False


def misnamed_card_files(folder: Path) -> list[Problem]:
    """``.yml``/``.YAML`` files named like cards (``AT-21-….yml``) where cards are read: skipped silently they
    would look like a lost card. Other ``.yml`` files (``mkdocs.yml``) are none of ours."""
    places = [d for d in (folder / "atoms", folder / "skeletons") if d.is_dir()] or [folder]
    return [
        Problem("bad-path", f"card files end in .yaml; this one is not read: rename it to {p.with_suffix('.yaml').name}", str(p))
        for d in places
        for p in sorted(d.iterdir())
        if p.suffix.lower() in (".yml", ".yaml") and p.suffix != ".yaml" and _CARD_FILE.match(p.name)
    ]


_CARD_FILE = re.compile(r"[A-Z]+-\d+")


SPECIAL_FILES = frozenset({"constraints.yaml", "renames.yaml", "naming.yaml", "manifest.yaml"})
_SPECIAL_FILES = SPECIAL_FILES


def _read_yaml(path: Path, problems: list[Problem]) -> tuple[Any, Located | None]:
    try:
        located = load_located_file(path)
    except PatternGenError as exc:
        problems.extend(exc.problems)
        return None, None
    return located.data, located


def _load_card(path: Path, renames: Mapping[str, str], problems: list[Problem]) -> LoadedCard | None:
    """A card file's card, or None with its problems added to ``problems``."""
    try:
        return load_card(path, renames)
    except PatternGenError as exc:
        problems.extend(exc.problems)
        return None


def _load_constraints(path: Path, cat: Catalogue, problems: list[Problem]) -> None:
    data, located = _read_yaml(path, problems)
    if located is None:
        return
    try:
        parsed = m.ConstraintCatalogue.model_validate(data)
    except ValidationError as exc:
        problems.extend(problems_from_validation(exc, located, "constraints"))
        return
    for i, c in enumerate(parsed.constraints):
        if c.id in cat.constraints:
            line, col = located.where(("constraints", i, "id"))
            problems.append(Problem("duplicate-id", f"constraint {c.id} is defined twice", str(path), line, col))
            continue
        cat.constraints[c.id] = c


def _distinct_dirs(folders: Iterable[Path]) -> list[Path]:
    """Each folder once (the first spelling kept), compared by resolved path: the same folder from
    ``--catalogue`` and ``PATTERN_GEN_CATALOGUE``, twice, or as the folder being validated would
    otherwise define every one of its cards twice."""
    seen: set[Path] = set()
    out: list[Path] = []
    for folder in folders:
        key = folder.expanduser().resolve()
        if key not in seen:
            seen.add(key)
            out.append(folder)
    return out


def _profile_problems(exc: PlatformError, path: Path, located: Located) -> list[Problem]:
    """A profile's validation problems (``PlatformError.problems``: key path, message) at their lines."""
    # ``exc.message``, not ``str(exc)``: the latter names the Python line that raised (a kernel's
    # line for a kernel error; here it would be the loader's own, which means nothing to the user)
    items = getattr(exc, "problems", None) or [(getattr(exc, "path", ()) or (), getattr(exc, "message", str(exc)))]
    out = []
    for key_path, message in items:
        line, col = located.where(tuple(key_path)) if key_path else (None, None)
        out.append(Problem("bad-profile", f"platform profile: {message}", str(path), line, col))
    return out


def _missing_op_dtypes(profile: Profile, path: Path, located: Located) -> list[Problem]:
    """An op whose dtypes the profile does not list would be legal for every dtype: refuse that."""
    missing = [name for name, spec in OPS.items() if spec.dtype_checked and name not in profile.op_dtypes]
    if not missing:
        return []
    line, col = located.where(("op_dtypes",))
    return [Problem("bad-profile", f"platform profile: op_dtypes lists no dtypes for {', '.join(missing)}; add e.g. `{missing[0]}: [FP32]`", str(path), line, col)]


def load_catalogue(
    extra_dirs: Iterable[str | Path] = (),
    *,
    files: Iterable[Path] | None = None,
    base: Path | None = None,
) -> Catalogue:
    """Load a catalogue: ``base`` (default: the shipped one), user folders, explicit card files.

    Cards in user folders must have new ids; explicit ``files`` replace the cards they redefine
    (so an edited copy of a shipped card can be validated in context).
    """
    cat = Catalogue()
    problems: list[Problem] = []
    shipped = package_patterns_dir()
    base = Path(base) if base is not None else shipped
    given = []
    for d in user_catalogue_dirs(tuple(str(d) for d in extra_dirs)):
        try:
            checked_path(Path.cwd(), str(d))
            given.append(Path(d))  # as given: messages name the folder as the user wrote it
        except ValueError as exc:
            problems.append(Problem("bad-path", f"catalogue folder {str(d)[:200]!r} {exc}"))
    dirs = _distinct_dirs([base] + given)
    cat.dirs = dirs
    for folder in dirs:
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            problems.append(Problem("bad-path", f"catalogue folder {folder} {what}", str(folder)))
        elif folder != base and _not_a_catalogue(folder):
            problems.append(Problem("bad-path", f"catalogue folder {folder} holds no cards (no atoms/, skeletons/, platforms/ or .yaml files) "
                                    "but other files: name the folder of your cards (an empty one is fine)", str(folder)))
    meta = base if (base / "naming.yaml").is_file() else shipped
    renames_path = meta / "renames.yaml"
    if renames_path.is_file():
        data, _ = _read_yaml(renames_path, problems)
        cat.renames = {k: dict(v or {}) for k, v in (data or {}).items()}
    naming_path = meta / "naming.yaml"
    if naming_path.is_file():
        data, _ = _read_yaml(naming_path, problems)
        cat.naming = dict(data or {})
    meta_dirs = dirs if any((d / "constraints.yaml").is_file() for d in dirs) else [shipped] + dirs
    for folder in meta_dirs:
        if (folder / "constraints.yaml").is_file():
            _load_constraints(folder / "constraints.yaml", cat, problems)
        plat_dir = folder / "platforms"
        for p in sorted(plat_dir.glob("*.yaml")) if plat_dir.is_dir() else []:
            why = token_problem(p.stem)
            if why:  # the file's name is the platform's name, in kernels and instance names
                problems.append(Problem("bad-profile", f"platform file name {p.stem!r} {why}; rename the file", str(p)))
                continue
            located = _read_yaml(p, problems)[1]
            if located is None:
                continue  # YAML errors reported with their line
            try:
                cat.platforms[p.stem] = load_platform(str(p))
            except PlatformError as exc:  # every problem of the profile, at its line
                problems += _profile_problems(exc, p, located)
                continue
            problems += _missing_op_dtypes(cat.platforms[p.stem], p, located)
    explicit = [Path(f).resolve() for f in files or ()]
    paths = [p for folder in dirs if folder.is_dir() for p in card_files(folder)]
    problems += [q for folder in dirs if folder.is_dir() for q in misnamed_card_files(folder)]
    # A folder inside another one given (``validate patterns/atoms`` on top of the shipped
    # ``patterns/``) holds the same files: each file is read once, not reported as its own duplicate.
    paths = list({p.resolve(): p for p in paths if p.resolve() not in explicit}.values())
    key_renames = cat.renames.get("keys", {})
    for path in explicit:
        loaded = _load_card(path, key_renames, problems)
        if loaded is not None:
            cat.cards[loaded.card.id] = loaded.card
            cat.located[loaded.card.id] = loaded.located
    overridden = set(cat.cards)
    for path in paths:
        loaded = _load_card(path, key_renames, problems)
        if loaded is None:
            continue
        card = loaded.card
        if card.id in overridden:
            continue
        if card.id in cat.cards:
            line, col = loaded.located.where(("id",))
            problems.append(
                Problem("duplicate-id", f"card id {card.id} is also defined in {cat.located[card.id].file}", str(path), line, col)
            )
            continue
        cat.cards[card.id] = card
        cat.located[card.id] = loaded.located
    if problems:
        raise PatternGenError(problems)
    return cat
