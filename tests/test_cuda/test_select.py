"""Backend selection from `set usebeagle/beagledevice/beagleprecision/beaglescaling` and mbgpu's
`set backend=auto|cpu|gpu` (also `mbgpu --backend=`)."""
import io

import pytest

from mbgpu.console import Console
from mbgpu.errors import CommandError, MbgpuError
from mbgpu.likelihood import NumpyBackend
from mbgpu.likelihood.select import choose_backend, decide


def yes():
    return True


def no():
    return False


@pytest.mark.parametrize("options, present, expected", [
    ({}, yes, ("gpu", "double", 4)),
    ({}, no, ("cpu", "double", 4)),
    ({"Usebeagle": "No"}, yes, ("cpu", "double", 4)),
    ({"Beagledevice": "CPU"}, yes, ("cpu", "double", 4)),
    ({"Beagleprecision": "Single", "Beaglescaling": "Always"}, yes, ("gpu", "single", True)),
    ({"Backend": "Auto", "Usebeagle": "No"}, yes, ("cpu", "double", 4)),
    ({"Usebeagle": "No", "Backend": "GPU"}, yes, ("gpu", "double", 4)),
    ({"Beagledevice": "CPU", "Backend": "GPU", "Beagleprecision": "Single"}, yes, ("gpu", "single", 4)),
    ({"Backend": "CPU"}, yes, ("cpu", "double", 4)),
    ({"Backend": "CPU", "Beagleprecision": "Single"}, yes, ("cpu", "single", 4)),
    ({"Beagledevice": "CPU", "Beagleprecision": "Single"}, yes, ("cpu", "single", 4)),
    ({"Beagleprecision": "Single"}, no, ("cpu", "single", 4)),
    ({"Usebeagle": "No", "Beagleprecision": "Single"}, yes, ("cpu", "double", 4)),     # MrBayes' own code
])
def test_decision_table(options, present, expected):
    assert decide(options, present)[:3] == expected


def test_bad_values_are_command_errors():
    with pytest.raises(CommandError, match="backend must be auto, cpu or gpu"):
        decide({"Backend": "tpu"}, yes)
    with pytest.raises(CommandError, match="backend=gpu but no CUDA device"):
        decide({"Backend": "GPU"}, no)
    with pytest.raises(CommandError):
        decide({"Beaglescaling": "Sometimes"}, yes)


def test_set_backend_is_a_setting_and_the_flag_sets_it(tmp_path, monkeypatch, capsys):
    """`set backend=` is stored with the other `set` options (default Auto); `--backend=` is the same setting;
    a bad value is one located line."""
    from mbgpu.interpreter import Interpreter
    from mbgpu.session import run_cli

    interp = Interpreter(Console(io.StringIO()))
    assert interp.settings.options["Backend"] == "Auto"
    interp.run_text("set backend=g;", "t.nex")
    assert interp.settings.options["Backend"] == "GPU"
    (tmp_path / "bad.nex").write_text("#NEXUS\nbegin mrbayes;\n set backend=tpu;\nend;\n")
    assert run_cli([str(tmp_path / "bad.nex")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("%s:3:" % (tmp_path / "bad.nex")) and "Backend" in err[0], err
    seen = []
    monkeypatch.setattr(Interpreter, "run_file", lambda self, path: seen.append(self.settings.options["Backend"]))
    assert run_cli(["--backend=cpu", "x.nex"]) == 0 and seen == ["CPU"]
    with pytest.raises(MbgpuError, match="--backend must be auto, cpu or gpu, not 'tpu'"):
        run_cli(["--backend=tpu", "x.nex"])


def test_gpu_choice_passes_device_and_asynchronous_flushes(monkeypatch):
    import mbgpu.likelihood.select as select

    calls = []
    monkeypatch.setattr(select, "_gpu_factory", lambda precision, device, asynchronous:
                        calls.append((precision, device, asynchronous)) or NumpyBackend)
    choose_backend({"Backend": "GPU"}, Console(io.StringIO()), cuda_present=yes)
    choose_backend({"Beagleprecision": "Single"}, Console(io.StringIO()), cuda_present=yes, device=3,
                   asynchronous=False)
    assert calls == [("double", None, True), ("single", 3, False)]      # asynchronous flushes by default


def test_cpu_choice_prints_one_line_and_builds_the_compiled_or_numpy_backend():
    """The CPU default is the compiled (numba) backend; the numpy reference stays reachable by argument."""
    from mbgpu.likelihood.compiled_backend import CompiledBackend

    out = io.StringIO()
    choice = choose_backend({"Usebeagle": "No"}, Console(out), cuda_present=yes)
    assert out.getvalue().count("\n") == 1 and "compiled CPU" in out.getvalue() and "usebeagle=no" in out.getvalue()
    assert choice.make is CompiledBackend and choice.kind == "cpu"
    out = io.StringIO()
    choice = choose_backend({"Usebeagle": "No"}, Console(out), cuda_present=yes, cpu="numpy")
    assert "numpy CPU" in out.getvalue() and choice.make is NumpyBackend


def test_cpu_single_precision_reaches_the_core_and_the_screen():
    """beagleprecision=single on the CPU: the line says so and the backend built carries float32 for the
    compiled core's buffers (mbgpu.core.division); double by default."""
    import numpy as np

    from mbgpu.likelihood.protocol import InstanceSpec

    spec = InstanceSpec(n_tips=3, n_partials=2, n_patterns=5, n_states=4, n_categories=1, n_matrices=4,
                        n_scale_buffers=3)
    for precision, dtype in (("Single", np.float32), ("Double", np.float64)):
        out = io.StringIO()
        choice = choose_backend({"Beagledevice": "CPU", "Beagleprecision": precision}, Console(out), cuda_present=yes)
        assert "compiled CPU, %s precision" % precision.lower() in out.getvalue()
        assert choice(spec).core_dtype == dtype


def test_auto_takes_the_cpu_for_data_too_small_for_the_gpu(tmp_path):
    """backend=auto with a GPU present: the data's size decides (GPU_MIN_WORK); backend=gpu and
    backend=cpu still decide alone; the work measure is patterns x states^2 over every pattern set."""
    from mbgpu.analysis import division_pattern_sets
    from mbgpu.interpreter import Interpreter
    from mbgpu.likelihood.select import GPU_MIN_WORK, data_work
    from tests.conftest import TEST_DATA

    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(TEST_DATA / "primates.nex"))
    sets = division_pattern_sets(interp.settings)
    work = data_work(sets)
    assert work == sum(p.n_patterns for g in sets for p in g) * 16
    present = lambda: True                                                  # noqa: E731
    kind, _p, _s, why = decide({}, present, work)
    assert (kind, work < GPU_MIN_WORK) == ("cpu", True) and "backend=gpu" in why
    assert decide({}, present, GPU_MIN_WORK)[0] == "gpu"
    assert decide({"Backend": "GPU"}, present, work)[0] == "gpu"
    assert decide({}, lambda: False, GPU_MIN_WORK)[0] == "cpu"
    assert decide({}, present)[0] == "gpu"                                  # size unknown: as before
