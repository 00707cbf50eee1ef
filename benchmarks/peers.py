"""mbgpu against the real MrBayes 3.2.7a, side by side: generations per second on the same NEXUS file,
the same chains and MrBayes' default moves, each contestant in fresh processes.

    python3 benchmarks/peers.py [--data primates dna50x2k ...] [--peers mbgpu-cpu mb-sse ...]
                                [--seconds 10] [--rounds 2] [--threads 1] [--nchains 4] [--nruns 2]
                                [--short 0.25] [--ngen SHORT LONG] [--seed S] [--timeout 900]
                                [--peers-dir DIR] [--python PY] [--work DIR] [--json PATH]

Data sets (--data; default primates):
  primates    tests/data/primates.nex's data block (12 taxa x 898 sites), lset nst=6 rates=invgamma
  primates-codon3  the same by codon position, `unlink topology=(all)`: one tree per position
  dna50x2k    simulated, 50 taxa x 2,000 sites, GTR+I+G4
  dna64x50k   simulated, 64 taxa x 50,000 sites, GTR+I+G4 (the data of benchmarks/mcmc_gpu.py's dna case)
  dna128x100k simulated, 128 taxa x 100,000 sites, GTR+I+G4 (issue 19's large DNA set)
  prot60x5k   simulated, 60 taxa x 5,000 sites, prset aamodelpr=fixed(wag) + lset rates=gamma
  prot40x20k  simulated, 40 taxa x 20,000 sites, WAG+G4 (the data of benchmarks/mcmc_gpu.py's protein case)
The simulated sets come from benchmarks/mcmc_gpu.py's `simulate` (fixed seeds) and are written as NEXUS into
WORK/data once; later invocations reuse them.

Contestants (--peers; default: every one that needs no GPU; `all` adds the GPU ones):
  mbgpu-cpu             python -m mbgpu --backend=cpu
  mbgpu-cpu-single      the same with set beagleprecision=single (float32 partials in the core)
  mbgpu-gpu             python -m mbgpu --backend=gpu (double precision)            [GPU]
  mbgpu-gpu-single      the same with set beagleprecision=single                    [GPU]
  mb-sse                bin/mb, set usebeagle=no (MrBayes' own SSE code, single precision)
  mb-beagle-cpu-double  bin/mb, set usebeagle=yes beagledevice=cpu beagleprecision=double
  mb-beagle-cpu-single  bin/mb, set usebeagle=yes beagledevice=cpu beagleprecision=single
  mb-beagle-gpu-double  bin/mb, set usebeagle=yes beagledevice=gpu beagleprecision=double   [GPU]
  mb-beagle-gpu-single  bin/mb, set usebeagle=yes beagledevice=gpu beagleprecision=single   [GPU]
  mb-double             bin/mb-double (double precision, no SSE, no BEAGLE)
BEAGLE contestants are pinned to a resource (`beagleresource=0`, BEAGLE's CPU; GPU ones --beagle-gpu-resource,
default 1): left to choose, MrBayes benchmarks the resources and may run a `beagledevice=cpu` contestant on the
GPU. A run whose `Rsrc Name` / `Impl Name` lines show another device or precision than asked for counts as
failed (e.g. no usable GPU), and so does an mbgpu GPU run that did not report the CUDA backend.

Every run executes the same block (only the contestant's `set` options differ):
    set autoclose=yes nowarn=yes seed=S swapseed=S [contestant options];
    execute data.nex;
    lset ...; prset ...;
    mcmc ngen=N nchains=4 nruns=2 samplefreq=500 printfreq=1000 diagnfreq=5000 filename=...;

Threads: one per process by default. mbgpu gets OMP_NUM_THREADS, NUMBA_NUM_THREADS, OPENBLAS_NUM_THREADS and
MKL_NUM_THREADS = --threads; BEAGLE CPU gets `beaglethreads=no` at one thread and `beaglethreads=yes
beaglethreadcount=N` above (its default would be automatic threading). MrBayes' own code is single-threaded.

Measurement. Per contestant and data set, one calibration run first (ngen huge, printfreq 10, killed once the
rate is known; it also warms caches: numba's, the CUDA driver's PTX cache) estimates the rate; from it
ngen_long is chosen so that the long run takes about --seconds of wall time and ngen_short = --short x
ngen_long (both rounded to two significant digits). Then --rounds rounds: in each round every contestant runs
its short and its long run, in fresh processes, one after the other (the contestant order is reversed every
other round), so slow drifts of the machine hit all alike. A round's rate is
(ngen_long - ngen_short) / (t_long - t_short) of whole-process wall times, so start-up and shut-down cancel;
the table gives the median over rounds and the spread (max - min) / median. "start-up" is
t_short - ngen_short / rate (median over rounds): everything that is not generations (reading, compiling,
the initial state, the end-of-run summary); "first line" is the time from the start of the process to its
`0 -- [...]` generation line. "CPU/wall" is the long runs' user+system CPU time over wall time (about 1.0
for one thread; well below 1 on a busy machine), and "gen/CPU-s" is the rate from CPU times instead of wall
times (less moved by other load when a contestant runs one thread). Progress goes to stderr; the tables to stdout.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

DNA_LSET = "lset nst=6 rates=invgamma;"
# name -> how to make it; `case` names benchmarks/mcmc_gpu.py's CASES entry (model and alphabet)
DATASETS = {
    "primates": dict(source=os.path.join("tests", "data", "primates.nex"), lset=DNA_LSET, prset="",
                     model="GTR+I+G4"),
    # one tree per codon position (unlink topology): the interpreted step, as the compiled core refuses it
    "primates-codon3": dict(source=os.path.join("tests", "data", "primates.nex"),
                            lset="charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; partition c = "
                                 "3: p1, p2, p3; set partition=c; unlink topology=(all); " + DNA_LSET, prset="",
                            model="GTR+I+G4, 3 unlinked trees"),
    "dna50x2k": dict(case="dna", n_taxa=50, n_sites=2_000, seed=5, lset=DNA_LSET, prset="", model="GTR+I+G4"),
    "dna64x50k": dict(case="dna", n_taxa=64, n_sites=50_000, seed=5, lset=DNA_LSET, prset="", model="GTR+I+G4"),
    "dna128x100k": dict(case="dna", n_taxa=128, n_sites=100_000, seed=5, lset=DNA_LSET, prset="", model="GTR+I+G4"),
    # sizes between, for where the GPU starts to beat the CPU (mbgpu.likelihood.select's threshold)
    "dna50x500": dict(case="dna", n_taxa=50, n_sites=500, seed=5, lset=DNA_LSET, prset="", model="GTR+I+G4"),
    "dna50x5k": dict(case="dna", n_taxa=50, n_sites=5_000, seed=5, lset=DNA_LSET, prset="", model="GTR+I+G4"),
    "dna50x10k": dict(case="dna", n_taxa=50, n_sites=10_000, seed=5, lset=DNA_LSET, prset="", model="GTR+I+G4"),
    "prot40x500": dict(case="protein", n_taxa=40, n_sites=500, seed=5, lset="lset rates=gamma;",
                       prset="prset aamodelpr=fixed(wag);", model="WAG+G4"),
    "prot40x2k": dict(case="protein", n_taxa=40, n_sites=2_000, seed=5, lset="lset rates=gamma;",
                      prset="prset aamodelpr=fixed(wag);", model="WAG+G4"),
    "prot60x5k": dict(case="protein", n_taxa=60, n_sites=5_000, seed=5, lset="lset rates=gamma;",
                      prset="prset aamodelpr=fixed(wag);", model="WAG+G4"),
    "prot40x20k": dict(case="protein", n_taxa=40, n_sites=20_000, seed=5, lset="lset rates=gamma;",
                       prset="prset aamodelpr=fixed(wag);", model="WAG+G4"),
}

# name -> program ("mbgpu", "mb" = bin/mb, "mb-double" = bin/mb-double), `set` options, needs a GPU,
# what the run must report (mbgpu: text in its "Likelihood backend:" line; BEAGLE: "gpu" in a Rsrc Name)
CONTESTANTS = {
    "mbgpu-cpu": dict(program="mbgpu", backend="cpu", set="", gpu=False),
    "mbgpu-cpu-single": dict(program="mbgpu", backend="cpu", set="beagleprecision=single", gpu=False),
    "mbgpu-gpu": dict(program="mbgpu", backend="gpu", set="beagleprecision=double", gpu=True),
    "mbgpu-gpu-single": dict(program="mbgpu", backend="gpu", set="beagleprecision=single", gpu=True),
    "mb-sse": dict(program="mb", set="usebeagle=no", gpu=False),
    "mb-beagle-cpu-double": dict(program="mb", set="usebeagle=yes beagledevice=cpu beagleprecision=double",
                                 gpu=False, beagle="cpu"),
    "mb-beagle-cpu-single": dict(program="mb", set="usebeagle=yes beagledevice=cpu beagleprecision=single",
                                 gpu=False, beagle="cpu"),
    "mb-beagle-gpu-double": dict(program="mb", set="usebeagle=yes beagledevice=gpu beagleprecision=double",
                                 gpu=True, beagle="gpu"),
    "mb-beagle-gpu-single": dict(program="mb", set="usebeagle=yes beagledevice=gpu beagleprecision=single",
                                 gpu=True, beagle="gpu"),
    "mb-double": dict(program="mb-double", set="", gpu=False),
}
DEFAULT_PEERS = [k for k, v in CONTESTANTS.items() if not v["gpu"]]

GEN_LINE = re.compile(r"^\s+(\d+) -- [\[(]")        # "      1000 -- (-6074.237) [-6010.722] ..."
THREAD_VARS = ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- set-up
def default_peers_dir() -> str:
    shared = os.path.normpath(os.path.join(REPO, "..", "shared", "peers"))
    device = os.path.join(REPO, ".device", "peers")
    if not os.path.isdir(shared) and os.path.isdir(device):
        return device
    return shared


def machine_info() -> dict:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    gpus = []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
        if out.returncode == 0:
            gpus = [g.strip() for g in out.stdout.splitlines() if g.strip()]
    except (OSError, subprocess.SubprocessError):
        pass
    commit = ""
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=30)
        if head.returncode == 0:
            commit = head.stdout.strip()
            dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=30)
            if dirty.returncode == 0 and dirty.stdout.strip():
                commit += " + local changes"
    except (OSError, subprocess.SubprocessError):
        pass
    return {"cpu": cpu, "nproc": os.cpu_count(), "usable_cpus": usable, "gpus": gpus,
            "python": platform.python_version(), "mbgpu_commit": commit, "host": platform.node()}


def command_line() -> str:
    argv = getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv
    return shlex.join(argv)


def _import_mcmc_gpu():
    """benchmarks/mcmc_gpu.py (simulate, write_nexus, CASES); it imports mbgpu, taken from this source tree
    (benchmarks/source_tree.py) when the running Python has none."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    try:
        import mbgpu  # noqa: F401
    except ImportError:
        import source_tree
        sys.path.insert(0, source_tree.import_path(REPO))
    import mcmc_gpu
    return mcmc_gpu


def _nexus_dims(path: str) -> tuple[int, int]:
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(20_000)
    ntax = re.search(r"ntax\s*=\s*(\d+)", head, re.I)
    nchar = re.search(r"nchar\s*=\s*(\d+)", head, re.I)
    return (int(ntax.group(1)) if ntax else 0, int(nchar.group(1)) if nchar else 0)


def prepare_data(name: str, folder: str) -> dict:
    """The data set's NEXUS file in `folder` (made once) and its description."""
    spec = DATASETS[name]
    os.makedirs(folder, exist_ok=True)
    if "source" in spec:
        path = os.path.join(folder, "primates.nex")
        if not os.path.exists(path):
            with open(os.path.join(REPO, spec["source"]), encoding="utf-8", errors="replace") as f:
                text = f.read()
            block = re.search(r"begin\s+data\s*;.*?\bend\s*;", text, re.I | re.S)
            if block is None:
                raise RuntimeError("no data block in %s" % spec["source"])
            _write_atomic(path, "#NEXUS\n\n" + block.group(0) + "\n")
        datatype = "dna"
    else:
        path = os.path.join(folder, "%s-seed%d.nex" % (name, spec["seed"]))
        mcmc_gpu = _import_mcmc_gpu()
        case = mcmc_gpu.CASES[spec["case"]]
        datatype = case["spec"].datatype
        if not os.path.exists(path):
            log("simulating %s (%d taxa x %d sites, %s, seed %d) -> %s" % (name, spec["n_taxa"], spec["n_sites"],
                                                                           spec["model"], spec["seed"], path))
            states = mcmc_gpu.simulate(spec["n_taxa"], spec["n_sites"], case["spec"], seed=spec["seed"])
            tmp = path + ".tmp%d" % os.getpid()
            mcmc_gpu.write_nexus(tmp, states, case["alphabet"], datatype)
            os.replace(tmp, path)
    ntax, nchar = _nexus_dims(path)
    return {"name": name, "path": path, "ntax": ntax, "nchar": nchar, "datatype": datatype,
            "model": spec["model"], "lset": spec["lset"], "prset": spec["prset"]}


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w", encoding="ascii") as f:
        f.write(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------- runs
class Runner:
    """Runs one contestant's processes on one data set in its own folder."""

    def __init__(self, name: str, data: dict, folder: str, args, mbgpu_env: dict):
        self.name, self.data, self.folder, self.args = name, data, folder, args
        self.spec = CONTESTANTS[name]
        os.makedirs(folder, exist_ok=True)
        link = os.path.join(folder, "data.nex")
        if os.path.lexists(link):
            os.remove(link)
        try:
            os.symlink(data["path"], link)
        except OSError:
            import shutil
            shutil.copyfile(data["path"], link)
        self.env = dict(os.environ)
        for var in THREAD_VARS:
            self.env[var] = str(args.threads)
        program = self.spec["program"]
        if program == "mbgpu":
            self.env.update(mbgpu_env)
            self.env["PYTHONUNBUFFERED"] = "1"
            self.argv = [args.python, "-m", "mbgpu", "--backend=%s" % self.spec["backend"]]
        else:
            binary = os.path.join(args.peers_dir, "bin", "mb" if program == "mb" else "mb-double")
            self.argv = [binary]

    def set_options(self) -> str:
        opts = self.spec["set"]
        if self.spec.get("beagle") == "cpu":
            # resource 0 is BEAGLE's CPU; left at 99 (auto), MrBayes benchmarks the resources and takes the
            # fastest, a GPU where there is one, whatever beagledevice says
            opts += " beagleresource=0"
            opts += (" beaglethreads=no" if self.args.threads == 1
                     else " beaglethreads=yes beaglethreadcount=%d" % self.args.threads)
        elif self.spec.get("beagle") == "gpu":
            opts += " beagleresource=%d" % self.args.beagle_gpu_resource
        return opts

    def block(self, tag: str, ngen: int, printfreq: int) -> str:
        a, d = self.args, self.data
        model = "  ".join(x for x in (d["lset"], d["prset"]) if x)
        return ("#NEXUS\n\nbegin mrbayes;\n"
                "  set autoclose=yes nowarn=yes seed=%d swapseed=%d %s;\n"
                "  execute data.nex;\n"          # MrBayes skips what follows `execute` on its line
                "  %s\n"
                "  mcmc ngen=%d nchains=%d nruns=%d samplefreq=%d printfreq=%d diagnfreq=%d filename=%s;\n"
                "end;\n" % (a.seed, a.seed, self.set_options(), model, ngen, a.nchains, a.nruns, a.samplefreq,
                            printfreq, a.diagnfreq, tag))

    def run(self, tag: str, ngen: int, printfreq: int, timeout: float, stop=None) -> dict:
        """One process: wall time, the generation lines' times, CPU time; `stop(stamps)` -> True kills it."""
        nex = os.path.join(self.folder, tag + ".nex")
        _write_atomic(nex, self.block(tag, ngen, printfreq))
        out_path, err_path = os.path.join(self.folder, tag + ".out"), os.path.join(self.folder, tag + ".err")
        stamps: list[tuple[int, float]] = []
        info = {"tag": tag, "ngen": ngen, "stopped": False, "timed_out": False}
        with open(out_path, "w", encoding="utf-8") as out, open(err_path, "w", encoding="utf-8") as err:
            t0 = time.perf_counter()
            try:
                proc = subprocess.Popen(self.argv + [tag + ".nex"], cwd=self.folder, env=self.env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True,
                                        errors="replace", start_new_session=True)
            except OSError as exc:                   # e.g. no bin/mb in --peers-dir
                info.update(error="cannot start %s: %s" % (self.argv[0], exc.strerror or exc), tail="", rc=None,
                            wall=float("nan"), cpu=float("nan"), stamps=[], first_line=float("nan"), runs_on="")
                return info

            def kill():
                try:
                    os.killpg(proc.pid, signal.SIGKILL)   # the group this Popen started (MrBayes ignores SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass

            def on_timeout():
                info["timed_out"] = True
                kill()

            watchdog = threading.Timer(timeout, on_timeout)
            watchdog.daemon = True
            watchdog.start()
            status, usage = 0, None
            try:
                for line in proc.stdout:
                    now = time.perf_counter() - t0
                    out.write(line)
                    m = GEN_LINE.match(line)
                    if m:
                        stamps.append((int(m.group(1)), now))
                        if stop is not None and not info["stopped"] and stop(stamps):
                            info["stopped"] = True
                            kill()
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
            finally:
                watchdog.cancel()
                proc.stdout.close()
                if proc.returncode is None:
                    kill()
                    proc.wait()
            info["wall"] = time.perf_counter() - t0
        info["rc"] = proc.returncode
        info["cpu"] = (usage.ru_utime + usage.ru_stime) if usage is not None else float("nan")
        info["stamps"] = stamps
        info["first_line"] = stamps[0][1] if stamps else float("nan")
        with open(out_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        info["runs_on"] = self._runs_on(text)
        problem = self._problem(info, text)
        if problem:
            tail = _tail(err_path) or _tail(out_path)
            info["error"] = problem
            if info["timed_out"] or info["rc"] != 0 and not info["stopped"] or not stamps:
                info["tail"] = tail                  # the program's own words: printed with the failure
                if tail and not info["timed_out"]:
                    info["error"] += ": " + tail.splitlines()[-1].strip()[:160]
        return info

    @staticmethod
    def _runs_on(text: str) -> str:
        found = []
        for pattern in (r"Likelihood backend: (.+)", r"Impl Name : (\S+)", r"Using (.+?) likelihood calculator"):
            for m in re.finditer(pattern, text):
                value = m.group(1).strip()
                if value not in found:
                    found.append(value)
        return "; ".join(found)

    def _problem(self, info: dict, text: str) -> str:
        if info["timed_out"]:
            return "no end after %.0f s (--timeout)" % info["wall"]
        if not info["stopped"] and info["rc"] != 0:
            return "exit status %s" % info["rc"]
        if not info["stamps"]:
            return "no generation line in its output"
        if self.spec.get("beagle"):
            resources = [r.strip() for r in re.findall(r"Rsrc Name : (.+)", text)]
            impls = re.findall(r"Impl Name : (\S+)", text)
            if "Failed to start BEAGLE instance" in text:
                return "BEAGLE did not start (MrBayes fell back to its own code)"
            if not resources:
                return "no BEAGLE resource line (BEAGLE not used?)"
            on_cpu = ["cpu" in r.lower() for r in resources]
            if self.spec["beagle"] == "gpu" and any(on_cpu):
                return "BEAGLE took a CPU resource (%s): no usable GPU" % resources[on_cpu.index(True)]
            if self.spec["beagle"] == "cpu" and not all(on_cpu):
                return "BEAGLE took a non-CPU resource (%s)" % resources[on_cpu.index(False)]
            precision = "double" if "beagleprecision=double" in self.spec["set"] else "single"
            wrong = [i for i in impls if precision not in i.lower()]
            if wrong:
                return "BEAGLE implementation %s is not %s precision" % (wrong[0], precision)
        if self.spec["program"] == "mbgpu" and self.spec["backend"] == "gpu" and "CUDA GPU" not in info["runs_on"]:
            return "mbgpu did not report the CUDA backend (%s)" % (info["runs_on"] or "no backend line")
        if self.spec["program"] == "mbgpu" and "single" in self.spec["set"] and "single precision" not in info["runs_on"]:
            return "mbgpu did not report single precision (%s)" % (info["runs_on"] or "no backend line")
        return ""


def _tail(path: str, n: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [l.rstrip() for l in f.read().splitlines() if l.strip()]
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def nice(x: float) -> int:
    """Two significant digits (at least 1)."""
    if x < 1:
        return 1
    digits = int(math.floor(math.log10(x))) - 1
    return max(1, int(round(x / 10 ** digits) * 10 ** digits)) if digits > 0 else int(round(x))


def calibrate(runner: Runner, args) -> dict:
    """A run with a huge ngen, printfreq --calib-printfreq, killed once the rate is clear: its rate and
    start-up, and from them ngen_short and ngen_long."""
    window = max(2.0, args.calib_fraction * args.seconds)

    def enough(stamps):
        t_first = stamps[0][1]
        later = [s for s in stamps[1:] if s[0] > stamps[0][0]]
        elapsed = stamps[-1][1] - t_first
        return (elapsed >= window and len(later) >= 3) or (elapsed >= 4 * window and len(later) >= 2)

    info = runner.run("calib", 100_000_000, args.calib_printfreq, args.timeout, stop=enough)
    if "error" in info:
        return info
    stamps = info["stamps"]
    if not info["stopped"] or len(stamps) < 2:
        info["error"] = "calibration saw too few generation lines (%d)" % len(stamps)
        info["tail"] = _tail(os.path.join(runner.folder, "calib.err")) or _tail(os.path.join(runner.folder,
                                                                                              "calib.out"))
        return info
    t_first, t_last = stamps[0][1], stamps[-1][1]
    # the second half of the window: past first-use compiles
    half = [s for s in stamps[1:] if s[1] >= t_first + (t_last - t_first) / 2]
    a, b = (half[0], half[-1]) if len(half) >= 2 else (stamps[-2], stamps[-1])
    rate = (b[0] - a[0]) / (b[1] - a[1]) if b[1] > a[1] else float("nan")
    if not rate > 0:
        info["error"] = "calibration gave no rate"
        info["tail"] = ""
        return info
    compute = max(args.seconds - t_first, 0.5 * args.seconds)
    ngen_long = max(4, nice(rate * compute))
    ngen_short = max(1, min(nice(ngen_long * args.short), ngen_long - 1))
    info.update(rate=rate, ngen_long=ngen_long, ngen_short=ngen_short)
    return info


def summarize(result: dict) -> None:
    """Median rate over the good rounds, spread, start-up, first line, CPU/wall."""
    rounds = [r for r in result["rounds"] if r.get("rate", float("nan")) > 0]
    if not rounds:
        result["status"] = "failed"
        if not result.get("error"):
            errors = [r.get("error") for r in result["rounds"] if r.get("error")]
            result["error"] = errors[0] if errors else "no valid round"
        return
    rates = [r["rate"] for r in rounds]
    med = statistics.median(rates)
    result.update(status="ok", rate=med, rates=rates, n_rounds=len(rounds),
                  spread=(max(rates) - min(rates)) / med if len(rates) > 1 else None,
                  startup=statistics.median(r["startup"] for r in rounds),
                  first_line=statistics.median(x for r in rounds for x in (r["short"]["first_line"],
                                                                           r["long"]["first_line"])),
                  cpu_per_wall=statistics.median(r["long"]["cpu"] / r["long"]["wall"] for r in rounds),
                  cpu_rate=statistics.median(r["cpu_rate"] for r in rounds),
                  runs_on=rounds[-1]["long"]["runs_on"])


def _slim(run: dict) -> dict:
    """A run for the JSON: no long stamp lists."""
    out = {k: v for k, v in run.items() if k != "stamps"}
    st = run.get("stamps") or []
    out["gen_lines"] = len(st)
    later = [s for s in st if s[0] > 0]
    if len(later) >= 2 and later[-1][1] > later[0][1]:        # rate between printed lines (for comparison)
        out["inrun_rate"] = (later[-1][0] - later[0][0]) / (later[-1][1] - later[0][1])
    return out


def bench_dataset(data: dict, peers: list[str], args, mbgpu_env: dict) -> dict:
    folder = os.path.join(args.work, "runs", data["name"])
    results: dict[str, dict] = {}
    runners: dict[str, Runner] = {}
    for name in peers:
        runner = runners[name] = Runner(name, data, os.path.join(folder, name), args, mbgpu_env)
        res = results[name] = {"contestant": name, "rounds": [], "folder": runner.folder}
        if args.ngen:
            res["ngen_short"], res["ngen_long"] = args.ngen
            res["calibration"] = None
            log("[%s] %-22s ngen %d / %d (given)" % (data["name"], name, *args.ngen))
            continue
        log("[%s] %-22s calibrating ..." % (data["name"], name))
        cal = calibrate(runner, args)
        res["calibration"] = _slim(cal)
        if "error" in cal:
            res["status"], res["error"] = "failed", "calibration: " + cal["error"]
            log("[%s] %-22s FAILED in calibration: %s" % (data["name"], name, cal["error"]))
            if cal.get("tail"):
                log("    " + cal["tail"].replace("\n", "\n    "))
            continue
        res["ngen_short"], res["ngen_long"] = cal["ngen_short"], cal["ngen_long"]
        log("[%s] %-22s ~%.4g gen/s, first line at %.1f s -> ngen %d / %d"
            % (data["name"], name, cal["rate"], cal["first_line"], cal["ngen_short"], cal["ngen_long"]))
    live = [n for n in peers if results[n].get("status") != "failed"]
    for rnd in range(args.rounds):
        order = live if rnd % 2 == 0 else live[::-1]
        for name in order:
            res, runner = results[name], runners[name]
            rec: dict = {"round": rnd + 1}
            short = runner.run("short", res["ngen_short"], args.printfreq, args.timeout)
            rec["short"] = _slim(short)
            long_ = runner.run("long", res["ngen_long"], args.printfreq, args.timeout) if "error" not in short else None
            if long_ is not None:
                rec["long"] = _slim(long_)
            bad = short if "error" in short else long_ if "error" in long_ else None
            if bad is not None:
                rec["error"] = "%s run: %s" % (bad["tag"], bad["error"])
                log("[%s] %-22s round %d FAILED: %s" % (data["name"], name, rnd + 1, rec["error"]))
                if bad.get("tail"):
                    log("    " + bad["tail"].replace("\n", "\n    "))
            else:
                dt = long_["wall"] - short["wall"]
                rec["rate"] = (res["ngen_long"] - res["ngen_short"]) / dt if dt > 0 else float("nan")
                rec["startup"] = short["wall"] - res["ngen_short"] / rec["rate"] if rec["rate"] > 0 else float("nan")
                dc = long_["cpu"] - short["cpu"]
                rec["cpu_rate"] = (res["ngen_long"] - res["ngen_short"]) / dc if dc > 0 else float("nan")
                log("[%s] %-22s round %d: %.1f s / %.1f s -> %.4g gen/s, start-up %.2f s"
                    % (data["name"], name, rnd + 1, short["wall"], long_["wall"], rec["rate"], rec["startup"]))
            res["rounds"].append(rec)
    for name in live:
        summarize(results[name])
    return {"data": data, "contestants": results}


# ----------------------------------------------------------------------------------------------- report
def _fmt_rate(x: float) -> str:
    return "%.3g" % x if x < 100 else "{:,.0f}".format(x)


def table(block: dict, peers: list[str], args) -> str:
    d = block["data"]
    res = block["contestants"]
    mb_rates = [res[n]["rate"] for n in peers if n.startswith("mb-") and res[n].get("status") == "ok"]
    best_mb = max(mb_rates) if mb_rates else None
    best_name = next((n for n in peers if n.startswith("mb-") and res[n].get("status") == "ok"
                      and res[n]["rate"] == best_mb), None)
    lines = ["### %s: %d taxa x %s sites, %s, %s; nchains=%d nruns=%d, %d thread%s"
             % (d["name"], d["ntax"], "{:,}".format(d["nchar"]),
                "DNA" if d["datatype"] == "dna" else d["datatype"], d["model"], args.nchains, args.nruns,
                args.threads, "" if args.threads == 1 else "s"),
             "",
             "| contestant | gen/s (median) | spread | vs best MrBayes%s | start-up s | first line s | CPU/wall "
             "| gen/CPU-s | ngen short / long | runs on |" % (" (%s)" % best_name if best_name else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n in peers:
        r = res[n]
        if r.get("status") != "ok":
            lines.append("| %s | failed | | | | | | | | %s |" % (n, (r.get("error") or "?").replace("|", "/")))
            continue
        spread = "-" if r["spread"] is None else "%.0f%%" % (100 * r["spread"])
        ratio = "%.3gx" % (r["rate"] / best_mb) if best_mb else "-"
        cpu_rate = _fmt_rate(r["cpu_rate"]) if r["cpu_rate"] > 0 else "-"
        lines.append("| %s | %s | %s | %s | %.2f | %.2f | %.2f | %s | %s / %s | %s |"
                     % (n, _fmt_rate(r["rate"]), spread, ratio, r["startup"], r["first_line"], r["cpu_per_wall"],
                        cpu_rate,
                        "{:,}".format(r["ngen_short"]), "{:,}".format(r["ngen_long"]),
                        r["runs_on"].replace("|", "/")))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (python3 -m pydoc benchmarks/peers.py) for details.")
    ap.add_argument("--data", nargs="+", default=["primates"], choices=list(DATASETS), metavar="SET",
                    help="data sets: %s (default primates)" % " ".join(DATASETS))
    ap.add_argument("--peers", nargs="+", default=DEFAULT_PEERS, metavar="NAME",
                    help="contestants: %s, or all (default: the ones without GPU)" % " ".join(CONTESTANTS))
    ap.add_argument("--seconds", type=float, default=10.0, help="wall time of a long run, roughly (default 10)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of short + long runs per contestant (default 2)")
    ap.add_argument("--short", type=float, default=0.25, help="ngen_short / ngen_long (default 0.25)")
    ap.add_argument("--ngen", type=int, nargs=2, metavar=("SHORT", "LONG"),
                    help="fixed ngen for every contestant instead of calibrating")
    ap.add_argument("--threads", type=int, default=1, help="threads per process (mbgpu; BEAGLE CPU) (default 1)")
    ap.add_argument("--nchains", type=int, default=4)
    ap.add_argument("--nruns", type=int, default=2)
    ap.add_argument("--seed", type=int, default=12345, help="seed and swapseed of every run")
    ap.add_argument("--samplefreq", type=int, default=500)
    ap.add_argument("--printfreq", type=int, default=1000)
    ap.add_argument("--diagnfreq", type=int, default=5000)
    ap.add_argument("--calib-printfreq", type=int, default=10, help="printfreq of the calibration run (default 10)")
    ap.add_argument("--calib-fraction", type=float, default=0.4,
                    help="the calibration run goes on for this x --seconds past its first line (at least 2 s)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one process may take (default 900)")
    ap.add_argument("--peers-dir", default=None,
                    help="MrBayes peers folder with bin/mb, bin/mb-double (default ../shared/peers from the repo "
                         "root, else .device/peers)")
    ap.add_argument("--beagle-gpu-resource", type=int, default=1,
                    help="BEAGLE resource of the mb-beagle-gpu-* contestants (showbeagle lists them; default 1, "
                         "the first GPU; the CPU ones use 0)")
    ap.add_argument("--python", default=sys.executable, help="Python that runs `-m mbgpu` (default: this one)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "mbgpu-peers"),
                    help="folder for the data (kept) and the runs (default $TMPDIR/mbgpu-peers)")
    ap.add_argument("--json", default=None, metavar="PATH", help="also save every number here")
    args = ap.parse_args(argv)

    peers: list[str] = []
    for p in args.peers:
        for name in (CONTESTANTS if p == "all" else [p]):
            if name not in CONTESTANTS:
                ap.error("unknown contestant %r (choose from %s)" % (name, ", ".join(CONTESTANTS)))
            if name not in peers:
                peers.append(name)
    if args.ngen and not 0 < args.ngen[0] < args.ngen[1]:
        ap.error("--ngen needs 0 < SHORT < LONG")
    if args.rounds < 1 or args.threads < 1 or args.seconds <= 0:
        ap.error("--rounds, --threads and --seconds must be positive")
    args.peers_dir = os.path.abspath(args.peers_dir or default_peers_dir())
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)

    machine = machine_info()
    log("peers: %s; work folder %s; MrBayes from %s" % (" ".join(peers), args.work, args.peers_dir))
    mbgpu_env: dict = {}
    if any(CONTESTANTS[p]["program"] == "mbgpu" for p in peers):
        check = subprocess.run([args.python, "-c", "import mbgpu"], capture_output=True, text=True)
        if check.returncode != 0:         # not installed for that Python: this source tree's code
            if HERE not in sys.path:
                sys.path.insert(0, HERE)
            import source_tree
            path = source_tree.import_path(REPO)
            mbgpu_env["PYTHONPATH"] = path + os.pathsep + os.environ.get("PYTHONPATH", "")
            log("mbgpu is not importable by %s: using this source tree through %s" % (args.python, path))

    report = {"machine": machine, "command": command_line(), "args": vars(args), "peers": peers, "datasets": {}}
    blocks = []
    try:
        for name in args.data:
            try:
                data = prepare_data(name, os.path.join(args.work, "data"))
            except Exception as err:                      # e.g. no numpy/mbgpu for the simulation
                log("[%s] data set failed: %s: %s" % (name, type(err).__name__, err))
                report["datasets"][name] = {"error": "%s: %s" % (type(err).__name__, err)}
                continue
            block = bench_dataset(data, peers, args, mbgpu_env)
            blocks.append(block)
            report["datasets"][name] = block
    except KeyboardInterrupt:
        log("interrupted: reporting what was measured")
    gpu = ", ".join(machine["gpus"]) if machine["gpus"] else "none"
    print()
    for block in blocks:
        print(table(block, peers, args))
        print()
    print("Machine: %s, nproc %s (%s usable), GPU: %s; Python %s; mbgpu %s; MrBayes 3.2.7a from %s."
          % (machine["cpu"], machine["nproc"], machine["usable_cpus"], gpu, machine["python"],
             machine["mbgpu_commit"] or "?", args.peers_dir))
    print("Command: `%s`" % report["command"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, default=str)
        log("numbers saved in %s" % args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
