"""Bad cards: ``pattern-gen validate DIR`` on a corrupted copy of ``patterns/`` exits 2, names the file
and line, ends each problem with its ``[code]``, never prints a traceback and reports every problem.

Each test corrupts one thing; assertions match the code and the file:line, and the message text only
where the wording is the point (the closest spelling, the valid keys, a rename).
"""

from __future__ import annotations

import shutil

import pytest

AT03 = "atoms/AT-03-rmsnorm.yaml"
AT05 = "atoms/AT-05-int8-quant.yaml"
AT09 = "atoms/AT-09-quant-linear.yaml"
AT10 = "atoms/AT-10-norm-linear.yaml"
SK03 = "skeletons/SK-03-linear-projection.yaml"
SK04 = "skeletons/SK-04-multi-stage-prolog.yaml"


def validate(cli, cat):
    run = cli("validate", str(cat.root))
    run.assert_bad_input()
    return run


def only(run, code: str) -> str:
    """The message of the single problem of the run, which must have ``code``."""
    assert run.codes() == [code], run.stderr
    return run.problems[0][0]


def assert_at(text: str, cat, rel: str, line: int, col: int | None = None) -> None:
    where = f"{cat.path(rel)}:{line}:" + (f"{col}:" if col is not None else "")
    assert text.startswith(where), f"expected {where!r} at the start of\n{text}"


# --- schema errors ---------------------------------------------------------------------------------


def test_unknown_key_names_key_valid_keys_and_closest_spelling_at_its_line(cli, catalogue_copy):
    old = "{op: sum, in: sq, dim: -1, keepdim: true,"
    cat = catalogue_copy
    cat.edit(AT03, old, old.replace("keepdim:", "keepdims:"))
    line = cat.line(AT03, "keepdims:")
    col = cat.text(AT03).splitlines()[line - 1].index("keepdims") + 1
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, line, col)
    assert "'keepdims'" in text
    assert "valid keys: dim, in, keepdim, note, op, out, when" in text
    assert "did you mean 'keepdim'?" in text


def test_unknown_top_level_key(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT05, "tags: [quant]", "tags: [quant]\ntitel: oops")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT05, cat.line(AT05, "titel:"), 1)
    assert "unknown top-level key 'titel'" in text and "did you mean 'title'" in text


def test_unknown_key_in_a_skeleton_loop(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK04, "  candidates: [8, 4, 2, 1]", "  candidate: [8, 4, 2, 1]")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, SK04, cat.line(SK04, "candidate:"), 3)
    assert "loop: unknown key 'candidate'" in text and "did you mean 'candidates'" in text


def test_unknown_key_in_a_stage_item_and_a_call(cli, catalogue_copy):
    """Tags of the tagged unions (``use``, ``call``) are also real keys: the right key is named."""
    cat = catalogue_copy
    cat.edit(AT10, "    as: linear\n", "    as: linear\n    bnd: {}\n")
    cat.edit(AT10, "        as: norm\n", "        as: norm\n        param: {}\n")
    run = validate(cli, cat)
    assert run.codes() == ["card-schema", "card-schema"], run.stderr
    first, second = (t for t, _ in run.problems)
    assert_at(first, cat, AT10, cat.line(AT10, "param: {}"), 9)
    assert "stages[0].ops[0]: unknown key 'param'" in first and "did you mean 'params'" in first
    assert_at(second, cat, AT10, cat.line(AT10, "bnd: {}"), 5)
    assert "stages[1]: unknown key 'bnd'" in second and "did you mean 'bind'" in second


def test_wrong_type(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "dim: -1, keepdim: true, out: ss", "dim: last, keepdim: true, out: ss")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "dim: last"))
    assert "stages[1].ops[2].dim" in text and "integer" in text and "'last'" in text


def test_wrong_type_of_a_parameter_default(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "    type: bool\n    default: true", "    type: bool\n    default: 3")
    text = only(validate(cli, cat), "card-schema")
    assert "params.has_gamma" in text and "true/false" in text
    assert text.startswith(f"{cat.path(AT03)}:")


def test_list_instead_of_scalar_is_one_problem(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "tags: [norm]", "tags: norm")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "tags: norm"), 7)


def test_default_outside_its_choices(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "default: rsqrt", "default: rsqrtt")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "default: rsqrtt"))
    assert "'rsqrtt'" in text and "rsqrt, sqrt_div" in text and "did you mean 'rsqrt'?" in text


def test_enum_field_outside_its_values(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "{op: cast, in: x, to: FP32, out: xf,", "{op: cast, in: x, to: FP23, out: xf,")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "to: FP23"))
    assert "must be one of BF16, FP16, FP32" in text and "did you mean 'FP32'?" in text


def test_wrong_kind(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT05, "kind: atom", "kind: atm")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT05, 2)
    assert "did you mean 'atom'" in text


def test_unknown_op_with_did_you_mean(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "{op: sqrt, in: var", "{op: sqrtt, in: var")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "op: sqrtt"))
    assert "unknown op 'sqrtt'" in text and "did you mean 'sqrt'?" in text


def test_operand_of_the_wrong_form_is_one_problem(cli, catalogue_copy):
    """A union (name | {scalar} | {param}) reports the member the value was meant to be, once."""
    cat = catalogue_copy
    cat.edit(AT03, '{scalar: "1/D"}', '{scalr: "1/D"}')
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "scalr"))
    assert "unknown key 'scalr'" in text and "did you mean 'scalar'" in text


def test_bad_expression(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, '{scalar: "1/D"}', '{scalar: "1/(D"}')
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, '"1/(D"'))
    assert "1/(D" in text


def test_rename_says_the_new_name(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "flow: [V, C]", "flow_pattern: [V, C]")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT10, cat.line(AT10, "flow_pattern:"), 1)
    assert "'flow_pattern' was renamed 'flow'" in text


def test_rename_of_description(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT05, "summary: >-", "description: >-")
    text = only(validate(cli, cat), "card-schema")
    assert "'description' was renamed 'summary'" in text


def test_clamp_keys_read_as_what_they_do(cli, catalogue_copy):
    """``min: BS`` rendered PyPTO's ``.min(BS)`` — an upper bound — and read backwards: the keys
    are ``at_most`` / ``at_least``, and the old spelling names the new one."""
    cat = catalogue_copy
    sk01 = "skeletons/SK-01-online-flash-attention.yaml"
    cat.edit(sk01, "at_most: BS", "min: BS")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, sk01, cat.line(sk01, "min: BS"))
    assert "'min' was renamed 'at_most'" in text


# --- YAML errors -------------------------------------------------------------------------------------


def test_broken_yaml_has_file_line_col(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "tags: [norm]", "tags: [norm")
    text = only(validate(cli, cat), "yaml-syntax")
    start = cat.line(AT03, "tags: [norm")
    prefix = f"{cat.path(AT03)}:"
    assert text.startswith(prefix)
    line, col = text[len(prefix):].split(":")[:2]
    assert start <= int(line) <= start + 3 and int(col) >= 1


def test_bad_indentation_is_yaml_syntax(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "    type: enum\n", "    type: enum\n   doc2: x\n")
    text = only(validate(cli, cat), "yaml-syntax")
    assert text.startswith(f"{cat.path(AT03)}:")


def test_duplicate_yaml_key(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "  rsqrt_mode:\n", "  has_gamma:\n    type: bool\n    default: false\n  rsqrt_mode:\n")
    text = only(validate(cli, cat), "yaml-syntax")
    assert_at(text, cat, AT03, cat.line(AT03, "  has_gamma:", nth=2), 3)
    assert "duplicate key 'has_gamma'" in text


def test_empty_card_file(cli, catalogue_copy):
    cat = catalogue_copy
    cat.write(AT05, "")
    text = only(validate(cli, cat), "card-schema")
    assert text.startswith(f"{cat.path(AT05)}:")


# --- ids -----------------------------------------------------------------------------------------------


def test_duplicate_card_id(cli, catalogue_copy):
    cat = catalogue_copy
    shutil.copy(cat.path(AT05), cat.path("atoms/AT-05-again.yaml"))
    text = only(validate(cli, cat), "duplicate-id")
    first, second = sorted([str(cat.path(AT05)), str(cat.path("atoms/AT-05-again.yaml"))])
    assert text.startswith(f"{second}:1:5:") and first in text  # the later file is the duplicate


def test_id_not_matching_the_file_name(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT05, "id: AT-05", "id: AT-07")
    text = only(validate(cli, cat), "card-id")
    assert_at(text, cat, AT05, 1, 5)
    assert "AT-07" in text and "AT-05-int8-quant.yaml" in text


# --- references ------------------------------------------------------------------------------------------


def test_dangling_depends_on(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "depends_on: [AT-03, AT-09]", "depends_on: [AT-03, AT-09, AT-99]")
    text = only(validate(cli, cat), "unknown-card")
    line = cat.line(AT10, "AT-99")
    assert_at(text, cat, AT10, line, cat.text(AT10).splitlines()[line - 1].index("AT-99") + 1)
    assert "'AT-99'" in text and "did you mean 'AT-09'?" in text


def test_call_of_an_unknown_atom(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "      - call: AT-03", "      - call: AT-33")
    text = only(validate(cli, cat), "unknown-card")
    assert_at(text, cat, AT10, cat.line(AT10, "call: AT-33"))
    assert "'AT-33'" in text and ("did you mean 'AT-03'?" in text or "did you mean 'AT-13'?" in text)


def test_use_of_an_unknown_atom_in_a_skeleton(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK04, "  - use: AT-09", "  - use: AT-90")
    run = validate(cli, cat)
    assert set(run.codes()) == {"unknown-card"}, run.stderr
    assert_at(run.problems[0][0], cat, SK04, cat.line(SK04, "use: AT-90"))


def test_call_not_listed_in_depends_on(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "depends_on: [AT-03, AT-09]", "depends_on: [AT-09]")
    text = only(validate(cli, cat), "unknown-card")
    assert_at(text, cat, AT10, cat.line(AT10, "call: AT-03"))
    assert "depends_on" in text


def test_dependency_cycle_is_reported_once(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "depends_on: []", "depends_on: [AT-10]")
    text = only(validate(cli, cat), "dependency-cycle")
    assert "AT-03 -> AT-10 -> AT-03" in text or "AT-10 -> AT-03 -> AT-10" in text


def test_unknown_constraint_id(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "constraints: [C-API-02,", "constraints: [C-API-20,")
    text = only(validate(cli, cat), "unknown-constraint")
    assert_at(text, cat, AT10, cat.line(AT10, "C-API-20"))
    assert "'C-API-20'" in text and "did you mean" in text


# --- predicates ------------------------------------------------------------------------------------------


def test_predicate_reading_an_unknown_parameter(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "out: rstd, when: {rsqrt_mode: rsqrt}", "out: rstd, when: {rsqrt_mod: rsqrt}")
    text = only(validate(cli, cat), "bad-predicate")
    assert_at(text, cat, AT03, cat.line(AT03, "rsqrt_mod:"))
    assert "'rsqrt_mod'" in text and "did you mean 'rsqrt_mode'?" in text


def test_predicate_comparing_with_an_invalid_value(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "out: rstd, when: {rsqrt_mode: rsqrt}", "out: rstd, when: {rsqrt_mode: rsqtr}")
    text = only(validate(cli, cat), "bad-predicate")
    assert_at(text, cat, AT03, cat.line(AT03, "rsqtr"))
    assert "'rsqtr'" in text and "rsqrt, sqrt_div" in text and "did you mean 'rsqrt'?" in text


def test_predicate_on_a_bool_shows_yaml_spelling(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "out: y, when: {has_gamma: true}", "out: y, when: {has_gamma: yes_please}")
    text = only(validate(cli, cat), "bad-predicate")
    assert "valid values: true, false" in text


def test_malformed_predicate_is_a_schema_error(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "out: rstd, when: {rsqrt_mode: rsqrt}", "out: rstd, when: {any: []}")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "{any: []}"))


# --- flows -----------------------------------------------------------------------------------------------


def test_name_used_before_it_is_defined(cli, catalogue_copy):
    cat = catalogue_copy
    mul = "      - {op: mul, in: [xf, xf], out: sq}\n"
    sum_ = '      - {op: sum, in: sq, dim: -1, keepdim: true, out: ss, note: "C-API-01: sum on FP32"}\n'
    cat.edit(AT03, mul + sum_, sum_ + mul)
    text = only(validate(cli, cat), "undefined-name")
    assert_at(text, cat, AT03, cat.line(AT03, "{op: sum, in: sq,"))
    assert "'sq' is used before it is defined" in text


def test_misspelt_name_in_a_flow(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "{op: mul, in: [xf, xf], out: sq}", "{op: mul, in: [xf, xff], out: sq}")
    text = only(validate(cli, cat), "undefined-name")  # once, not once per card built on AT-03
    assert_at(text, cat, AT03, cat.line(AT03, "xff"))
    assert "'xff'" in text and "did you mean 'xf'?" in text


def test_illegal_dtype_for_an_op_on_a_platform(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(
        AT03,
        "      - {op: sum, in: sq,",
        "      - {op: cast, in: sq, to: BF16, out: sq_b}\n      - {op: sum, in: sq_b,",
    )
    run = validate(cli, cat)
    assert set(run.codes()) == {"dtype-illegal"}, run.stderr
    line = cat.line(AT03, "{op: sum, in: sq_b,")
    for text, _ in run.problems:
        assert_at(text, cat, AT03, line)
        assert "sum" in text and "BF16" in text
    assert len(run.problems) <= 2  # at most once per platform, not once per card and combination


def test_declared_flow_not_matching_the_stages(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "flow: [V, C]", "flow: [V, V, C]")
    text = only(validate(cli, cat), "flow-mismatch")
    assert_at(text, cat, AT10, cat.line(AT10, "flow: [V, V, C]"))


def test_declared_skeleton_flow_not_matching_the_stages(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "flow: [V1, C1]", "flow: [C1, V1]")
    text = only(validate(cli, cat), "flow-mismatch")
    assert_at(text, cat, SK03, cat.line(SK03, "flow: [C1, V1]"))


def test_vector_op_in_a_cube_stage(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "  - label: rmsnorm\n    unit: V", "  - label: rmsnorm\n    unit: C")
    run = validate(cli, cat)
    assert "flow-mismatch" in run.codes()
    assert run.problems[0][0].startswith(f"{cat.path(AT03)}:")


# --- performance options -----------------------------------------------------------------------------------


def test_runtime_option_out_of_range(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "key: stitch_function_max_num\n      value: 128", "key: device_sched_mode\n      value: 7")
    text = only(validate(cli, cat), "bad-option")
    assert_at(text, cat, AT10, cat.line(AT10, "value: 7"))
    assert "device_sched_mode" in text and "7" in text


def test_unknown_pass_option_key(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "key: vec_nbuffer_setting", "key: vec_nbuffer_settings")
    text = only(validate(cli, cat), "bad-option")
    assert_at(text, cat, AT10, cat.line(AT10, "vec_nbuffer_settings"))
    assert "'vec_nbuffer_settings'" in text and "vec_nbuffer_setting" in text


def test_bad_operation_option(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "    - key: combine_axis\n      value: true", "    - key: combine_axes\n      value: true")
    text = only(validate(cli, cat), "bad-option")
    assert_at(text, cat, AT10, cat.line(AT10, "combine_axes"))
    assert "did you mean 'combine_axis'?" in text


def test_slot_default_for_an_unknown_parameter(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK04, "slot_defaults:\n  weight_layout: kn", "slot_defaults:\n  weight_layut: kn")
    text = only(validate(cli, cat), "unknown-param")
    assert_at(text, cat, SK04, cat.line(SK04, "weight_layut"))
    assert "did you mean 'weight_layout'?" in text


def test_slot_default_outside_the_choices(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK04, "slot_defaults:\n  weight_layout: kn", "slot_defaults:\n  weight_layout: nkk")
    text = only(validate(cli, cat), "bad-param-value")
    assert "nk, kn" in text


# --- several problems, paths ------------------------------------------------------------------------------------


def test_several_load_problems_in_one_run_are_all_reported(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "{op: sqrt, in: var", "{op: sqrtt, in: var")
    cat.edit(AT05, "tags: [quant]", "tags: [quant")
    cat.edit(SK04, "  candidates: [8, 4, 2, 1]", "  candidate: [8, 4, 2, 1]")
    run = validate(cli, cat)
    assert sorted(run.codes()) == ["card-schema", "card-schema", "yaml-syntax"], run.stderr
    files = {text.split(":")[0] for text, _ in run.problems}
    assert files == {str(cat.path(AT03)), str(cat.path(AT05)), str(cat.path(SK04))}
    assert "3 problems" in run.stderr


def test_several_check_problems_in_one_run_are_all_reported(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT10, "constraints: [C-API-02,", "constraints: [C-API-20,")
    cat.edit(SK03, "key: stitch_function_max_num\n      value: 128", "key: stitch_function_max_num\n      value: 0")
    cat.edit(AT09, "depends_on: [AT-05, AT-06, AT-08, AT-22]", "depends_on: [AT-05, AT-06, AT-08, AT-22, SK-99]")
    run = validate(cli, cat)
    assert sorted(run.codes()) == ["bad-option", "unknown-card", "unknown-constraint"], run.stderr


def test_several_flow_problems_in_different_cards(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT05, "{op: abs, in: xf, out: ax}", "{op: abs, in: xg, out: ax}")
    cat.edit(AT03, "{op: mul, in: [xf, xf], out: sq}", "{op: mul, in: [xf, xff], out: sq}")
    run = validate(cli, cat)
    assert run.codes() == ["undefined-name", "undefined-name"], run.stderr
    assert_at(run.problems[0][0], cat, AT03, cat.line(AT03, "xff"))
    assert_at(run.problems[1][0], cat, AT05, cat.line(AT05, "in: xg"))


def test_missing_path_on_the_command_line(cli, tmp_path):
    run = cli("validate", str(tmp_path / "nope"))
    run.assert_bad_input()
    assert run.codes() == ["bad-path"]
    assert "nope" in run.problems[0][0]


# --- the other files of the catalogue -------------------------------------------------------------------


def test_unknown_key_in_the_constraint_catalogue(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit("constraints.yaml", "    level: must\n", "    levl: must\n")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, "constraints.yaml", cat.line("constraints.yaml", "levl:"), 5)
    assert "valid keys: consequence, id, level, rule, source" in text and "did you mean 'level'?" in text


def test_constraint_defined_twice(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit("constraints.yaml", "  - id: C-API-02", "  - id: C-API-01")
    text = only(validate(cli, cat), "duplicate-id")
    assert_at(text, cat, "constraints.yaml", cat.line("constraints.yaml", "id: C-API-01", nth=2))


def test_broken_platform_profile_has_its_line(cli, catalogue_copy):
    cat = catalogue_copy
    text = cat.text("platforms/a2a3.yaml")
    first = next(ln for ln in text.splitlines() if ":" in ln and not ln.lstrip().startswith("#"))
    cat.edit("platforms/a2a3.yaml", first, first.replace(":", ": :", 1))
    problem = only(validate(cli, cat), "yaml-syntax")
    assert problem.startswith(f"{cat.path('platforms/a2a3.yaml')}:{cat.line('platforms/a2a3.yaml', first.replace(':', ': :', 1))}:")


# --- more card rules -------------------------------------------------------------------------------------


def test_skeleton_with_an_atom_id(cli, catalogue_copy):
    cat = catalogue_copy
    cat.write("skeletons/AT-12-odd.yaml", cat.text(SK03).replace("id: SK-03", "id: AT-12"))
    text = only(validate(cli, cat), "card-id")
    assert_at(text, cat, "skeletons/AT-12-odd.yaml", 1, 5)
    assert "SK-" in text


def test_param_ref_to_an_unknown_parameter(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit("atoms/AT-11-norm-quant-linear.yaml", "quant_mode: {param: quant_mode}", "quant_mode: {param: quant_mod}")
    text = only(validate(cli, cat), "unknown-param")
    assert_at(text, cat, "atoms/AT-11-norm-quant-linear.yaml", cat.line("atoms/AT-11-norm-quant-linear.yaml", "quant_mod}"))
    assert "did you mean 'quant_mode'?" in text


def test_param_ref_of_a_non_dtype_parameter_used_as_a_dtype(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "    dtype: {param: out_dtype}\n    role: output\n    tolerance:", "    dtype: {param: has_bias}\n    role: output\n    tolerance:")
    text = only(validate(cli, cat), "bad-param-value")
    assert_at(text, cat, SK03, cat.line(SK03, "{param: has_bias}"))
    assert "true/false" in text


def test_empty_dtype_list(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "x: {shape: [T, K], dtype: BF16}", "x: {shape: [T, K], dtype: []}")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, SK03, cat.line(SK03, "dtype: []"))


def test_flow_entries_are_units(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT05, "flow: [V]", 'flow: [""]')
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT05, cat.line(AT05, 'flow: [""]'))
    assert "V or C" in text


def test_name_pattern_in_words(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "{op: mul, in: [xf, xf], out: sq}", "{op: mul, in: [xf, xf], out: 2sq}")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "out: 2sq"))
    assert "must be a name" in text and "'2sq'" in text


# --- values a card's own rules reject (caught by validate, not when a kernel is built) ---------------------


def test_parameter_default_outside_its_own_bounds(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "    default: 1.0e-6\n    gt: 0", "    default: -1.0\n    gt: 0")
    text = only(validate(cli, cat), "card-schema")
    line = cat.line(AT03, "default: -1.0")
    assert_at(text, cat, AT03, line, cat.text(AT03).splitlines()[line - 1].index("-1.0") + 1)
    assert "params.eps.default" in text and "greater than 0" in text and "gt: 0" in text and "-1.0" in text


def test_int_parameter_default_outside_its_choices(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT03, "  eps:\n", "  rows:\n    type: int\n    choices: [1, 2, 4]\n    default: 3\n  eps:\n")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, AT03, cat.line(AT03, "default: 3"))
    assert "params.rows.default" in text and "1, 2, 4" in text


def test_dim_multiple_of_zero(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "doc: Output features, multiple_of: 16}", "doc: Output features, multiple_of: 0}")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, SK03, cat.line(SK03, "multiple_of: 0"))
    assert "dims.N.multiple_of" in text and "greater than 0" in text


def test_dim_default_breaking_its_own_multiple_of(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "K: {default: 4096,", "K: {default: 4095,")
    text = only(validate(cli, cat), "card-schema")
    line = cat.line(SK03, "default: 4095")
    assert_at(text, cat, SK03, line, cat.text(SK03).splitlines()[line - 1].index("4095") + 1)
    assert "dims.K.default" in text and "multiple of 64" in text and "4095" in text and "4096" in text


def test_loop_candidates_must_be_positive(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "candidates: [128, 64, 32, 16, 8, 1]", "candidates: [128, 0, 32, -16, 8, 1]")
    run = validate(cli, cat)
    assert run.codes() == ["card-schema", "card-schema"], run.stderr
    line = cat.line(SK03, "candidates: [128, 0,")
    (zero, _), (negative, _) = run.problems
    assert_at(zero, cat, SK03, line)
    assert "loop.candidates[1]" in zero and "greater than 0" in zero and "got 0" in zero
    assert "loop.candidates[3]" in negative and "got -16" in negative


def test_loop_candidates_without_duplicates(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "candidates: [128, 64, 32, 16, 8, 1]", "candidates: [128, 64, 32, 64, 8, 1]")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, SK03, cat.line(SK03, "candidates: [128, 64, 32, 64,"))
    assert "loop.candidates" in text and "64 more than once" in text


def test_skeleton_tile_naming_an_unknown_dim(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "      vec: [4, K]", "      vec: [4, Z]")
    text = only(validate(cli, cat), "bad-expression")
    line = cat.line(SK03, "vec: [4, Z]")
    assert_at(text, cat, SK03, line, cat.text(SK03).splitlines()[line - 1].index("Z") + 1)
    assert "'proj.rmsnorm'" in text and "unknown dim 'Z'" in text and "valid dims: K, N, T, tile" in text


def test_atom_tile_naming_an_unknown_dim(cli, catalogue_copy):
    """An atom's tile names the dims of its inputs (bound to the caller's when it is spliced)."""
    cat = catalogue_copy
    cat.edit(AT09, "      vec: [4, K/32, 32]", "      vec: [4, KK/32, 32]")
    text = only(validate(cli, cat), "bad-expression")
    assert_at(text, cat, AT09, cat.line(AT09, "vec: [4, KK/32, 32]"))
    assert "unknown dim 'KK'" in text and "valid dims: M, K, N" in text and "did you mean 'K'?" in text


# --- regimes and in-place caches (issue 13) -----------------------------------------------------------

SK05 = "skeletons/SK-05-fused-pre-attn.yaml"


def test_a_regime_dim_bound_without_a_bound_is_refused_at_its_line(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "dims: {N: {le: 64}, K: {ge: 16384}}", "dims: {N: {}, K: {ge: 16384}}")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, SK03, cat.line(SK03, "dims: {N: {}"))
    assert "give at least one of ge, gt, le, lt" in text


def test_a_regime_with_an_unknown_key_names_the_valid_ones(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "    unroll: [16]\n", "    unrol: [16]\n")
    text = validate(cli, cat).problems[0][0]
    assert "'unrol'" in text and "did you mean 'unroll'" in text


def test_index_into_must_name_a_cache_output(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK05, "    index_into: k_cache", "    index_into: q")
    text = only(validate(cli, cat), "card-schema")
    assert_at(text, cat, SK05, cat.line(SK05, "index_into: q"))
    assert "must name an output with role: cache" in text and "k_cache, v_cache" in text


# --- expressions that only fail away from the defaults (issue 35) ---------------------------------


@pytest.mark.parametrize(
    "axis, says",
    [("K/0", "division by zero"), ("K/5", "positive whole number"), ("Q/32", "unknown name 'Q'"), ("K-4096", "positive whole number")],
)
def test_a_skeleton_shape_under_a_non_default_parameter_is_checked_by_validate(cli, catalogue_copy, axis, says):
    # the MX scale's shape is only evaluated with quant_mode=mxfp8: validate used to pass these and
    # `new --param quant_mode=mxfp8` crashed in the resolver
    cat = catalogue_copy
    cat.edit(SK03, "shape: [N, K/32]", f"shape: [N, {axis}]")
    text = only(validate(cli, cat), "bad-expression")
    assert_at(text, cat, SK03, cat.line(SK03, f"shape: [N, {axis}]"))
    assert says in text and "weight_scale" in text


def test_a_number_too_long_for_python_is_one_yaml_problem(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK03, "default: 4096", "default: " + "9" * 5000)
    text = only(validate(cli, cat), "yaml-syntax")
    assert_at(text, cat, SK03, cat.line(SK03, "9" * 100))
    assert "5000 characters" in text


SK06 = "skeletons/SK-06-ffn-swiglu.yaml"


def test_a_call_merged_into_a_stage_of_another_unit_is_a_flow_mismatch(cli, catalogue_copy):
    """A merge stage's ops join the stage before it: a call computes, so a Vector call merged into
    the Cube's down projection is refused at its line (it used to crash the check)."""
    cat = catalogue_copy
    cat.edit(
        SK06,
        "    when: {down_proj: true}\n    ops:\n      - {op: assemble, in: y_t",
        "    when: {down_proj: true}\n    ops:\n      - {call: AT-06, as: dq_z, bind: {x_int: y_t, scale_a: y_t, scale_b: y_t}, out: {y: y_z}}\n"
        "      - {op: assemble, in: y_t",
    )
    run = validate(cli, cat)
    assert "flow-mismatch" in run.codes() and "Traceback" not in run.stderr, run.stderr
    assert "merging a V stage into the C stage 'down'" in run.stderr, run.stderr


# --- the MoE router's ops (AT-15) and the static expert loop (SK-07) ---------------------------------

AT15 = "atoms/AT-15-expert-gating.yaml"
SK07 = "skeletons/SK-07-moe.yaml"


def test_topk_k_larger_than_its_axis(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT15, "{op: topk, in: c3, k: 2, out: two}", "{op: topk, in: c3, k: 2*E, out: two}")
    run = validate(cli, cat)  # caught where the dims are known: at each SK-07 instance of the manifest
    assert set(run.codes()) == {"shape-mismatch"}, run.stderr
    text = run.problems[0][0]
    assert_at(text, cat, AT15, cat.line(AT15, "k: 2*E"))
    assert "topk: k = 32 outside 1..4, the extent of dim -1 of [tile, G, E // G]" in run.stderr


def test_where_on_a_float_condition(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(AT15, "{op: where, in: [chosen, s, {scalar: 0.0}], out: w}", "{op: where, in: [masked, s, {scalar: 0.0}], out: w}")
    text = only(validate(cli, cat), "dtype-illegal")
    assert_at(text, cat, AT15, cat.line(AT15, "in: [masked, s,"))
    assert "BOOL mask" in text


def test_static_loop_over_a_run_time_extent(cli, catalogue_copy):
    cat = catalogue_copy
    cat.edit(SK07, "{op: loop, static: true, extent: E,", "{op: loop, static: true, extent: tile,")
    text = only(validate(cli, cat), "bad-expression")
    assert_at(text, cat, SK07, cat.line(SK07, "static: true, extent: tile"))
    assert "static loop" in text and "constant extent" in text

