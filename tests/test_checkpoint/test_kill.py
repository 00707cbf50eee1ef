"""kill -9 at random moments: the checkpoint left behind is always valid and resuming it is exact.

A few trials here; `python -m tests.test_checkpoint.kill_trials --trials 20` runs the full study.
"""
import signal
import sys

import pytest

from tests.test_checkpoint.kill_trials import run_trials

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def test_kill_9_then_append_is_exact(tmp_path):
    lines = []
    failures = run_trials(3, seed=2024, workdir=tmp_path, max_delay=2.0, log=lines.append)
    assert failures == 0, "\n".join(lines)
    assert len(lines) == 3 and all("outputs identical" in l for l in lines)
    # a trial whose run finished before the kill proves nothing about kill -9: at least one must be a kill
    assert any(": killed after" in l for l in lines), "\n".join(lines)
