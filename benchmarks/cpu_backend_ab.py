"""End to end on the CPU: primates GTR+I+G, 2 runs x 4 chains, MrBayes' default moves, N generations, with
the numpy reference or the compiled (numba) likelihood backend; run alternately, one thread each:

    for w in numpy compiled numpy compiled; do NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python3 benchmarks/cpu_backend_ab.py $w 2000; done
"""
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import mbgpu.likelihood.select as sel
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "primates.nex"
which, ngen = sys.argv[1], int(sys.argv[2])
sel.choose_backend.__kwdefaults__["cpu"] = which   # the CPU backend the run builds
d = tempfile.mkdtemp(); os.chdir(d)
shutil.copy(DATA, d)
open("r.nex", "w").write("#NEXUS\nbegin mrbayes; set seed=1 swapseed=1 usebeagle=no; execute primates.nex; lset nst=6 rates=invgamma;\n"
    " mcmc ngen=%d nruns=2 nchains=4 samplefreq=100 printfreq=%d diagnfreq=1000 checkpoint=no filename=o; end;\n" % (ngen, ngen))
t = time.perf_counter(); Interpreter(Console(io.StringIO())).run_file("r.nex"); dt = time.perf_counter() - t
print(which, ngen, "%.2f s, %.0f gen/s" % (dt, ngen / dt))
