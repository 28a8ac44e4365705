"""The flags that make a request (``new``, ``tune``) and the ``Request`` they give."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

from ..plan.kernel_plan import Request
from ..plan.manifest import split_params
from ..plan.model_request import apply_model
from ..plan.options import parse_option_arg
from ..plan.coerce import parse_tile
from ..vocab.targets import DEFAULT_TARGET
from .common import err, literal, pairs

__all__ = ["request_from_flags", "request_options"]


def request_from_flags(
    skeleton: str,
    atoms: str,
    params: tuple[str, ...],
    dims: tuple[str, ...],
    platform: str | None,
    options: tuple[str, ...],
    name: str | None,
    target: str | None = None,
    tiles: tuple[str, ...] = (),
    model: str | None = None,
    quiet: bool = False,
) -> Request:
    bare, staged = split_params(pairs(params, "--param"))
    opts = dict(parse_option_arg(o) for o in options)
    req = Request(
        skeleton=skeleton,
        atoms=tuple(a for a in atoms.split(",") if a.strip()),
        params=bare,
        stage_params=staged,
        dims=pairs(dims, "--dim"),  # type: ignore[arg-type]
        platform=platform,
        options=opts,
        name=name,
        target=None if target in (None, DEFAULT_TARGET) else target,
        tiles=dict(parse_tile(text) for text in tiles),
    )
    if model is None:
        return req
    req, notes = apply_model(req, Path(model))
    if not quiet:
        for line in notes:
            err.print(literal(f"model: {line}", "dim"), soft_wrap=True)
    return req


def request_options(*, skeleton_required: bool, fixed: str = "") -> Callable[[Any], Any]:
    """The flags that make a request (``new``, ``tune``); ``fixed`` is appended to the help of the
    settings a command keeps as given."""
    options = [
        # no ``default`` beside ``required``: click 8.4 takes an explicit None default as given
        click.option("--skeleton", required=True, help="Skeleton card id, e.g. SK-04.") if skeleton_required
        else click.option("--skeleton", default=None, help="Skeleton card id, e.g. SK-04 (instead of an instance)."),
        click.option("--atoms", default="", help="Atom(s) for the skeleton's slot: AT-10, AT-11 or AT-03,AT-09 (default: the slot's default)."),
        click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help=f"Slot parameter, or STAGE.param=value for a fixed stage{fixed}."),
        click.option("--model", "model", default=None, metavar="CONFIG_JSON",
                     help="A Hugging Face config.json (a file; nothing is downloaded): its dims and parameters fill the skeleton's; --dim/--param override them. `pattern-gen models` lists the families."),
        click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE", help="Model dim, e.g. K=1024."),
        click.option("--platform", default=None, help="Platform profile (default a2a3)."),
        click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help=f"Runtime/pass/operation option (YAML value; empty unsets a recommended one){fixed}."),
        click.option("--tile", "tiles", multiple=True, metavar="LABEL=RxC",
                     help=f"Tile of a stage: LABEL=8x4096 (vec) or LABEL=m:32x32,k:128x256,n:128x256 (cube); checked, never shrunk{fixed}."),
    ]

    def wrap(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return wrap
