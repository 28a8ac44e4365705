"""ptosim.options: PyPTO's runtime/pass options, their dict-key rules, scopes and warnings.

Error tests match on ``code``; the message is checked only where its wording is the point
(the key name, the range, the list of valid keys, the suggestion).
"""


import contextlib
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptosim.errors import OptionError, PtoSimError, PtoSimWarning
from ptosim.options import (
    CV_MIX_ONLY,
    PASS_KEYS,
    RUNTIME_KEYS,
    SET_OPTIONS_PASS_KEYS,
    MergeSetting,
    OptionScope,
    PassOptions,
    RunMode,
    RuntimeOptions,
    SgScope,
    no_effect_warnings,
    parse_merge_setting,
    validate_pass_options,
    validate_runtime_options,
)

I32 = 2**31 - 1
SOURCES = ("jit", "set_pass_options", "set_options")
MERGE = ("vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting")

# key, default, min, max  (PyPTO tile_fwk_config.json / schema, digest §1)
RUNTIME_INTS = [
    ("device_sched_mode", 0, 0, 3),
    ("stitch_function_max_num", 128, 1, 1024),
    ("max_workspace_kb", 0, 0, I32),
    ("valid_shape_optimize", 0, 0, 1),
    ("device_sched_parallelism", 1, 1, 8),
    ("launch_sched_aicpu_num", 7, 1, 7),
    ("launch_early_mode", 0, 0, 2),
]
PASS_INTS = [("auto_mix_partition", 0, 0, 1), ("sg_set_tunevf_mode", 0, 0, 2)]
# digest §2c: reachable only through set_options(pass_options=...)
SET_OPTIONS_INTS = [
    ("pg_parallel_lower_bound", 20, 0, I32),
    ("pg_lower_bound", 512, 0, I32),
    ("mg_copyin_upper_bound", 104_857_600, 0, I32),
    ("mg_vec_parallel_lb", 48, 1, 48),
    ("copyout_resolve_coalescing", 0, 0, 1_000_000),
]
SET_OPTIONS_ONLY = [k for k, *_ in SET_OPTIONS_INTS] + [
    "pg_partition_algorithm", "ooo_sort_mode_aic", "ooo_sort_mode_aiv"]


@contextlib.contextmanager
def raises(code: str, match: str | None = None):
    """pytest.raises for an OptionError, then a check of its code."""
    with pytest.raises(OptionError, match=match) as info:
        yield info
    assert info.value.code == code


def code_of(fn, *args, **kwargs) -> str:
    with pytest.raises(OptionError) as info:
        fn(*args, **kwargs)
    return info.value.code


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PtoSimWarning)
        return fn(*args, **kwargs)


# ---------------------------------------------------------------- key sets and defaults


def test_key_sets():
    assert set(RUNTIME_KEYS) == {k for k, *_ in RUNTIME_INTS} | {"run_mode", "ready_on_host_tensors"}
    assert len(RUNTIME_KEYS) == 9
    assert set(PASS_KEYS) == set(MERGE) | {"sg_set_scope", "sg_set_ooo_scope", "ooo_sched_mode",
                                           "auto_mix_partition", "sg_set_tunevf_mode", "enable_slice"}
    assert set(SET_OPTIONS_PASS_KEYS) == set(PASS_KEYS) | set(SET_OPTIONS_ONLY)


def test_runtime_defaults():
    opts = validate_runtime_options({})
    assert opts == RuntimeOptions()
    for key, default, *_ in RUNTIME_INTS:
        assert getattr(opts, key) == default
    assert opts.run_mode is RunMode.SIM and opts.ready_on_host_tensors == ()


def test_pass_defaults():
    for source in SOURCES:
        opts = validate_pass_options({}, source=source)
        assert opts == PassOptions()
    opts = PassOptions()
    assert opts.vec_nbuffer_setting == MergeSetting() and opts.cube_l1_reuse_setting == MergeSetting()
    assert dict(opts.cube_nbuffer_setting.by_int) == {-1: 1}  # PyPTO default: cube merge off
    assert opts.sg_set_scope == SgScope(-1, False, False)
    assert (opts.sg_set_ooo_scope, opts.ooo_sched_mode, opts.enable_slice) == (-1, "", False)
    for key, default, *_ in PASS_INTS + SET_OPTIONS_INTS:
        assert getattr(opts, key) == default
    assert (opts.pg_partition_algorithm, opts.ooo_sort_mode_aic, opts.ooo_sort_mode_aiv) == ("Iso", "", "")


@pytest.mark.parametrize("model", [RuntimeOptions, PassOptions])
def test_every_field_documents_its_default(model):
    for name, info in model.model_fields.items():
        assert info.description and info.description.startswith("Default"), name


@pytest.mark.parametrize(
    "key,value",
    [(k, d) for k, d, *_ in RUNTIME_INTS] + [("run_mode", RunMode.SIM), ("ready_on_host_tensors", [])],
)
def test_runtime_key_accepts_its_default(key, value):
    assert validate_runtime_options({key: value}) == RuntimeOptions()


@pytest.mark.parametrize("source", ["jit", "set_pass_options"])
@pytest.mark.parametrize(
    "key,value",
    [("vec_nbuffer_setting", {}), ("cube_l1_reuse_setting", {}), ("cube_nbuffer_setting", {-1: 1}),
     ("sg_set_scope", -1), ("sg_set_ooo_scope", -1), ("ooo_sched_mode", ""), ("auto_mix_partition", 0),
     ("sg_set_tunevf_mode", 0), ("enable_slice", False)],
)
def test_pass_key_accepts_its_default(source, key, value):
    assert validate_pass_options({key: value}, source=source) == PassOptions()


def test_frozen_and_hashable():
    d = {"vec_nbuffer_setting": {-1: 2}, "sg_set_scope": (3, True, False)}
    opts = validate_pass_options(d, source="jit")
    with pytest.raises(Exception):
        opts.enable_slice = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        opts.vec_nbuffer_setting.by_int[-1] = 4  # type: ignore[index]
    assert hash(opts) == hash(validate_pass_options(dict(d), source="jit"))
    hash(validate_runtime_options({"ready_on_host_tensors": ["a"]}))


def test_direct_construction_runs_the_same_checks():
    assert PassOptions(sg_set_scope=3).sg_set_scope == SgScope(3)
    assert PassOptions(vec_nbuffer_setting={-1: 2}).vec_nbuffer_setting.granularity(0) == 2
    with raises("option-value"):
        PassOptions(vec_nbuffer_setting={-2: 7})


# ---------------------------------------------------------------- integer ranges and types


@pytest.mark.parametrize("key,default,lo,hi", RUNTIME_INTS)
def test_runtime_int_bounds(key, default, lo, hi):
    assert getattr(validate_runtime_options({key: lo}), key) == lo
    assert getattr(validate_runtime_options({key: hi}), key) == hi
    for bad in (lo - 1, hi + 1):
        with pytest.raises(OptionError, match=rf"'{key}' must be in {lo}\.\.{hi}, got {bad}") as info:
            validate_runtime_options({key: bad})
        assert info.value.code == "option-value"


def test_range_message_wording():
    with pytest.raises(OptionError) as info:
        validate_runtime_options({"device_sched_mode": 7})
    assert "runtime option 'device_sched_mode' must be in 0..3, got 7" in str(info.value)


@pytest.mark.parametrize("key", [k for k, *_ in RUNTIME_INTS])
@pytest.mark.parametrize("bad", [True, False, "1", 1.0, None, [1]])
def test_runtime_int_wrong_type(key, bad):
    with pytest.raises(OptionError, match=key) as info:
        validate_runtime_options({key: bad})
    assert info.value.code == "option-type"


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("key,default,lo,hi", PASS_INTS)
def test_pass_int_bounds(source, key, default, lo, hi):
    assert getattr(validate_pass_options({key: hi}, source=source), key) == hi
    assert getattr(validate_pass_options({key: lo}, source=source), key) == lo
    for bad in (lo - 1, hi + 1):
        with pytest.raises(OptionError, match=rf"'{key}' must be in {lo}\.\.{hi}") as info:
            validate_pass_options({key: bad}, source=source)
        assert info.value.code == "option-value"
    for bad in (True, "1", 1.0):
        assert code_of(validate_pass_options, {key: bad}, source=source) == "option-type"


@pytest.mark.parametrize("value", [-1, 1, 2, 100_000])
def test_sg_set_ooo_scope_accepts(value):
    assert validate_pass_options({"sg_set_ooo_scope": value}, source="jit").sg_set_ooo_scope == value


@pytest.mark.parametrize("value", [0, -2, 100_001])
def test_sg_set_ooo_scope_range(value):
    with pytest.raises(OptionError, match=r"'sg_set_ooo_scope' must be -1 or in 1\.\.100000") as info:
        validate_pass_options({"sg_set_ooo_scope": value}, source="jit")
    assert info.value.code == "option-value"


@pytest.mark.parametrize("bad", [True, "1", 1.0])
def test_sg_set_ooo_scope_type(bad):
    assert code_of(validate_pass_options, {"sg_set_ooo_scope": bad}, source="jit") == "option-type"


@pytest.mark.parametrize("value", ["", "GAPMIN", "HLF"])
def test_ooo_sched_mode_accepts(value):
    assert validate_pass_options({"ooo_sched_mode": value}, source="jit").ooo_sched_mode == value


@pytest.mark.parametrize("bad,code", [("gapmin", "option-value"), ("X", "option-value"),
                                      (1, "option-type"), (None, "option-type")])
def test_ooo_sched_mode_refuses(bad, code):
    with pytest.raises(OptionError, match="ooo_sched_mode") as info:
        validate_pass_options({"ooo_sched_mode": bad}, source="jit")
    assert info.value.code == code


@pytest.mark.parametrize("value", [True, False])
def test_enable_slice_accepts_bools(value):
    assert validate_pass_options({"enable_slice": value}, source="jit").enable_slice is value


@pytest.mark.parametrize("bad", [1, 0, "True", None])
def test_enable_slice_refuses_non_bools(bad):
    """PyPTO's config manager is strict: an int is not a bool."""
    with pytest.raises(OptionError, match="enable_slice") as info:
        validate_pass_options({"enable_slice": bad}, source="set_pass_options")
    assert info.value.code == "option-type"


# ---------------------------------------------------------------- run_mode, ready_on_host_tensors


@pytest.mark.parametrize("value,expected", [(RunMode.NPU, RunMode.NPU), (RunMode.SIM, RunMode.SIM),
                                            (0, RunMode.NPU), (1, RunMode.SIM)])
def test_run_mode_accepts(value, expected):
    assert validate_runtime_options({"run_mode": value}).run_mode is expected


@pytest.mark.parametrize("bad,code", [(2, "option-value"), (-1, "option-value"), (True, "option-type"),
                                      ("SIM", "option-type"), (1.0, "option-type"), (None, "option-type")])
def test_run_mode_refuses(bad, code):
    with pytest.raises(OptionError, match="run_mode") as info:
        validate_runtime_options({"run_mode": bad})
    assert info.value.code == code


@pytest.mark.parametrize("value", [[], ["block_table", "kv_act_seqs"], ("x",)])
def test_ready_on_host_tensors_accepts(value):
    assert validate_runtime_options({"ready_on_host_tensors": value}).ready_on_host_tensors == tuple(value)


@pytest.mark.parametrize("bad", ["block_table", ["a", 1], None, {"a"}])
def test_ready_on_host_tensors_refuses(bad):
    with pytest.raises(OptionError, match="ready_on_host_tensors") as info:
        validate_runtime_options({"ready_on_host_tensors": bad})
    assert info.value.code == "option-type"


# ---------------------------------------------------------------- unknown keys


def test_unknown_runtime_key_lists_valid_keys_and_suggests():
    with pytest.raises(OptionError) as info:
        validate_runtime_options({"device_sched_mod": 1})
    err = info.value
    assert err.code == "unknown-option"
    assert "'device_sched_mod'" in str(err) and "did you mean 'device_sched_mode'?" in str(err)
    assert all(k in str(err) for k in RUNTIME_KEYS)


def test_unknown_key_without_close_match():
    with pytest.raises(OptionError) as info:
        validate_runtime_options({"zzzz": 1})
    assert info.value.code == "unknown-option" and "did you mean" not in str(info.value)


@pytest.mark.parametrize("source", ["jit", "set_pass_options"])
def test_unknown_jit_pass_key_lists_only_the_nine(source):
    with pytest.raises(OptionError) as info:
        validate_pass_options({"vec_nbufer_setting": {}}, source=source)
    msg = str(info.value)
    assert info.value.code == "unknown-option" and "did you mean 'vec_nbuffer_setting'?" in msg
    assert all(k in msg for k in PASS_KEYS) and "pg_lower_bound" not in msg


def test_unknown_set_options_pass_key_lists_all():
    with pytest.raises(OptionError) as info:
        validate_pass_options({"pg_lower_bond": 3}, source="set_options")
    assert info.value.code == "unknown-option"
    assert "did you mean 'pg_lower_bound'?" in str(info.value)
    assert all(k in str(info.value) for k in SET_OPTIONS_PASS_KEYS)


def test_runtime_key_is_not_a_pass_key():
    assert code_of(validate_pass_options, {"device_sched_mode": 1}, source="set_options") == "unknown-option"
    assert code_of(validate_runtime_options, {"enable_slice": True}) == "unknown-option"
    assert code_of(validate_runtime_options, {3: 1}) == "unknown-option"


# ---------------------------------------------------------------- set_options-only and legacy keys


@pytest.mark.parametrize("key,default,lo,hi", SET_OPTIONS_INTS)
def test_set_options_only_int_keys(key, default, lo, hi):
    for ok in (default, lo, hi):
        assert getattr(validate_pass_options({key: ok}, source="set_options"), key) == ok
    for bad in (lo - 1, hi + 1):
        with pytest.raises(OptionError, match=rf"'{key}' must be in {lo}\.\.{hi}") as info:
            validate_pass_options({key: bad}, source="set_options")
        assert info.value.code == "option-value"
    assert code_of(validate_pass_options, {key: True}, source="set_options") == "option-type"


@pytest.mark.parametrize("value", ["Iso", "OspSarkar", "OspBsp"])
def test_pg_partition_algorithm(value):
    opts = validate_pass_options({"pg_partition_algorithm": value}, source="set_options")
    assert opts.pg_partition_algorithm == value


def test_pg_partition_algorithm_refused():
    for bad, code in (("iso", "option-value"), (0, "option-type")):
        assert code_of(validate_pass_options, {"pg_partition_algorithm": bad}, source="set_options") == code


@pytest.mark.parametrize("key", ["ooo_sort_mode_aic", "ooo_sort_mode_aiv"])
def test_ooo_sort_modes_are_strings(key):
    assert getattr(validate_pass_options({key: ""}, source="set_options"), key) == ""
    assert code_of(validate_pass_options, {key: 0}, source="set_options") == "option-type"


@pytest.mark.parametrize("source", ["jit", "set_pass_options"])
@pytest.mark.parametrize("key", SET_OPTIONS_ONLY)
def test_set_options_only_keys_refused_elsewhere(source, key):
    with pytest.raises(OptionError, match=r"only through set_options") as info:
        validate_pass_options({key: PassOptions.model_fields[key].default}, source=source)
    assert info.value.code == "unknown-option"


def test_pg_upper_bound_accepted_with_warning_through_set_options():
    with pytest.warns(PtoSimWarning, match="'pg_upper_bound'.*removed upstream") as record:
        opts = validate_pass_options({"pg_upper_bound": 8192, "pg_lower_bound": 64}, source="set_options")
    assert opts == PassOptions(pg_lower_bound=64)
    assert not hasattr(opts, "pg_upper_bound")
    assert len(record) == 1


def test_legacy_warning_points_at_the_caller():
    with pytest.warns(PtoSimWarning) as record:
        validate_pass_options({"pg_upper_bound": 8192}, source="set_options")
    assert record[0].filename == __file__


@pytest.mark.parametrize("source", ["jit", "set_pass_options"])
def test_pg_upper_bound_refused_through_jit(source):
    with pytest.raises(OptionError, match="removed upstream") as info:
        validate_pass_options({"pg_upper_bound": 8192}, source=source)
    assert info.value.code == "unknown-option"


# ---------------------------------------------------------------- sg_set_scope


@pytest.mark.parametrize("value,expected", [
    (-1, SgScope(-1, False, False)), (0, SgScope(0)), (3, SgScope(3, False, False)), (I32, SgScope(I32)),
    ((3, True, False), SgScope(3, True, False)), ([5, False, True], SgScope(5, False, True)),
    ((-1, False, False), SgScope(-1)), (SgScope(2, True, True), SgScope(2, True, True)),
])
def test_sg_set_scope_forms(value, expected):
    assert validate_pass_options({"sg_set_scope": value}, source="jit").sg_set_scope == expected


@pytest.mark.parametrize("bad,code", [
    (-2, "option-value"), (I32 + 1, "option-value"),
    ((-1, True, False), "option-value"), ((-1, False, True), "option-value"),  # -1 needs both flags off
    ((3, True), "option-value"), ((3, True, False, False), "option-value"),
    (True, "option-type"), ("3", "option-type"), (3.0, "option-type"), (None, "option-type"),
    ((3, 1, 0), "option-type"), ((True, False, False), "option-type"), (("3", False, False), "option-type"),
])
def test_sg_set_scope_refused(bad, code):
    with pytest.raises(OptionError, match="sg_set_scope") as info:
        validate_pass_options({"sg_set_scope": bad}, source="jit")
    assert info.value.code == code


# ---------------------------------------------------------------- merge-setting dict keys


def parse(name, d):
    return quiet(parse_merge_setting, name, d)


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("d,by_int", [({}, {}), ({-1: 4}, {-1: 4}), ({-1: 1}, {-1: 1}),
                                      ({0: 16, 1: 8, 2: 1}, {0: 16, 1: 8, 2: 1}), ({-1: I32}, {-1: I32}),
                                      ({I32: 2}, {I32: 2})])
def test_int_keys(name, d, by_int):
    s = parse(name, d)
    assert dict(s.by_int) == by_int and not s.by_func and not s.by_label


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("value", [0, -1, I32 + 1])
def test_values_out_of_range(name, value):
    with pytest.raises(OptionError, match=name) as info:
        parse(name, {-1: value})
    assert info.value.code == "option-value"


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("value", [True, "2", 2.0, None])
def test_values_wrong_type(name, value):
    assert code_of(parse, name, {0: value}) == "option-type"
    assert code_of(parse, name, {"DEFAULT": value}) == "option-type"
    assert code_of(parse, name, {"label": value}) == "option-type"


@pytest.mark.parametrize("d", [{-2: 0}, {-2: 1}, {-1: 2, -2: 1}, {-2: 0, 0: 4}])
def test_minus_two_in_vec_nbuffer(d):
    s = parse("vec_nbuffer_setting", d)
    assert s.multi_in_out == d[-2]


@pytest.mark.parametrize("value", [2, 5, -1])
def test_minus_two_takes_only_0_or_1(value):
    with pytest.raises(OptionError, match="0 or 1") as info:
        parse("vec_nbuffer_setting", {-2: value})
    assert info.value.code == "option-value"


@pytest.mark.parametrize("name", ["cube_l1_reuse_setting", "cube_nbuffer_setting"])
def test_minus_two_only_in_vec_nbuffer(name):
    assert code_of(parse, name, {-2: 1}) == "option-value"


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("key", [-3, -100, I32 + 1])
def test_int_key_out_of_range(name, key):
    assert code_of(parse, name, {key: 2}) == "option-value"


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("key", [True, 1.5, None, (1, 2)])
def test_key_wrong_type(name, key):
    assert code_of(parse, name, {key: 2}) == "option-type"


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("bad", [4, [(-1, 2)], None, "{-1: 2}"])
def test_setting_must_be_a_dict(name, bad):
    with pytest.raises(OptionError, match=name) as info:
        validate_pass_options({name: bad}, source="jit")
    assert info.value.code == "option-type"


@pytest.mark.parametrize("name", MERGE)
def test_func_and_default_keys(name):
    s = parse(name, {"func8_0": 2, "func8_1": 4, "DEFAULT": 8})
    assert dict(s.by_func) == {"func8_0": 2, "func8_1": 4, "DEFAULT": 8} and not s.by_int


def test_func_key_is_canonicalised():
    """func<magic>_<order> names integers: 'func08_00' is group func8_0."""
    assert dict(parse("vec_nbuffer_setting", {"func08_00": 2}).by_func) == {"func8_0": 2}


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("d", [{"rmsnorm": 2}, {-1: 2, "rmsnorm": 4}, {"DEFAULT": 2, "rmsnorm": 4},
                               {"func8_0": 2, "attn": 1, "mlp": 3}])
def test_label_keys_sit_with_either_form(name, d):
    s = parse(name, d)
    labels = {k: v for k, v in d.items() if k not in ("DEFAULT",) and not str(k).startswith("func")
              and not isinstance(k, int)}
    assert dict(s.by_label) == labels


@pytest.mark.parametrize("name", MERGE)
@pytest.mark.parametrize("d", [{0: 2, "func8_0": 2}, {-1: 2, "DEFAULT": 4}, {-1: 2, "rms": 3, "func1_0": 2}])
def test_mixing_int_and_func_keys_refused(name, d):
    with pytest.raises(OptionError, match="cannot mix integer keys with func/DEFAULT keys") as info:
        parse(name, d)
    assert info.value.code == "option-value"


@pytest.mark.parametrize("key", ["Func8_0", "FUNC8_0", "func8_x", "func_0", "func8_", "default", "Default"])
def test_func_lookalikes_are_labels_with_a_warning(key):
    """PyPTO matches func keys with ^func\\d+_\\d+$ and DEFAULT exactly; anything else is a label.
    ptosim follows that (so these may sit with int keys) but warns, since it is likely a typo."""
    with pytest.warns(PtoSimWarning, match="semantic label"):
        s = parse_merge_setting("cube_nbuffer_setting", {-1: 2, key: 4})
    assert dict(s.by_label) == {key: 4} and dict(s.by_int) == {-1: 2}


@pytest.mark.parametrize("key", ["function_norm", "rmsnorm", "MM1", "func"])
def test_ordinary_labels_do_not_warn(key):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PtoSimWarning)
        assert dict(parse_merge_setting("vec_nbuffer_setting", {key: 2}).by_label) == {key: 2}


# ---------------------------------------------------------------- cube_l1_reuse (count, side)


@pytest.mark.parametrize("value,stored", [
    ((2, "left"), (2, "left")), ((4, "right"), (4, "right")), ([8, "LEFT"], (8, "left")),
    ((2, "auto"), 2), ((1, "Right"), (1, "right")), ((999_999, "left"), (999_999, "left")), (4, 4),
])
@pytest.mark.parametrize("key", [-1, 0, "DEFAULT", "MM1"])
def test_l1_reuse_tuple_values(value, stored, key):
    s = parse("cube_l1_reuse_setting", {key: value})
    table = s.by_int if isinstance(key, int) else s.by_func if key == "DEFAULT" else s.by_label
    assert table[key] == stored


@pytest.mark.parametrize("value,code", [
    ((2, "up"), "option-value"), ((2, ""), "option-value"), ((0, "left"), "option-value"),
    ((-1, "left"), "option-value"), ((1_000_000, "left"), "option-value"),
    ((2, 3), "option-type"), ((True, "left"), "option-type"), (("2", "left"), "option-type"),
    ((2,), "option-value"), ((2, "left", "x"), "option-value"),
])
def test_l1_reuse_tuple_refused(value, code):
    with pytest.raises(OptionError, match="cube_l1_reuse_setting") as info:
        parse("cube_l1_reuse_setting", {-1: value})
    assert info.value.code == code


@pytest.mark.parametrize("name", ["vec_nbuffer_setting", "cube_nbuffer_setting"])
def test_tuple_values_only_in_l1_reuse(name):
    assert code_of(parse, name, {-1: (2, "left")}) == "option-type"


# ---------------------------------------------------------------- granularity priority


def test_granularity_func_form():
    s = parse("vec_nbuffer_setting", {"func8_0": 2, "DEFAULT": 4})
    assert s.granularity(0, func_key="func8_0") == 2
    assert s.granularity(1, func_key="func8_1") == 4  # DEFAULT for groups not named
    assert s.granularity(0) == 4
    assert parse("vec_nbuffer_setting", {"func8_0": 2}).granularity(1, func_key="func8_1") is None


def test_granularity_int_form():
    s = parse("vec_nbuffer_setting", {-1: 4, 0: 16})
    assert s.granularity(0) == 16 and s.granularity(1) == 4 and s.granularity(7, func_key="func3_7") == 4
    assert parse("vec_nbuffer_setting", {0: 16}).granularity(1) is None
    assert parse("vec_nbuffer_setting", {-2: 1}).granularity(0) is None  # -2 is not a granularity


def test_label_replaces_group_granularity_and_max_wins():
    s = parse("vec_nbuffer_setting", {-1: 4, 0: 16, "a": 2, "b": 8})
    assert s.granularity(0, labels=["a"]) == 2  # replaces, even when smaller
    assert s.granularity(0, labels=["a", "b"]) == 8
    assert s.granularity(0, labels=["zzz"]) == 16
    f = parse("cube_nbuffer_setting", {"func1_0": 3, "a": 5})
    assert f.granularity(0, labels=("a",), func_key="func1_0") == 5


def test_granularity_defaults():
    assert PassOptions().cube_nbuffer_setting.granularity(0) == 1  # {-1: 1}: no cube merge
    assert PassOptions().vec_nbuffer_setting.granularity(3) is None  # auto
    assert parse("cube_nbuffer_setting", {}).granularity(0) is None  # {} = auto explicitly


def test_l1_reuse_lookup_keeps_side():
    s = parse("cube_l1_reuse_setting", {-1: (4, "left"), "MM1": (2, "right")})
    assert s.lookup(0) == (4, "left") and s.granularity(0) == 4
    assert s.lookup(0, labels=["MM1"]) == (2, "right") and s.granularity(0, labels=["MM1"]) == 2


@pytest.mark.parametrize("bad", [-1, True, 1.0])
def test_granularity_needs_a_hash_order(bad):
    with pytest.raises(PtoSimError) as info:
        MergeSetting({-1: 2}).granularity(bad)
    assert info.value.code == "argument"


# ---------------------------------------------------------------- no-effect warnings


NON_DEFAULT_CV = {"sg_set_ooo_scope": 5, "ooo_sched_mode": "HLF", "auto_mix_partition": 1,
                  "sg_set_tunevf_mode": 2}


def test_cv_mix_only_set():
    assert CV_MIX_ONLY == set(NON_DEFAULT_CV)


def test_no_warnings_by_default():
    assert no_effect_warnings(PassOptions(), cv_mix=False) == []


@pytest.mark.parametrize("key", sorted(NON_DEFAULT_CV))
def test_no_effect_warning_per_option(key):
    opts = validate_pass_options({key: NON_DEFAULT_CV[key], "vec_nbuffer_setting": {-1: 2}}, source="jit")
    msgs = no_effect_warnings(opts, cv_mix=False, platform="a2a3")
    assert len(msgs) == 1 and key in msgs[0]
    assert "has no effect on a2a3 (no CV-mix cores)" in msgs[0]
    assert no_effect_warnings(opts, cv_mix=True) == []


def test_no_effect_warnings_all_and_platform_name():
    opts = validate_pass_options(NON_DEFAULT_CV, source="jit")
    msgs = no_effect_warnings(opts, cv_mix=False, platform="a5")
    assert len(msgs) == 4 and all("has no effect on a5" in m for m in msgs)


def test_setting_a_default_value_is_no_warning():
    opts = validate_pass_options({"ooo_sched_mode": "", "sg_set_ooo_scope": -1}, source="jit")
    assert no_effect_warnings(opts, cv_mix=False) == []


# ---------------------------------------------------------------- scopes


def test_scope_inheritance():
    scope = OptionScope()
    assert scope.current().runtime == RuntimeOptions() and scope.depth == 0
    scope.push("jit", "kernel")
    scope.set_runtime({"stitch_function_max_num": 64})
    scope.set_pass({"vec_nbuffer_setting": {-1: 4}}, source="jit")
    scope.push("loop", "i")
    scope.set_runtime({"device_sched_mode": 1})
    scope.set_pass({"vec_nbuffer_setting": {-1: 8}}, source="set_pass_options")
    inner = scope.current()
    assert (inner.kind, inner.name, scope.depth) == ("loop", "i", 2)
    assert inner.runtime.stitch_function_max_num == 64  # inherited
    assert inner.runtime.device_sched_mode == 1
    assert inner.pass_options.vec_nbuffer_setting.granularity(0) == 8  # inner overrides
    assert inner.pass_options.cube_nbuffer_setting.granularity(0) == 1  # default
    assert scope.pop() == inner
    outer = scope.current()
    assert outer.runtime.device_sched_mode == 0 and outer.runtime.stitch_function_max_num == 64
    assert outer.pass_options.vec_nbuffer_setting.granularity(0) == 4
    scope.pop()
    assert scope.current().runtime == RuntimeOptions()


def test_scope_records_what_was_set():
    scope = OptionScope()
    scope.push("options", "block")
    scope.set_runtime({"device_sched_mode": 2})
    scope.set_pass({"pg_lower_bound": 64}, source="set_options")
    cur = scope.current()
    assert cur.runtime.model_fields_set == {"device_sched_mode"}
    assert cur.pass_options.model_fields_set == {"pg_lower_bound"}


def test_scope_set_overwrites_within_a_scope():
    scope = OptionScope()
    scope.push("jit")
    scope.set_runtime({"device_sched_mode": 2, "launch_early_mode": 1})
    scope.set_runtime({"device_sched_mode": 3})
    assert (scope.current().runtime.device_sched_mode, scope.current().runtime.launch_early_mode) == (3, 1)


def test_scope_refuses_bad_values_and_keeps_state():
    scope = OptionScope()
    scope.push("jit")
    scope.set_runtime({"device_sched_mode": 1})
    with raises("option-value"):
        scope.set_runtime({"device_sched_mode": 9, "launch_early_mode": 1})
    assert scope.current().runtime.launch_early_mode == 0
    with raises("unknown-option"):
        scope.set_pass({"pg_lower_bound": 3}, source="jit")


def test_scope_legacy_key_not_recorded():
    scope = OptionScope()
    with pytest.warns(PtoSimWarning):
        scope.set_pass({"pg_upper_bound": 8192}, source="set_options")
    assert scope.current().pass_options == PassOptions()


def test_scope_id_keeps_its_flags_within_a_kernel():
    scope = OptionScope()
    scope.set_pass({"sg_set_scope": (3, True, False)}, source="set_pass_options")
    scope.set_pass({"sg_set_scope": -1}, source="set_pass_options")
    scope.set_pass({"sg_set_scope": (3, True, False)}, source="set_pass_options")
    scope.set_pass({"sg_set_scope": 4}, source="set_pass_options")
    with raises("option-value", match="same flags"):
        scope.set_pass({"sg_set_scope": 3}, source="set_pass_options")
    assert scope.current().pass_options.sg_set_scope == SgScope(4)


def test_pop_past_root_is_an_error():
    scope = OptionScope()
    with pytest.raises(PtoSimError) as info:
        scope.pop()
    assert info.value.code == "argument"


def test_scopes_are_independent_objects():
    a, b = OptionScope(), OptionScope()
    a.set_runtime({"device_sched_mode": 3})
    assert b.current().runtime.device_sched_mode == 0


def test_error_points_at_the_caller():
    with pytest.raises(OptionError) as info:
        validate_pass_options({"sg_set_scope": (-1, True, False)}, source="jit")
    assert info.value.where is not None and info.value.where.startswith("test_options.py:")


# ---------------------------------------------------------------- property tests

_keys = st.one_of(
    st.integers(-4, 40), st.sampled_from([I32, I32 + 1, -(2**40)]),
    st.sampled_from(["func8_0", "func12_3", "DEFAULT", "default", "Func8_0", "func8_x", "rmsnorm", ""]),
    st.text(max_size=6), st.booleans(), st.floats(allow_nan=False), st.none(), st.tuples(st.integers()),
)
_values = st.one_of(
    st.integers(-3, 20), st.sampled_from([I32, I32 + 1, 1_000_000]), st.booleans(), st.none(),
    st.floats(allow_nan=False), st.text(max_size=4),
    st.tuples(st.integers(-2, 1_000_001), st.sampled_from(["left", "right", "auto", "LEFT", "up", 3, None])),
    st.lists(st.one_of(st.integers(0, 5), st.sampled_from(["left", "right"])), max_size=3),
)
_settings = st.one_of(st.dictionaries(_keys, _values, max_size=6), _values)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(MERGE), d=_settings)
def test_random_merge_settings_raise_only_option_errors(name, d):
    try:
        s = quiet(parse_merge_setting, name, d)
    except OptionError as exc:
        assert exc.code in ("option-value", "option-type")
        return
    assert not (s.by_int and s.by_func)
    for table in (s.by_int, s.by_func, s.by_label):
        for key, v in table.items():
            count = v[0] if isinstance(v, tuple) else v
            assert type(count) is int
            if key == -2:
                assert name == "vec_nbuffer_setting" and count in (0, 1)
            else:
                assert 1 <= count <= I32
    g = s.granularity(0, labels=list(s.by_label), func_key="func8_0")
    assert g is None or g >= 0


@settings(max_examples=150, deadline=None)
@given(d=st.dictionaries(st.sampled_from([*PASS_KEYS, "pg_upper_bound", "pg_lower_bound", "bogus"]),
                         st.one_of(_values, st.dictionaries(_keys, _values, max_size=3)), max_size=4),
       source=st.sampled_from(SOURCES))
def test_random_pass_options_raise_only_option_errors(d, source):
    try:
        opts = quiet(validate_pass_options, d, source=source)
    except OptionError:
        return
    assert isinstance(opts, PassOptions)
    hash(opts)
