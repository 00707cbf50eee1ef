"""Blocks MrBayes does not read are skipped with its note; only data/characters/taxa/trees/mrbayes run.

Each case runs here on mbgpu and, where ../shared is present, on MrBayes 3.2.7a (bin/mb) itself.
"""
import pytest

from mbgpu.errors import NexusError
from tests.helpers import DNA4, interp_for, output
from tests.test_nexus.peer import run_mb, run_mbgpu

# A charset defined inside the block shows whether its commands run: MrBayes prints "Defining charset
# called 'first'" when it executes one; mbgpu stores it in settings.charsets.
BLOCK = "begin %s;\n  charset first = 1-4;\n  taxset pair = A B;\nend;\n"
FOREIGN = ["sets", "assumptions", "paup", "notes", "codons", "mesquite", "foo", "SeTs"]


def _file(kind: str) -> str:
    return DNA4 + BLOCK % kind + "begin mrbayes;\n  charset second = 5-8;\nend;\n"


def _mbgpu(kind, tmp_path, monkeypatch) -> tuple[bool, str]:
    it, screen = run_mbgpu(tmp_path, "b.nex", _file(kind), monkeypatch)
    assert "second" in it.settings.charsets, "the mrbayes block after it still runs"
    return "first" in it.settings.charsets, screen


@pytest.mark.parametrize("kind", FOREIGN)
def test_foreign_block_is_skipped_with_mrbayes_note(kind, tmp_path, monkeypatch):
    # Established with bin/mb (test_same_as_mrbayes below repeats it): MrBayes 3.2.7a reads only
    # data, characters, taxa, trees and mrbayes blocks; it executes nothing of a sets, assumptions or
    # paup block (their charsets stay undefined) and prints `   Skipping "NAME" block`, NAME as written.
    executed, screen = _mbgpu(kind, tmp_path, monkeypatch)
    assert not executed
    assert '\n   Skipping "%s" block\n' % kind in screen


def test_mrbayes_block_is_executed(tmp_path, monkeypatch):
    executed, screen = _mbgpu("mrbayes", tmp_path, monkeypatch)
    assert executed and "Skipping" not in screen


@pytest.mark.parametrize("kind", FOREIGN + ["mrbayes"])
def test_same_as_mrbayes(kind, mb, tmp_path, monkeypatch):
    (tmp_path / "g").mkdir()
    (tmp_path / "m").mkdir()
    got_executed, got_screen = _mbgpu(kind, tmp_path / "g", monkeypatch)
    r = run_mb(mb, tmp_path / "m", "b.nex", _file(kind))
    assert r.returncode == 0, r.stdout[-2000:]
    assert "Defining charset called 'second'" in r.stdout
    want_executed = "Defining charset called 'first'" in r.stdout
    want_note = '   Skipping "%s" block' % kind in r.stdout.splitlines()
    assert (got_executed, '   Skipping "%s" block' % kind in got_screen.splitlines()) == (want_executed, want_note)
    assert want_executed == (kind == "mrbayes")


TRICKY = """begin notes;
  text taxon=A text='this is the end; of it';
  [ a comment [nested end;] end; ]
  text "end;" source=inline;
  text x=ending; endtell; tell It; setTitle 'Taxa; (the matrix) [no comment]';
end;
"""


def test_quoted_end_and_nested_comments_do_not_end_a_skipped_block(tmp_path, monkeypatch):
    it, screen = run_mbgpu(tmp_path, "t.nex", DNA4 + TRICKY + "begin mrbayes; charset second = 5-8; end;\n",
                           monkeypatch)
    assert screen.count("Skipping") == 1 and "second" in it.settings.charsets


def test_mrbayes_ends_a_skipped_block_at_any_word_end(mb, tmp_path):
    """Pins the one place we read differently on purpose: MrBayes 3.2.7a ends a skipped block at the
    first word `end` even inside quotes or a comment, then fails on the rest of it (mbgpu reads on)."""
    r = run_mb(mb, tmp_path, "t.nex", DNA4 + TRICKY + "begin mrbayes; charset second = 5-8; end;\n")
    assert r.returncode == 1 and 'Could not find command "of"' in r.stdout


def test_endblock_closes_and_unclosed_block_is_an_error(tmp_path):
    assert "Skipping" in output(interp_for(DNA4 + "begin paup; hsearch; endblock;\n", tmp_path))
    with pytest.raises(NexusError, match="block 'paup' is not closed with end;") as e:
        interp_for(DNA4 + "begin paup;\n hsearch;\n", tmp_path, "open.nex")
    assert e.value.one_line().startswith(str(tmp_path / "open.nex") + ":12:1: error:")


def test_blocks_at_the_prompt(tmp_path):
    it = interp_for(DNA4, tmp_path)
    it.run_text("begin sets; charset first = 1-4; end;")
    assert "first" not in it.settings.charsets and 'Skipping "sets" block' in output(it)
    it.run_text("begin mrbayes; charset second = 5-8; end;")
    assert "second" in it.settings.charsets
    with pytest.raises(NexusError, match="'end' without a matching begin"):
        it.run_text("end;")


OUTSIDE = DNA4 + "charset first = 1-4;\nbegin mrbayes;\n  charset second = 5-8;\nend;\ncharset third = 1-2;\n"


def test_commands_outside_any_block_run_as_mrbayes_commands(tmp_path, monkeypatch):
    """MrBayes runs a command that stands outside any block as if typed at its prompt (mbgpu once
    stopped with "expected 'begin NAME;'"); a files that puts `execute data.nex;` first is common."""
    it, _ = run_mbgpu(tmp_path, "o.nex", OUTSIDE, monkeypatch)
    assert {"first", "second", "third"} <= set(it.settings.charsets)


def test_commands_outside_any_block_in_mrbayes(mb, tmp_path):
    r = run_mb(mb, tmp_path, "o.nex", OUTSIDE)
    assert r.returncode == 0, r.stdout[-2000:]
    assert all("Defining charset called '%s'" % n in r.stdout for n in ("first", "second", "third"))


def test_a_command_after_execute_on_its_line_is_refused(tmp_path, mb_double):
    """MrBayes 3.2.7a skips the rest of the line after `execute` (its lset below is never run: Nst stays
    1); mbgpu refuses such a command at its place instead of running it."""
    import shutil
    import subprocess

    from mbgpu.errors import NotImplementedYet
    from tests.conftest import TEST_DATA
    from tests.helpers import interp_for

    shutil.copy(TEST_DATA / "primates.nex", tmp_path / "primates.nex")
    text = "#NEXUS\nbegin mrbayes; execute primates.nex; lset nst=2;\nshowmodel;\nend;\n"
    (tmp_path / "mb.nex").write_text(text)
    done = subprocess.run([str(mb_double), "mb.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "Setting Nst to 2" not in done.stdout and "Nst       = 1" in done.stdout
    with pytest.raises(NotImplementedYet) as e:
        interp_for(text, tmp_path, "ours.nex")
    assert ":2:38: error: a command after 'execute' on the same line" in e.value.one_line()
    interp_for(text.replace("primates.nex; lset", "primates.nex;\nlset"), tmp_path, "next_line.nex")
