"""Folders docs build owns whole: nothing a user put there is ever deleted (output.owned)."""

from __future__ import annotations

import os

import pytest

from pattern_gen.output.owned import claim, replace_owned, sync_owned
from pattern_gen.vocab.errors import PatternGenError, Problem

MARK = ".pattern-gen-test"


def test_a_folder_with_files_of_somebody_else_is_refused_and_kept(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "handbook.md").write_text("ours\n")
    with pytest.raises(PatternGenError) as info:
        sync_owned(folder, {"index.md": "x"}, MARK, "the docs sources")
    assert info.value.code == "bad-path" and "nothing was deleted" in str(info.value)
    assert (folder / "handbook.md").read_text() == "ours\n" and not (folder / "index.md").exists()


def test_only_files_written_last_time_are_removed(tmp_path):
    folder = tmp_path / "docs"
    assert sync_owned(folder, {"a.md": "1", "b/c.md": "2"}, MARK, "docs") == (2, 0, 0)
    (folder / "notes.txt").write_text("a user's file beside ours\n")
    assert sync_owned(folder, {"a.md": "1"}, MARK, "docs") == (0, 1, 1)
    assert not (folder / "b" / "c.md").exists() and (folder / "notes.txt").is_file()


def test_a_symbolic_link_is_never_written_through(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("x")
    link = tmp_path / "docs"
    os.symlink(target, link)
    with pytest.raises(PatternGenError, match="symbolic link"):
        claim(link, MARK, "docs")
    with pytest.raises(PatternGenError, match="symbolic link"):
        replace_owned(link, MARK, "the site", lambda staging: staging.mkdir())
    assert (target / "precious").is_file()


def test_replace_owned_swaps_in_a_complete_build_and_keeps_the_old_one_on_failure(tmp_path):
    site = tmp_path / "site"

    def build(text):
        def fill(staging):
            staging.mkdir()
            (staging / "index.html").write_text(text)
        return fill

    replace_owned(site, MARK, "the site", build("one"))
    assert (site / "index.html").read_text() == "one" and (site / MARK).is_file()

    def broken(staging):
        staging.mkdir()
        raise PatternGenError(Problem("bad-path", "mkdocs failed"))

    with pytest.raises(PatternGenError):
        replace_owned(site, MARK, "the site", broken)
    assert (site / "index.html").read_text() == "one"
    replace_owned(site, MARK, "the site", build("two"))
    assert (site / "index.html").read_text() == "two"


def test_docs_build_refuses_a_users_folder_before_running_anything(cli, tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    user = tmp_path / "docs"
    user.mkdir()
    (user / "guide.md").write_text("hand-written\n")
    run = cli("docs", "build", "--out", str(user))
    run.assert_bad_input("bad-path")
    assert (user / "guide.md").read_text() == "hand-written\n" and [p.name for p in user.iterdir()] == ["guide.md"]
