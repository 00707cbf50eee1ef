"""A small compiled Metropolis-Hastings sampler of a clock-tree prior: the clock moves of
mbgpu.clock.tree_moves / topology_moves, mixed by weight, against a log-prior function, so a test can
compare the sampled node ages and topologies with an analytic distribution or with MrBayes `data=no`.

The mbgpu.clock kernels are numba dispatchers; `compiled()` lists them by name, and `jit_over(f)`
compiles a test's own function (a log prior over the tree arrays and a tuple of arguments) with those
names bound.
"""
from __future__ import annotations

import functools
import importlib
import math
import types

import numba
import numpy as np
from numba.core.registry import CPUDispatcher as Dispatcher

from mbgpu.clock import tree_moves as tm
from mbgpu.clock.topology_moves import ext_spr_clock, nni_clock
from mbgpu.clock.tree_moves import node_slider_clock, tree_stretch
from mbgpu.core import rng

MODULES = ("special", "distributions", "rooted", "tree_priors", "tree_moves", "topology_moves")
MOVES = ("node_slider_clock", "tree_stretch", "ext_spr_clock", "nni_clock")
# MrBayes' default weights and tuning of the four moves (ParsSPRClock's weight left out)
WEIGHTS = (tm.NODESLIDER_WEIGHT, tm.TREESTRETCH_WEIGHT, tm.EXTSPR_WEIGHT, tm.NNI_WEIGHT)
TUNINGS = (tm.NODESLIDER_DELTA, tm.TREESTRETCH_LAMBDA, tm.EXTSPR_P_EXT, 0.0)


@functools.lru_cache(maxsize=None)
def compiled(modules: tuple = MODULES) -> dict:
    """{name: numba dispatcher} of every kernel of mbgpu.clock.<modules> (decorated there)."""
    out = {}
    for mod in modules:
        module = importlib.import_module("mbgpu.clock." + mod)
        out.update({name: f for name, f in vars(module).items()
                    if isinstance(f, Dispatcher) and f.py_func.__module__ == module.__name__})
    return out


def jit_over(f, modules: tuple = MODULES, helpers=(), names=None):
    """f compiled with the clock functions it names bound to their compiled versions (those of `modules`),
    the test's own `helpers` compiled beside them, and `names` ({name: dispatcher}) bound as given."""
    space = dict(f.__globals__)
    space.update(compiled(modules))
    space.update({h.__name__: numba.njit(h) for h in helpers})
    space.update(names or {})
    return numba.njit(types.FunctionType(f.__code__, space, f.__name__, f.__defaults__, f.__closure__))


def _mh_loop(s, cdf, tunings, parent, kids, depth, n_tips, lo, hi, locked, ln_prior, pargs, n_gen, thin,
             out_parent, out_depth, tried, accepted):
    """n_gen generations; every thin-th state goes to out_parent / out_depth."""
    cur = ln_prior(parent, depth, n_tips, pargs)
    old_parent, old_kids, old_depth = parent.copy(), kids.copy(), depth.copy()
    k = 0
    for g in range(n_gen):
        m = rng.pick(s, cdf)
        old_parent[:] = parent
        old_kids[:, :] = kids
        old_depth[:] = depth
        if m == 0:
            r = node_slider_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[0])
        elif m == 1:
            r = tree_stretch(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[1])
        elif m == 2:
            r = ext_spr_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[2])
        else:
            r = nni_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[3])
        tried[m] += 1
        ok = False
        if r > -math.inf:
            new = ln_prior(parent, depth, n_tips, pargs)
            if math.log(rng.uniform(s)) < new - cur + r:
                cur = new
                ok = True
        if ok:
            accepted[m] += 1
        else:
            parent[:] = old_parent
            kids[:, :] = old_kids
            depth[:] = old_depth
        if (g + 1) % thin == 0:
            out_parent[k] = parent
            out_depth[k] = depth
            k += 1


@functools.lru_cache(maxsize=None)
def _loop():
    return jit_over(_mh_loop)


def sample(parent, depth, n_tips, ln_prior, pargs, lo, hi, locked, n_samples, thin, seed,
           weights=WEIGHTS, tunings=TUNINGS, burnin=0):
    """(parents, depths, acceptance) of n_samples states, one every `thin` generations after `burnin`
    generations, of the chain started at (parent, depth) with the given move weights (order MOVES);
    `ln_prior(parent, depth, n_tips, pargs)` is a compiled log prior (jit_over)."""
    from mbgpu.clock.rooted import children
    parent, depth = parent.astype(np.int64).copy(), depth.astype(np.float64).copy()
    kids = children(parent)
    s = rng.seed_states(seed, [(0, 0)])[0]
    cdf = np.cumsum(np.asarray(weights, dtype=np.float64))
    cdf /= cdf[-1]
    tunings = np.asarray(tunings, dtype=np.float64)
    tried, accepted = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    out_parent = np.empty((max(n_samples, 1), parent.size), dtype=np.int64)
    out_depth = np.empty((max(n_samples, 1), parent.size))
    if burnin:
        _loop()(s, cdf, tunings, parent, kids, depth, n_tips, lo, hi, locked, ln_prior, pargs, burnin,
                burnin, out_parent, out_depth, tried, accepted)
    _loop()(s, cdf, tunings, parent, kids, depth, n_tips, lo, hi, locked, ln_prior, pargs, n_samples * thin,
            thin, out_parent, out_depth, tried, accepted)
    return out_parent[:n_samples], out_depth[:n_samples], accepted / np.maximum(tried, 1)
