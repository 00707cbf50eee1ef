import numpy as np
import pytest

from mbgpu.errors import DataError, MbgpuError
from tests.helpers import DNA4, interp_for


def test_plain_dna_with_missing_and_gap(tmp_path):
    m = interp_for(DNA4, tmp_path).settings.matrix
    assert m.taxa == ["A", "B", "C", "D"] and m.nchar == 8
    assert m.masks[0, 0] == 1 and m.masks[0, 3] == 8  # A, T
    assert m.masks[3, 3] == 15 and m.masks[3, 7] == 15  # ? and - allow every state


def test_interleaved_matchchar_ambiguity_polymorphism(tmp_path):
    text = """#NEXUS
begin data; dimensions ntax=3 nchar=6;
format datatype=dna interleave=yes matchchar=. missing=?;
matrix
'taxon one' ACG
two         .R{CT}
three       (AG)?N
'taxon one' TTA
two         ..C
three       ...
;
end;
"""
    m = interp_for(text, tmp_path).settings.matrix
    assert m.taxa == ["taxon one", "two", "three"]
    assert m.masks[1, 0] == 1 and m.masks[1, 1] == 0b0101 and m.masks[1, 2] == 0b1010
    assert m.masks[2, 0] == 0b0101 and m.masks[2, 1] == 15 and m.masks[2, 2] == 15
    assert list(m.masks[1, 3:]) == [8, 8, 2]


def test_standard_and_mixed(tmp_path):
    text = """#NEXUS
begin data; dimensions ntax=2 nchar=5;
format datatype=mixed(standard:1-2,protein:3-5) missing=? gap=-;
matrix
a 0{12}ARX
b 2-  BZ*
;
end;
"""
    with pytest.raises(DataError, match=r"illegal character '\*' for datatype protein"):
        interp_for(text, tmp_path)
    m = interp_for(text.replace("*", "W"), tmp_path).settings.matrix
    assert m.datatypes == ["standard", "standard", "protein", "protein", "protein"]
    assert m.masks[0, 1] == 0b110 and m.masks[1, 1] == (1 << 10) - 1


@pytest.mark.parametrize("change, message", [
    ("ntax=4", "the matrix has 3 taxa but dimensions say ntax=4"),
    ("nchar=5", "more than nchar=5"),
    ("nchar=7", "has 6 characters but dimensions say nchar=7"),
])
def test_wrong_dimensions(tmp_path, change, message):
    text = """#NEXUS
begin data; dimensions ntax=3 nchar=6; format datatype=dna;
matrix
a ACGTAC
b ACGTAC
c ACGTAC
;
end;
""".replace("ntax=3 nchar=6", "ntax=3 nchar=6".replace(change.split("=")[0] + "=" + ("3" if "ntax" in change else "6"), change))
    with pytest.raises(DataError, match=message):
        interp_for(text, tmp_path)


def test_repeated_and_missing_taxon(tmp_path):
    base = "#NEXUS\nbegin data; dimensions ntax=2 nchar=2; format datatype=dna;\nmatrix\n%s\n;\nend;\n"
    with pytest.raises(DataError, match="taxon 'a' appears twice"):
        interp_for(base % "a AC\na GT", tmp_path)
    with pytest.raises(DataError, match="1 taxa but dimensions say ntax=2"):
        interp_for(base % "a AC", tmp_path)


def test_illegal_character_location(tmp_path):
    text = "#NEXUS\nbegin data; dimensions ntax=1 nchar=3; format datatype=dna;\nmatrix\na AJC\n;\nend;\n"
    with pytest.raises(DataError) as e:
        interp_for(text, tmp_path, "bad.nex")
    assert e.value.one_line().startswith(str(tmp_path / "bad.nex") + ":4:4: error: illegal character 'J'")


def test_unterminated_block_and_state_set(tmp_path):
    with pytest.raises(MbgpuError, match="not closed"):
        interp_for("#NEXUS\nbegin data; dimensions ntax=1 nchar=1;\n", tmp_path)
    text = "#NEXUS\nbegin data; dimensions ntax=1 nchar=2; format datatype=dna;\nmatrix\na A{CG\n;\nend;\n"
    with pytest.raises(DataError, match="unterminated state set"):
        interp_for(text, tmp_path)


def test_trees_block_with_translate(tmp_path):
    text = """#NEXUS
begin trees;
  translate 1 'Homo sapiens', 2 Pan;
  tree best = [&U] (1:0.1,2:2e-3);
end;
"""
    it = interp_for(text, tmp_path)
    rec = it.settings.trees["best"]
    assert rec.newick == "(1:0.1,2:2e-3);" and rec.translate == {"1": "Homo sapiens", "2": "Pan"}


def test_rna_symbols_and_literal_underscores(tmp_path):
    rna = "#NEXUS\nbegin data; dimensions ntax=2 nchar=3; format datatype=rna; matrix\na_1 ACU\nb AGN\n;\nend;\n"
    m = interp_for(rna, tmp_path).settings.matrix
    assert m.taxa == ["a_1", "b"] and list(m.masks[0]) == [1, 2, 8] and m.masks[1, 2] == 15
    std = ("#NEXUS\nbegin data; dimensions ntax=2 nchar=3; format datatype=standard symbols=\"012ab\";\n"
           "matrix\na 0a2\nb b10\n;\nend;\n")
    assert interp_for(std, tmp_path).settings.matrix.masks.tolist() == [[1, 8, 4], [16, 2, 1]]
