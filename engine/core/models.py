"""Substitution models and parameter priors built in compiled code, so a parameter proposal needs no
host code: the pattern set's model rows (eigensystem, rate categories, frequencies, +I, multiplier)
from a chain's parameter vector, and the moved parameter's log prior.

The same mathematics as mbgpu.models (rate_matrix, reversible_eigensystem, category_rates_and_weights)
and mbgpu.priors.parameter_log_prior, which stay the reference: `ModelTable` describes each pattern
set once from its base ModelSpec (fixed parts from mbgpu.models.substitution) and says None where a
model is outside what it describes (then the host builds that model as before).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS
from mbgpu.models.discrete_gamma import _discrete_gamma
from mbgpu.models.substitution import exchangeabilities_and_frequencies
from mbgpu.param_kinds import KIND, MULTIPLIERS, RATIO, SIMPLEX
from mbgpu.priors import _dirichlet_alphas

FIXED_S, KAPPA, REVMAT = 0, 1, 2                  # where a set's exchangeabilities come from
P_DIRICHLET, P_BETA, P_EXPONENTIAL, P_UNIFORM, P_RATEMULT = 0, 1, 2, 3, 4
_UPPER = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))      # AC AG AT CG CT GT


class SetModel:
    """One pattern set's model description: int row `desc`, float row `fixed`, S0 and pi0."""

    def __init__(self, spec, division: int, fixed_mult: float, params, layout):
        offsets = {p.kind: (k, p) for k, p in enumerate(params) if division in p.divisions}
        self.s0, self.pi0 = (np.ascontiguousarray(a, dtype=np.float64)
                             for a in exchangeabilities_and_frequencies(spec))
        mode, off_a = FIXED_S, -1
        if "revmat" in offsets:
            mode, off_a = REVMAT, int(layout.off[offsets["revmat"][0]])
        elif "tratio" in offsets:
            mode, off_a = KAPPA, int(layout.off[offsets["tratio"][0]])
        off = {kind: int(layout.off[k]) for kind, (k, _p) in offsets.items()}
        mult = -1
        if "ratemult" in offsets:
            k, p = offsets["ratemult"]
            mult = int(layout.off[k]) + list(p.divisions).index(division)
        gamma = spec.rates in ("gamma", "invgamma")
        inv = spec.rates in ("propinv", "invgamma")
        self.desc = np.array([mode, off_a, off.get("statefreq", -1), int(gamma), int(spec.ngammacat if gamma else 1),
                              off.get("shape", -1), int(inv), off.get("pinvar", -1), mult], dtype=np.int64)
        self.fixed = np.array([float(spec.alpha), float(spec.pinvar) if inv else 0.0, float(fixed_mult)])

    @staticmethod
    def describable(spec, params, division: int) -> bool:
        """Whether SetModel covers this set (nucleotide, or fixed exchangeabilities with free frequencies
        only where they are the model's: not protein GTR). coding=variable leaves the model as it is (the
        divisions add the Mkv correction)."""
        kinds = {p.kind for p in params if division in p.divisions}
        if spec.datatype == "protein" and ("revmat" in kinds or spec.aamodel.lower() == "gtr"):
            return False
        return spec.datatype in ("dna", "rna", "protein", "standard")


class PriorTable:
    """Every free parameter's prior as (kind, args, alphas, weights) rows for param_log_prior."""

    def __init__(self, params, n_chars: dict, layout):
        k = len(params)
        width = max([1] + [int(np.size(p.value)) for p in params])
        self.kind = np.zeros(k, dtype=np.int64)
        self.args = np.zeros((k, 2))
        self.alphas = np.ones((k, width))
        self.weights = np.ones((k, width))
        self.ok = True
        for i, p in enumerate(params):
            n, form = int(np.size(p.value)), KIND[p.kind].form
            if form in (SIMPLEX, MULTIPLIERS):
                self.kind[i] = P_RATEMULT if form == MULTIPLIERS else P_DIRICHLET
                self.alphas[i, :n] = _dirichlet_alphas(p.prior, n)
                if form == MULTIPLIERS:
                    self.weights[i, :n] = [n_chars[d] for d in p.divisions]
            elif form == RATIO:
                self.kind[i] = P_BETA
                self.args[i] = [float(a) for a in (p.prior.args or (1.0, 1.0))]
            elif p.prior.kind == "Exponential":
                self.kind[i] = P_EXPONENTIAL
                self.args[i, 0] = float(p.prior.args[0]) if p.prior.args else 1.0
            elif p.prior.kind == "Uniform":
                self.kind[i] = P_UNIFORM
                self.args[i] = [float(a) for a in p.prior.args]
            else:
                self.ok = False


@numba.njit(**JIT_OPTIONS)
def _log_dirichlet(x, alpha):
    """log Dirichlet(alpha) density at x / sum(x)."""
    total, a_sum, out = 0.0, 0.0, 0.0
    for i in range(x.shape[0]):
        total += x[i]
    for i in range(x.shape[0]):
        a_sum += alpha[i]
        out += (alpha[i] - 1.0) * math.log(x[i] / total) - math.lgamma(alpha[i])
    return out + math.lgamma(a_sum)


@numba.njit(**JIT_OPTIONS)
def param_log_prior(kind, args, alphas, weights, v):
    """mbgpu.priors.parameter_log_prior for one value vector v."""
    n = v.shape[0]
    if kind == P_DIRICHLET:
        return _log_dirichlet(v, alphas[:n])
    if kind == P_BETA:
        a, b = args[0], args[1]
        x = v[0] / (v[0] + v[1])
        return (a - 1) * math.log(x) + (b - 1) * math.log(1 - x) - (math.lgamma(a) + math.lgamma(b)
                                                                    - math.lgamma(a + b))
    if kind == P_EXPONENTIAL:
        return math.log(args[0]) - args[0] * v[0]
    if kind == P_UNIFORM:
        return -math.log(args[1] - args[0])
    total = 0.0                                  # rate multipliers: Dirichlet on n_i m_i / N, with Jacobian
    for i in range(n):
        total += weights[i]
    w = np.empty(n)
    jac = 0.0
    for i in range(n):
        w[i] = weights[i] * v[i] / total
        if i < n - 1:
            jac += math.log(weights[i] / total)
    return _log_dirichlet(w, alphas[:n]) + jac


@numba.njit(**JIT_OPTIONS)
def _eigensystem(q, pi, evals, evecs, einv):
    """reversible_eigensystem through the symmetric Pi^1/2 Q Pi^-1/2; False when a frequency is 0."""
    s = pi.shape[0]
    root = np.empty(s)
    for i in range(s):
        if not pi[i] > 0.0:
            return False
        root[i] = math.sqrt(pi[i])
    sym = np.empty((s, s))
    for i in range(s):
        for j in range(s):
            sym[i, j] = root[i] * q[i, j] / root[j]
    for i in range(s):
        for j in range(i + 1, s):
            m = 0.5 * (sym[i, j] + sym[j, i])
            sym[i, j] = m
            sym[j, i] = m
    values, u = np.linalg.eigh(sym)
    for i in range(s):
        evals[i] = values[i]
        for j in range(s):
            evecs[i, j] = u[i, j] / root[i]
            einv[i, j] = u[j, i] * root[j]
    return True


@numba.njit(**JIT_OPTIONS)
def set_model_row(theta, desc, fixed, s0, pi0, evals, evecs, einv, crates, cweights, freqs, pinvar, mult,
                  new_q, new_rates):
    """A chain's model row of one pattern set from its parameter vector: a new Q and eigensystem when
    new_q, new rate categories (+I, gamma) and multiplier when new_rates. False: not computable here."""
    s = pi0.shape[0]
    if new_q:
        pi = pi0.copy()
        if desc[2] >= 0:
            total = 0.0
            for i in range(s):
                total += theta[desc[2] + i]
            for i in range(s):
                pi[i] = theta[desc[2] + i] / total
        ex = s0.copy()
        if desc[0] != 0:
            rates = np.empty(6)
            if desc[0] == 1:
                kappa = theta[desc[1]] / theta[desc[1] + 1]
                rates[:] = 1.0
                rates[1] = kappa
                rates[4] = kappa
            else:
                total = 0.0
                for i in range(6):
                    total += theta[desc[1] + i]
                for i in range(6):
                    rates[i] = theta[desc[1] + i] / total
            for r in range(6):
                i, j = _UPPER[r]
                ex[i, j] = rates[r]
                ex[j, i] = rates[r]
        q = np.zeros((s, s))
        for i in range(s):
            row = 0.0
            for j in range(s):
                if i != j:
                    q[i, j] = ex[i, j] * pi[j]
                    row += q[i, j]
            q[i, i] = -row
        mean = 0.0
        for i in range(s):
            mean -= pi[i] * q[i, i]
        if not mean > 0.0:
            return False
        for i in range(s):
            for j in range(s):
                q[i, j] /= mean
        if not _eigensystem(q, pi, evals, evecs, einv):
            return False
        freqs[:] = pi
    if new_rates:
        alpha = theta[desc[5]] if desc[5] >= 0 else fixed[0]
        k = desc[4]
        cats = _discrete_gamma(alpha, k) if desc[3] != 0 else np.ones(1)
        pv = 0.0
        if desc[6] != 0:
            pv = theta[desc[7]] if desc[7] >= 0 else fixed[1]
        for i in range(k):
            crates[i] = cats[i] / (1.0 - pv)
            cweights[i] = 1.0 / k
        pinvar[0] = pv
        mult[0] = theta[desc[8]] if desc[8] >= 0 else fixed[2]
    return True


@numba.njit(**JIT_OPTIONS)
def model_proposal(theta, desc, fixed, s0, pi0, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, c,
                   new_q):
    """Chain c's proposed model row (row 1) of one pattern set: its current row with a new Q and
    eigensystem (new_q) or new rate categories and multiplier (otherwise). False: use the host."""
    evals[c, 1] = evals[c, 0]
    evecs[c, 1] = evecs[c, 0]
    einv[c, 1] = einv[c, 0]
    crates[c, 1] = crates[c, 0]
    cweights[c, 1] = cweights[c, 0]
    freqs[c, 1] = freqs[c, 0]
    pinvar[c, 1] = pinvar[c, 0]
    mult[c, 1] = mult[c, 0]
    return set_model_row(theta, desc, fixed, s0, pi0, evals[c, 1], evecs[c, 1], einv[c, 1], crates[c, 1],
                         cweights[c, 1], freqs[c, 1], pinvar[c, 1:2], mult[c, 1:2], new_q, not new_q)
