"""The `[ID: ...]` stamp: ten digits as MrBayes writes it, leading zeros kept (a MrBayes ID such as
0832351789 must come back unchanged through the writers)."""
import io

from mbgpu.analysis import run_stamp
from mbgpu.output.pfile import PFileWriter
from mbgpu.output.tfile import TFileWriter


def test_run_stamp_is_ten_digits_and_follows_the_seed():
    stamps = {run_stamp(seed) for seed in range(200)}
    assert all(len(s) == 10 and s.isdigit() for s in stamps)
    assert len(stamps) == 200 and run_stamp(7) == run_stamp(7)


def test_writers_keep_a_leading_zero():
    p, t = io.StringIO(), io.StringIO()
    PFileWriter(p, "0832351789", ["TL"])
    TFileWriter(t, "0832351789", ["a", "b", "c"])
    assert p.getvalue().startswith("[ID: 0832351789]\n")
    assert t.getvalue().startswith("#NEXUS\n[ID: 0832351789]\n")
