"""Which runtime and pass option keys each PyPTO version accepts.

ptosim validates the reference digest's set ("upstream": 9 runtime + 9 pass keys, func/label dict
keys). The PyPI wheel pypto 0.2.0 is older: its ``tile_fwk_config.json`` runtime section and its
``set_pass_options`` keywords are listed here as read from the installed wheel, and its dict-valued
settings take only int keys. A code-generation target names the version it emits for, and the
generator refuses an option that version rejects before writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .options import PASS_KEYS, RUNTIME_KEYS

__all__ = ["OptionSet", "PYPTO_OPTION_SETS", "version_problems"]


@dataclass(frozen=True)
class OptionSet:
    runtime: frozenset[str]
    pass_: frozenset[str]
    #: dict-valued settings (``vec_nbuffer_setting``…) take only int keys (no function/label names)
    int_dict_keys_only: bool


PYPTO_OPTION_SETS: dict[str, OptionSet] = {
    "upstream": OptionSet(frozenset(RUNTIME_KEYS), frozenset(PASS_KEYS), False),
    "0.2.0": OptionSet(
        runtime=frozenset({
            "device_sched_mode", "stitch_function_inner_memory", "stitch_function_outcast_memory",
            "stitch_function_num_initial", "stitch_function_max_num", "stitch_function_num_step",
            "stitch_cfgcache_size", "stitch_function_size", "triple_stream_sched", "run_mode",
            "valid_shape_optimize", "ready_on_host_tensors",
        }),
        pass_=frozenset({"pg_skip_partition", "pg_upper_bound", "vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting", "sg_set_scope"}),
        int_dict_keys_only=True,
    ),
}


def version_problems(version: str, runtime: Mapping[str, Any], pass_: Mapping[str, Any]) -> list[str]:
    """One message per option ``version`` of PyPTO would refuse."""
    allowed = PYPTO_OPTION_SETS[version]
    out = []
    for group, options, keys in (("runtime", runtime, allowed.runtime), ("pass", pass_, allowed.pass_)):
        for key, value in options.items():
            if key not in keys:
                out.append(f"PyPTO {version} has no {group} option {key!r} (it accepts: {', '.join(sorted(keys))})")
            elif allowed.int_dict_keys_only and isinstance(value, Mapping) and not all(isinstance(k, int) and not isinstance(k, bool) for k in value):
                out.append(f"PyPTO {version} takes only int keys in {key} (got {', '.join(repr(k) for k in value)})")
    return out
