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
