"""The parameter-kind table (engine/param_kinds.py) against what it must agree with: the command table's
link/unlink and prset options, MrBayes' own `.p` headers, ModelSpec's fields, the moves the compiled step
can run, and the amino-acid models the command table and the matrices offer."""
import dataclasses

from mbgpu.commands.params import Prior
from mbgpu.commands.table import build_table
from mbgpu.core.layout import unsupported_move
from mbgpu.models import ModelSpec
from mbgpu.models.aamatrices import ALL_MODELS, DATA_DIR, EMPIRICAL_MODELS
from mbgpu.output.paramnames import labels
from mbgpu.param_kinds import AA_MODELS, KIND, MULTIPLIERS, PARAMS, RATIO, SCALAR, SIMPLEX, TREE
from mbgpu.sampler.param_moves import ParamMove

TABLE = build_table()


def _supported(command: str) -> list[str]:
    """The options of `command` that mbgpu runs with more than their default."""
    return [p.name for p in TABLE[command].params if p.supported != ()]


def test_link_names_are_what_link_and_unlink_split():
    for command in ("link", "unlink"):
        assert [k.name for k in PARAMS + TREE] == _supported(command)     # TREE: unlink topology/brlens


def test_prset_names_are_prior_options():
    priors = {p.name for p in TABLE["prset"].params if isinstance(p, Prior)}
    assert {k.prset for k in PARAMS + TREE} <= priors
    assert len({k.prset for k in PARAMS + TREE}) == len(PARAMS + TREE)


def test_kinds_are_keyed_once():
    assert list(KIND) == [k.kind for k in PARAMS + TREE]
    assert all(k.form in (SIMPLEX, RATIO, SCALAR, MULTIPLIERS) for k in PARAMS)


def test_fields_are_model_spec_fields():
    fields = {f.name for f in dataclasses.fields(ModelSpec)}
    assert all(k.field in fields for k in PARAMS if k.form != MULTIPLIERS)
    assert [k.field for k in PARAMS if k.form == MULTIPLIERS] == [None]


def test_every_kind_has_moves_the_compiled_step_runs():
    for k in PARAMS:
        assert k.moves
        for m in k.moves:
            move = ParamMove("%s(%s)" % (m.head, k.title), 0, m.kind, m.weight, m.tuning, m.tuning_name)
            assert unsupported_move(move) is None, move.name
            assert m.tuning_name in ("alpha", "delta", "lambda") and m.weight > 0 and m.tuning > 0


def test_columns_are_mrbayes_labels(shared_data):
    """Every label mbgpu writes for a kind occurs in one of MrBayes' own `.p` headers (suffix dropped)."""
    headers = shared_data / "mrbayes" / "reference_runs" / "p_headers"
    seen = set()
    for path in headers.glob("*.p"):
        for line in path.read_text().splitlines():
            if line.startswith("Gen\t"):
                seen.update(col.split("{")[0] for col in line.split("\t"))
    for k in PARAMS:
        if k.form == MULTIPLIERS:
            assert (k.column % 1).split("{")[0] in seen
        else:
            for datatype in ("dna", "protein"):
                assert set(labels(k.kind, datatype)) <= seen, k.kind


def test_amino_acid_models_match_the_matrices_and_the_command_table():
    assert ALL_MODELS == AA_MODELS
    assert sorted(EMPIRICAL_MODELS) == sorted(p.stem for p in DATA_DIR.glob("*.dat"))
    (aamodelpr,) = [p for p in TABLE["prset"].params if p.name == "Aamodelpr"]
    assert [w.lower() for w in aamodelpr.words["Fixed"]] == list(AA_MODELS)
    assert "Lg" in aamodelpr.words["Fixed"] and "Poisson" in aamodelpr.words["Fixed"]
