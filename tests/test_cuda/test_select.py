"""Backend selection from `set usebeagle/beagledevice/beagleprecision/beaglescaling` and MBGPU_BACKEND."""
import io

import pytest

from mbgpu.console import Console
from mbgpu.errors import CommandError
from mbgpu.likelihood import NumpyBackend
from mbgpu.likelihood.select import choose_backend, decide


def yes():
    return True


def no():
    return False


@pytest.mark.parametrize("options, env, present, expected", [
    ({}, {}, yes, ("gpu", "double", 4)),
    ({}, {}, no, ("cpu", "double", 4)),
    ({"Usebeagle": "No"}, {}, yes, ("cpu", "double", 4)),
    ({"Beagledevice": "CPU"}, {}, yes, ("cpu", "double", 4)),
    ({"Beagleprecision": "Single", "Beaglescaling": "Always"}, {}, yes, ("gpu", "single", True)),
    ({"Usebeagle": "No"}, {"MBGPU_BACKEND": "gpu"}, yes, ("gpu", "double", 4)),
    ({}, {"MBGPU_BACKEND": "CPU"}, yes, ("cpu", "double", 4)),
])
def test_decision_table(options, env, present, expected):
    assert decide(options, env, present)[:3] == expected


def test_bad_values_are_command_errors():
    with pytest.raises(CommandError):
        decide({}, {"MBGPU_BACKEND": "tpu"}, yes)
    with pytest.raises(CommandError):
        decide({}, {"MBGPU_BACKEND": "gpu"}, no)
    with pytest.raises(CommandError):
        decide({"Beaglescaling": "Sometimes"}, {}, yes)


def test_cpu_choice_prints_one_line_and_builds_the_compiled_or_numpy_backend():
    """The CPU default is the compiled (numba) backend; the numpy reference stays reachable by argument."""
    from mbgpu.likelihood.compiled_backend import CompiledBackend

    out = io.StringIO()
    choice = choose_backend({"Usebeagle": "No"}, Console(out), env={}, cuda_present=yes)
    assert out.getvalue().count("\n") == 1 and "compiled CPU" in out.getvalue() and "usebeagle=no" in out.getvalue()
    assert choice.make is CompiledBackend and choice.kind == "cpu"
    out = io.StringIO()
    choice = choose_backend({"Usebeagle": "No"}, Console(out), env={}, cuda_present=yes, cpu="numpy")
    assert "numpy CPU" in out.getvalue() and choice.make is NumpyBackend
