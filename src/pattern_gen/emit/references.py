"""Which hand-written reference function stands for each shipped atom in the golden compositions.

A skeleton's composition (``golden/SK-NN.py``) calls the reference of the atom in its slot by name
(``norm_linear`` for AT-10 and AT-11). A team's own atom (say AT-50, copied from AT-10) brings its
reference as ``golden/AT-50.py`` beside its cards, defining that same function; it is inlined after
the shipped references, so it replaces them in that instance's golden. ``stub`` writes the file
``new-card`` starts from: the signature, raising until it is written.
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["ATOM_REFERENCES", "REFERENCE_FILES", "SKELETON_REFERENCES", "reference_signature", "stub"]

_GOLDEN = Path(__file__).resolve().parent / "golden"
#: the shipped per-atom reference files, inlined into every instance's golden in this order
REFERENCE_FILES = ("atoms.py", "attention.py")
#: skeleton -> further shipped reference files its golden inlines after those (MoE routing)
SKELETON_REFERENCES: dict[str, tuple[str, ...]] = {"SK-07": ("routing.py",)}

#: shipped atom -> the function of ``golden/atoms.py`` the compositions call for it
ATOM_REFERENCES: dict[str, str] = {
    "AT-03": "rmsnorm",
    "AT-04": "rope",
    "AT-05": "quant_int8",
    "AT-08": "quant_fp8",
    "AT-06": "dequant",
    "AT-07": "swiglu",
    "AT-09": "linear",
    "AT-10": "norm_linear",
    "AT-11": "norm_linear",
    "AT-16": "cache_scatter",
    "AT-17": "block_gather",
    "AT-22": "matmul_k_split",
    "AT-01": "attention",
    "AT-12": "attention",
    "AT-13": "attention",
    "AT-02": "softmax",
    "AT-15": "route_tokens",
}


def reference_signature(function: str) -> str:
    """``def name(args):`` of a reference function, as written in ``golden/atoms.py`` or
    ``golden/attention.py``."""
    for name in REFERENCE_FILES + tuple(f for files in SKELETON_REFERENCES.values() for f in files):
        tree = ast.parse((_GOLDEN / name).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == function:
                return f"def {function}({ast.unparse(node.args)}):"
    raise KeyError(function)


def stub(new_id: str, source_id: str, path_hint: str) -> str:
    """The golden file of a new atom copied from ``source_id``: fails until written by hand."""
    function = ATOM_REFERENCES.get(source_id)
    if function is None:  # a team's own atom copied again: its reference has the same name
        return (
            f'"""Golden reference of {new_id} (copied from {source_id}): write it by hand in NumPy + ml_dtypes."""\n\n'
            f"raise NotImplementedError(\"{new_id}'s golden reference is not written yet: copy {source_id}'s golden file and edit {path_hint}\")\n"
        )
    return (
        f'"""Golden reference of {new_id} (copied from {source_id}): write it by hand in NumPy + ml_dtypes.\n\n'
        f"The skeleton compositions call ``{function}`` for the atom in their slot; this definition\n"
        f"replaces {source_id}'s in every instance of {new_id}. Use the helpers of pattern-gen's\n"
        f"``emit/golden/atoms.py`` (f32, store, rmsnorm, linear, …); never re-read the card flow.\n"
        f'"""\n\n\n'
        f"{reference_signature(function)}\n"
        f"    raise NotImplementedError(\"{new_id}'s golden reference is not written yet: edit {path_hint}\")\n"
    )
