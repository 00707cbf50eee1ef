"""`taxa` + `characters` files (as Mesquite writes them) read as MrBayes 3.2.7a reads them.

The oracle tests run bin/mb (the `mb` fixture) on the same files and compare what it reports on screen
(taxa, characters, site patterns) and its Gen-0 lnL on a user tree. Where a comment states what MrBayes
does without running it, that was established by running bin/mb on the same text.
"""

import numpy as np
import pytest

from mbgpu.errors import DataError, MbgpuError
from tests.conftest import ROOT
from tests.helpers import interp_for, output
from tests.test_nexus.peer import gen0_lnl, number, run_mb, run_mbgpu

MESQUITE = ROOT / "tests" / "data" / "mesquite_dna.nex"

RUN = """#NEXUS
begin mrbayes;
  set autoclose=yes nowarn=yes quitonerror=yes;
  execute {data}
  set precision=15 scientific=no;
  {model}
  startvals tau={tree} V={tree};
  mcmc ngen=1 nruns=1 nchains=1 samplefreq=1 printfreq=1 diagnfreq=1000 filename=out;
end;
"""

STANDARD = """#NEXUS
begin taxa;
  dimensions ntax=5;
  taxlabels t1 t2 t3 t4 t5;
end;
begin characters;
  dimensions nchar=12;
  format datatype=standard symbols="012" interleave missing=? gap=-;
  %s
  matrix
  t1 010201
  t2 0112{01}1
  t3 1102?0
  t4 1-0110
  t5 200201

  t1 100221
  t2 10022(12)
  t3 011?01
  t4 0110-1
  t5 011000
  ;
end;
begin trees;
  tree user = ((t1:0.1,t2:0.2):0.05,t3:0.3,(t4:0.15,t5:0.25):0.1);
end;
"""
LABELS = "charstatelabels 1 wings / absent present, 2 legs / two four many, 3 'eye colour';"


def _side_by_side(mb, tmp_path, monkeypatch, data_name: str, data: str, model: str, tree: str):
    """Run the same files through mb and mbgpu (separate folders); returns (mb screen, mbgpu screen, folders)."""
    out = []
    for who in ("mb", "mbgpu"):
        folder = tmp_path / who
        folder.mkdir()
        (folder / data_name).write_text(data)
        run = RUN.format(data=data_name + ";\n", model=model, tree=tree)
        if who == "mb":
            r = run_mb(mb, folder, "run.nex", run)
            assert r.returncode == 0, r.stdout[-3000:]
            out.append(r.stdout)
        else:
            out.append(run_mbgpu(folder, "run.nex", run, monkeypatch)[1])
    return out[0], out[1], tmp_path / "mb", tmp_path / "mbgpu"


def _same_reading(mb_screen, our_screen, mb_dir, our_dir, patterns=True):
    assert number(r"Defining new set of (\d+) taxa", mb_screen) == \
        number(r"Defining new matrix with (\d+) taxa", our_screen)
    assert number(r"Defining new character matrix with (\d+) characters", mb_screen) == \
        number(r"Defining new matrix with \d+ taxa and (\d+) characters", our_screen)
    if patterns:
        assert number(r"Division 1 has (\d+) unique site patterns", mb_screen) == \
            number(r"Division 1 has (\d+) unique site patterns", our_screen)
    assert abs(gen0_lnl(mb_dir / "out.p") - gen0_lnl(our_dir / "out.p")) < 1e-3


def test_mesquite_file_matches_mrbayes(mb, tmp_path, monkeypatch):
    mb_screen, our_screen, mb_dir, our_dir = _side_by_side(
        mb, tmp_path, monkeypatch, MESQUITE.name, MESQUITE.read_text(), "lset nst=2;", "mesquite_tree")
    _same_reading(mb_screen, our_screen, mb_dir, our_dir)
    skipped = [line.strip() for line in mb_screen.splitlines() if "Skipping" in line]
    assert skipped == ['Skipping "ASSUMPTIONS" block', 'Skipping "MESQUITECHARMODELS" block',
                       'Skipping "MESQUITE" block']
    assert [line.strip() for line in our_screen.splitlines() if "Skipping" in line] == skipped


def test_mesquite_file_alone(tmp_path):
    it = interp_for(MESQUITE.read_text(), tmp_path, MESQUITE.name)
    m = it.settings.matrix
    assert m.taxa[:3] == ["Homo_sapiens", "Pan_paniscus", "Gorilla_gorilla"] and m.ntax == 8 and m.nchar == 72
    assert m.masks[3, 30] == 15 and m.masks[7, 71] == 15  # Pongo's gap, Cebus' trailing ???
    assert m.masks[6, 43] == 0b0101  # Papio's R = A or G
    assert it.settings.trees["mesquite_tree"].translate["8"] == "Cebus_capucinus"
    assert output(it).count("Skipping") == 3


def test_standard_symbols_interleave_match_mrbayes(mb, tmp_path, monkeypatch):
    # MrBayes warns that it ignores symbols= (default symbols 0-9 assumed): "012" reads the same either way.
    mb_screen, our_screen, mb_dir, our_dir = _side_by_side(
        mb, tmp_path, monkeypatch, "std.nex", STANDARD % "", "", "user")
    assert "does not support 'symbols'" in mb_screen
    # Not the pattern count: for standard data MrBayes' number includes its dummy (constant) patterns of
    # coding=variable, mbgpu's does not; the lnL on the same tree is the check that the matrix is the same.
    _same_reading(mb_screen, our_screen, mb_dir, our_dir, patterns=False)


TAXA4 = "#NEXUS\nbegin taxa; dimensions ntax=4; taxlabels A B C D; end;\n"
CHARS = "begin characters; dimensions %s; format datatype=dna;\nmatrix\n%s\n;\nend;\n"
ROWS = "A ACGTACGT\nB ACGTACGA\nC ACGTTCGA\nD ACGATCGA"
SHUFFLED = "C ACGTTCGA\nA ACGTACGT\nD ACGATCGA\nB ACGTACGA"
UNKNOWN = "A ACGTACGT\nB ACGTACGA\nX ACGTTCGA\nD ACGATCGA"
DATA4 = "begin data; dimensions ntax=4 nchar=8; format datatype=dna;\nmatrix\n" + ROWS + "\n;\nend;\n"
NO_LABELS = "#NEXUS\nbegin taxa; dimensions ntax=4; end;\n"
SHOW = "begin mrbayes; showmatrix; end;\n"

# What MrBayes 3.2.7a does with each file (the mbgpu tests below rely on these facts):
# name: (text, mb's exit status, words on mb's screen)
MRBAYES_FACTS = {
    "charstatelabels_refused": (STANDARD % LABELS, 1, 'Could not find command "charstatelabels"'),
    # rows are bound to taxlabels by position, labels ignored: taxon A silently gets row 1 (C's data) ...
    "rows_bound_by_position": (TAXA4 + CHARS % ("nchar=8", SHUFFLED) + SHOW, 0, "\n      A  ACGTTCGA\n"),
    # ... and an unknown row label is accepted without a word
    "unknown_label_accepted": (TAXA4 + CHARS % ("nchar=8", UNKNOWN) + SHOW, 0, "\n      C  ACGTTCGA\n"),
    "ntax_refused": ("#NEXUS\n" + CHARS % ("ntax=4 nchar=8", ROWS), 1, "You cannot define ntax in a characters block"),
    "newtaxa_refused": ("#NEXUS\n" + CHARS % ("newtaxa ntax=4 nchar=8", ROWS), 1,
                        'Could not find parameter "newtaxa"'),
    "data_forgets_taxa": (TAXA4.replace("A B C D", "P Q R S") + DATA4 + SHOW, 0, "Deleting previously defined taxa"),
    "taxa_forgets_matrix": ("#NEXUS\n" + DATA4 + TAXA4[7:] + SHOW, 1, "A character matrix must be defined first"),
    "no_labels_note": (NO_LABELS + DATA4, 0, "\n      Leaving taxa block without taxon labels being defined\n"),
    "no_labels_then_characters": (NO_LABELS + CHARS % ("nchar=8", ROWS), 1, "Number of taxa not defined"),
    "no_taxa_then_characters": ("#NEXUS\n" + CHARS % ("nchar=8", ROWS), 1, "Number of taxa not defined"),
}


@pytest.mark.parametrize("name", sorted(MRBAYES_FACTS))
def test_what_mrbayes_does(name, mb, tmp_path):
    text, status, words = MRBAYES_FACTS[name]
    r = run_mb(mb, tmp_path, "m.nex", text)
    assert (r.returncode, words in r.stdout) == (status, True), r.stdout[-1500:]


def test_charstatelabels_are_ignored(tmp_path):
    # MrBayes refuses the command (MRBAYES_FACTS): mbgpu reads more here, as for Mesquite's files.
    plain = interp_for(STANDARD % "", tmp_path, "a.nex").settings.matrix
    labelled = interp_for(STANDARD % LABELS, tmp_path, "b.nex").settings.matrix
    assert plain.taxa == labelled.taxa and np.array_equal(plain.masks, labelled.masks)
    assert plain.masks[1, 4] == 0b11 and plain.masks[1, 11] == 0b110  # {01} and (12)


@pytest.mark.parametrize("rows, message", [
    (SHUFFLED, r"matrix row 1 is 'C' but the taxa block has 'A' there: rows must follow the taxlabels order"),
    (UNKNOWN, "taxon 'X' is not in the taxa block"),
])
def test_rows_must_be_the_taxa_in_taxlabels_order(rows, message, tmp_path):
    # An error, because MrBayes would silently give these rows to other taxa (MRBAYES_FACTS).
    with pytest.raises(DataError, match=message):
        interp_for(TAXA4 + CHARS % ("nchar=8", rows), tmp_path)


def test_rows_in_order_wrapped_or_interleaved(tmp_path):
    wrapped = TAXA4 + CHARS % ("nchar=8", "A ACGT\n  ACGT\nB ACGTACGA\nC ACGT\nTCGA\nD ACGATCGA")
    m = interp_for(wrapped, tmp_path, "w.nex").settings.matrix
    assert m.taxa == ["A", "B", "C", "D"] and m.masks[2, 4] == 8
    inter = TAXA4 + ("begin characters; dimensions nchar=6; format datatype=dna interleave;\nmatrix\n"
                     "A ACG\nB ACG\nC ACG\nD ACG\n\nA TTT\nB TTA\nC TTC\nD TTG\n;\nend;\n")
    m = interp_for(inter, tmp_path, "i.nex").settings.matrix
    assert m.taxa == ["A", "B", "C", "D"] and list(m.masks[:, 5]) == [8, 1, 2, 4]


@pytest.mark.parametrize("dims", ["ntax=4 nchar=8", "newtaxa ntax=4 nchar=8"])
def test_characters_block_with_its_own_ntax(dims, tmp_path):
    """Standard NEXUS that MrBayes refuses (MRBAYES_FACTS) but with one meaning: without a taxa block
    the characters block defines its taxa from its rows, like a data block."""
    assert interp_for("#NEXUS\n" + CHARS % (dims, SHUFFLED), tmp_path).settings.matrix.taxa == ["C", "A", "D", "B"]
    # after a taxa block: newtaxa defines new taxa (any order); a bare ntax must equal the taxa block's
    after_taxa = TAXA4 + CHARS % (dims, SHUFFLED if "newtaxa" in dims else ROWS)
    want = ["C", "A", "D", "B"] if "newtaxa" in dims else ["A", "B", "C", "D"]
    assert interp_for(after_taxa, tmp_path).settings.matrix.taxa == want


def test_data_block_forgets_the_taxa_block(tmp_path):
    text = TAXA4.replace("A B C D", "P Q R S") + DATA4
    assert interp_for(text, tmp_path).settings.matrix.taxa == ["A", "B", "C", "D"]


def test_taxa_block_forgets_the_matrix(tmp_path):
    it = interp_for("#NEXUS\n" + DATA4 + TAXA4[7:], tmp_path)
    assert it.settings.matrix is None and "Deleting previously defined characters" in output(it)


def test_taxa_block_without_taxlabels(tmp_path):
    it = interp_for(NO_LABELS + DATA4, tmp_path)
    assert it.settings.matrix.ntax == 4
    assert "\n      Leaving taxa block without taxon labels being defined\n" in output(it)
    with pytest.raises(DataError, match="the taxa block before it has no taxlabels"):
        interp_for(NO_LABELS + CHARS % ("nchar=8", ROWS), tmp_path)


@pytest.mark.parametrize("text, message", [
    ("begin taxa; dimensions ntax=4 nchar=8; taxlabels A B C D; end;", "nchar is not allowed in a taxa block"),
    ("begin taxa; taxlabels A B C D; end;", "taxlabels before 'dimensions ntax=N'"),
    ("begin taxa; dimensions ntax=5; taxlabels A B C D; end;", "taxlabels lists 4 taxa but dimensions say ntax=5"),
    ("begin taxa; dimensions ntax=3; taxlabels A B C D; end;", "taxlabels lists 4 taxa but dimensions say ntax=3"),
    ("begin taxa; dimensions ntax=4; taxlabels A B A D; end;", "a taxon is repeated in taxlabels"),
    ("begin taxa; dimensions ntax=4; taxlabels A B C D; format datatype=dna; end;",
     "unknown command 'format' in a taxa block"),
])
def test_malformed_taxa_block(text, message, tmp_path):
    # MrBayes refuses each of these too, except ntax=3 with 4 labels, which it takes as 3 taxa A B C.
    with pytest.raises(MbgpuError, match=message):
        interp_for("#NEXUS\n" + text + "\n", tmp_path)


@pytest.mark.parametrize("text, message", [
    (CHARS % ("nchar=8", ROWS), "no taxa block comes before it"),
    (TAXA4 + CHARS % ("ntax=5 nchar=8", ROWS), "ntax=5 but the taxa block defines 4 taxa"),
    (CHARS % ("newtaxa nchar=8", ROWS), "dimensions newtaxa needs ntax=N"),
    (TAXA4 + CHARS % ("nchar=8; taxlabels A B C D", ROWS), "taxlabels in a characters block that takes its taxa"),
    (TAXA4 + "begin characters; format datatype=dna; matrix\n" + ROWS + "\n;\nend;\n",
     r"matrix before 'dimensions nchar=\.\.\.'"),
])
def test_malformed_characters_block(text, message, tmp_path):
    with pytest.raises(DataError, match=message):
        interp_for(text if text.startswith("#NEXUS") else "#NEXUS\n" + text, tmp_path)


def test_title_link_blockid_are_ignored(tmp_path):
    text = ("#NEXUS\nbegin taxa; title Taxa; dimensions ntax=4; taxlabels A B C D; blockid WM114; end;\n"
            "begin characters; title Character_Matrix; link taxa = Taxa; dimensions nchar=8;\n"
            "format datatype=dna respectcase gap=- missing=?;\nmatrix\n" + ROWS + "\n;\nend;\n")
    assert interp_for(text, tmp_path).settings.matrix.taxa == ["A", "B", "C", "D"]
