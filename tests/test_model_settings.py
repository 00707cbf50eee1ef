"""mbgpu.model_settings: how lset coding reaches the model (the MrBayes oracles are in test_mrbayes_gen0.py)."""
import numpy as np

from mbgpu.analysis import division_pattern_sets
from mbgpu.model_settings import build_division_models, variable_characters
from mbgpu.patterns import compress
from tests.helpers import interp_for

MIXED = """#NEXUS
begin data;
  dimensions ntax=4 nchar=9;
  format datatype=mixed(standard:1-5,dna:6-9) gap=- missing=?;
  matrix
  A  0100? ACGT
  B  0111? ACGA
  C  1(01)01? ACTA
  D  1?2-? ACTA
  ;
end;
"""


def _models(tmp_path, commands=""):
    it = interp_for(MIXED + "begin mrbayes; %s end;\n" % commands, tmp_path)
    return build_division_models(it.settings, division_pattern_sets(it.settings))


def test_standard_data_defaults_to_variable_and_dna_to_all(tmp_path):
    standard, dna = _models(tmp_path)
    assert {s.coding for s in standard.specs} == {"variable"} and dna.specs[0].coding == "all"


def test_coding_all_is_honoured_and_coding_is_ignored_for_dna(tmp_path):
    standard, dna = _models(tmp_path, "lset coding=all;")
    assert {s.coding for s in standard.specs} == {"all"}
    standard, dna = _models(tmp_path, "lset coding=variable;")
    assert dna.specs[0].coding == "all"


def test_constant_characters_are_left_out_under_mkv(tmp_path):
    """Columns 2 (1,1,{0,1},?) and 5 (all ?) allow one state in every taxon: MrBayes excludes them."""
    variable = sum(p.weights.sum() for p in _models(tmp_path)[0].pattern_sets)
    everything = sum(p.weights.sum() for p in _models(tmp_path, "lset coding=all;")[0].pattern_sets)
    assert (everything, variable) == (5, 3)


def test_variable_characters_keeps_columns_and_patterns_in_step():
    masks = np.array([[1, 2, 1, 3], [1, 2, 2, 3], [3, 2, 1, 1]], dtype=np.uint32)   # k=2: 3 allows both
    ps = compress(masks, "standard", 2, np.arange(4))
    out = variable_characters(ps, masks)
    assert out.columns.tolist() == [2] and out.n_patterns == 1 and out.weights.tolist() == [1.0]
