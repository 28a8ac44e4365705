"""``docs build`` reads the generated instance files; a hand-broken one (bytes that are not UTF-8)
shows as it reads instead of ending the build in a UnicodeDecodeError (issue 35)."""

from __future__ import annotations

from pathlib import Path

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.docs.instance_pages import instance_page
from pattern_gen.output.instances import write_instance
from pattern_gen.plan.kernel_plan import Request


def test_an_undecodable_kernel_does_not_stop_the_page(tmp_path: Path) -> None:
    cat = load_catalogue([])
    plan, folder, _ = write_instance(cat, Request(skeleton="SK-03", atoms=("AT-10",), dims={"K": 256, "N": 128}), tmp_path)
    kernel = folder / "kernel.py"
    kernel.write_bytes(kernel.read_bytes() + b"\n# caf\xe9\n")
    page = instance_page(plan, folder, None, False)
    assert "caf\ufffd" in page


def test_the_page_does_not_depend_on_the_estimates_key_order(tmp_path: Path) -> None:
    """A fresh estimate and one read back from the cache (JSON, sorted keys) must render the same
    page, or `docs build` in a clean clone differs from the committed site (it did)."""
    cat = load_catalogue([])
    plan, folder, _ = write_instance(cat, Request(skeleton="SK-03", atoms=("AT-10",), dims={"K": 256, "N": 128}), tmp_path)
    fresh = {"T": 16, "e2e_us": 12.5, "tasks": 3, "passed": True, "utilization": {"cube": 0.5, "vector": 0.25, "aicore": 0.7},
             "per_label_us": {"b": 1.0, "a": 3.0, "c": 2.0}}
    cached = {k: (dict(sorted(v.items())) if isinstance(v, dict) else v) for k, v in sorted(fresh.items())}
    assert instance_page(plan, folder, fresh, False) == instance_page(plan, folder, cached, False)
