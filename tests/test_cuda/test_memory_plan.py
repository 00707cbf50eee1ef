"""The memory planner of the CUDA backend (CPU only): byte counts and the early, typed error."""
import pytest

from mbgpu.cuda.memory_plan import check_fits, plan_instance
from mbgpu.errors import DeviceError
from mbgpu.likelihood import InstanceSpec

SPEC = InstanceSpec(n_tips=31, n_partials=60, n_patterns=360_031, n_states=20, n_categories=4,
                    n_matrices=122, n_scale_buffers=62)


def test_bytes_per_buffer_follow_precision():
    double = plan_instance(SPEC, "double")
    single = plan_instance(SPEC, "single")
    assert double.buffers["partials"] == 8 * 60 * 4 * 360_031 * 20 > 4 << 30
    assert single.buffers["partials"] * 2 == double.buffers["partials"]
    assert double.buffers["transition_matrices"] == 8 * 122 * 4 * 400
    assert double.buffers["scale_buffers"] == single.buffers["scale_buffers"] == 8 * 62 * 360_031
    assert double.largest() == ("partials", double.buffers["partials"])
    assert double.total > double.buffers["partials"]


def test_fits_silently_when_there_is_room():
    plan = plan_instance(SPEC, "double")
    check_fits(plan, free_bytes=plan.total + (1 << 30), total_bytes=140 << 30, device="GPU 0 (test)")


def test_error_names_buffer_size_device_and_remedies():
    plan = plan_instance(SPEC, "double")
    with pytest.raises(DeviceError) as err:
        check_fits(plan, free_bytes=2 << 30, total_bytes=16 << 30, device="GPU 3 (test card)", chains=8)
    text = err.value.one_line()
    assert "'partials'" in text and "GPU 3 (test card)" in text and "12.88 GiB" in text
    assert "beagleprecision=single" in text and "fewer chains per GPU (now 8)" in text and "MPI ranks" in text
    with pytest.raises(DeviceError) as err:
        check_fits(plan_instance(SPEC, "single"), free_bytes=1 << 30, total_bytes=16 << 30, device="GPU 0")
    assert "beagleprecision=single" not in err.value.one_line()


def test_unknown_precision_is_a_typed_error():
    with pytest.raises(DeviceError):
        plan_instance(SPEC, "half")
