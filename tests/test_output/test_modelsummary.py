"""The model summary printed at mcmc start and by showmodel equals MrBayes 3.2.7a's lines
(engine/output/modelsummary.py)."""
import pytest

from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import model_block, move_block, run_mb, run_ours, stage

RUN = "\n mcmc ngen=100 nruns=1 nchains=1 samplefreq=100 printfreq=100 diagnfreq=100 filename=%s;"


def test_primates_gtrig_equals_reference_screen_log(shared_data, tmp_path, monkeypatch):
    """batch.nex's model (GTR+I+G): the block from 'Model settings:' to the parameter list, line by line."""
    log = (shared_data / "mrbayes" / "reference_runs" / "primates_gtrig_20k" / "screen.log").read_text()
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    ours = run_ours(folder, " set seed=12345 swapseed=12345; execute primates.nex;\n lset nst=6 rates=invgamma;"
                    + RUN % "r", monkeypatch)
    assert model_block(ours) == model_block(log, spacer=3)
    assert move_block(ours) == move_block(log, spacer=3)
    assert ours.index("Swapseed = 12345") < ours.index("Model settings:") < ours.index("Chain results")


BYCODON = ("charset p1=1-898\\3; charset p2=2-898\\3; charset p3=3-898\\3; partition bycodon=3:p1,p2,p3;"
           " set partition=bycodon;")
CASES = {
    "bycodon_unlink": ("primates.nex", BYCODON + " lset applyto=(all) nst=6 rates=invgamma; unlink shape=(all);"
                       " prset applyto=(all) ratepr=variable;"),
    "bycodon_priors": ("primates.nex", BYCODON + " lset applyto=(1,2) nst=2 rates=gamma ngammacat=6;"
                       " unlink tratio=(1,2); prset applyto=(1) tratiopr=beta(2,3) shapepr=uniform(0.1,50);"
                       " prset applyto=(all) statefreqpr=fixed(empirical) brlenspr=unconstrained:exp(10);"
                       " unlink statefreq=(all);"),   # linked, MrBayes pools them (refused: tests/test_linking.py)
    "cynmix_favored": ("cynmix.nex", " set partition=favored; lset app=(2,3,4,5) rates=invgamma nst=6;"
                       " unlink revmat=(all) pinvar=(all) statefreq=(all); prset ratepr=variable;"),
    "protein": ("avian_ovomucoids.nex", " prset aamodelpr=fixed(wag); lset rates=invgamma;"),
    "kim_mixed_data": ("kim.nex", ""),
    # MrBayes' link rules (tests/test_linking.py): alpha never shared by standard and DNA divisions, partial links
    "cynmix_links": ("cynmix.nex", " set partition=favored; lset applyto=(all) rates=gamma; unlink statefreq=(all);"
                     " link statefreq=(3,4,5); unlink shape=(2); prset applyto=(2,3) ratepr=variable;"),
    # frequency priors of different forms linked (the first division's rules); ratepr variable and dirichlet(x)
    "bycodon_forms": ("primates.nex", BYCODON + " prset applyto=(2) statefreqpr=fixed(equal);"
                      " prset applyto=(3) statefreqpr=dirichlet(2,2,2,2); prset applyto=(1) ratepr=dirichlet(2);"
                      " prset applyto=(2,3) ratepr=variable;"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_block_like_mrbayes(mb, shared_data, tmp_path, monkeypatch, case):
    """Partitioned analyses (mixed data types, linked and unlinked parameters, fixed and free priors) and a
    protein model: mb and mbgpu run the same block; the printed model summaries are equal line by line."""
    data, commands = CASES[case]
    path = TEST_DATA / data if (TEST_DATA / data).exists() else shared_data / "mrbayes" / data
    folder = stage(tmp_path, path)
    block = " set seed=1 swapseed=1; execute %s;\n%s" % (data, commands) + RUN
    theirs = run_mb(mb, folder, block % "theirs")
    ours = run_ours(folder, block % "ours", monkeypatch)
    assert model_block(ours) == model_block(theirs, spacer=3)
    assert move_block(ours) == move_block(theirs, spacer=3)


def test_showmodel_prints_the_mcmc_block(tmp_path, monkeypatch):
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    block = " execute primates.nex;\n lset nst=2 rates=propinv;"
    shown = run_ours(folder, block + " showmodel;", monkeypatch)
    started = run_ours(folder, block + RUN % "r", monkeypatch)
    assert model_block(shown + "   Compressing data matrix\n") == model_block(started)
    assert "      Tratio              1" in shown and "Proportion of invariable sites is uniformly dist-" in shown
