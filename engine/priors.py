"""Log prior densities as MrBayes 3.2.7a computes them: branch lengths, topology, model parameters.

Fixed parameters contribute nothing. Checked against the LnPr of MrBayes' Gen-0 rows
(shared/data/mrbayes/reference_runs/p_headers).
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.errors import NotImplementedYet
from mbgpu.param_kinds import KIND, MULTIPLIERS, RATIO, SCALAR, SIMPLEX


def lgamma_sum(a: np.ndarray) -> float:
    """The sum of log Gamma over a (math.lgamma: importing scipy.special cost 0.15 s of start-up)."""
    return sum(math.lgamma(v) for v in np.asarray(a, float).ravel().tolist())


def log_dirichlet(x: np.ndarray, alpha: np.ndarray) -> float:
    """log density of Dirichlet(alpha) at x (x on the simplex)."""
    x, alpha = np.asarray(x, float), np.asarray(alpha, float)
    return float(math.lgamma(alpha.sum()) - lgamma_sum(alpha) + ((alpha - 1.0) * np.log(x)).sum())


def log_double_factorial_odd(n: int) -> float:
    """log(n!!) for odd n >= 1 (the number of unrooted topologies of k taxa is (2k-5)!!)."""
    return float(sum(math.log(k) for k in range(3, n + 1, 2)))


def topology_log_prior(n_taxa: int) -> float:
    """Uniform prior over unrooted binary topologies."""
    return -log_double_factorial_odd(2 * n_taxa - 5) if n_taxa > 3 else 0.0


def brlens_log_prior(prior, lengths: np.ndarray, is_terminal: np.ndarray) -> float:
    """`brlenspr` for unconstrained trees: gammadir, exponential or uniform."""
    if prior.kind != "Unconstrained":
        raise NotImplementedYet("brlenspr=%s is not supported yet" % prior.kind.lower())
    sub = prior.sub
    b = np.asarray(lengths, float)
    if sub.kind == "Exponential":
        lam = float(sub.args[0])
        return float(b.size * math.log(lam) - lam * b.sum())
    if sub.kind == "Uniform":
        lo, hi = map(float, sub.args)
        return float(-b.size * math.log(hi - lo))
    if sub.kind == "GammaDir":
        return _GammaDir(sub, np.asarray(is_terminal))(b)
    raise NotImplementedYet("brlenspr=unconstrained:%s is not supported yet" % sub.kind.lower())


_add = np.add.reduce            # ndarray.sum without its Python wrapper: the same reduction


class _GammaDir:
    """MrBayes' gammadir(a_T, b_T, a, c) branch-length prior for one set of edges (terminal or not):
    Gamma(a_T, rate b_T) on the tree length T times Dirichlet(a for terminal, a*c for internal edges) on
    the proportions t/T, with the Jacobian T^-(n-1) of the change of variables (Rannala et al. 2012,
    Eq. 36; MrBayes 3.2.7a LogDirPrior and LogPrior in mcmc.c: c is the ratio of the mean internal to
    the mean terminal length, so the internal concentration is a*c). What depends only on the edges is
    computed once."""

    def __init__(self, sub, is_terminal: np.ndarray):
        a_t, b_t, a, c = map(float, sub.args)
        alphas = np.where(is_terminal, a, a * c)
        self.norm = math.lgamma(alphas.sum()) - lgamma_sum(alphas)
        self.alpha_less_one = alphas - 1.0
        self.a_t, self.b_t, self.head = a_t, b_t, a_t * math.log(b_t) - math.lgamma(a_t)

    def __call__(self, b: np.ndarray) -> float:
        tl = _add(b)
        log_gamma_tl = self.head + (self.a_t - 1.0) * math.log(tl) - self.b_t * tl
        log_dir = float(self.norm + _add(self.alpha_less_one * np.log(b / tl)))
        return float(log_gamma_tl + log_dir - (b.size - 1) * math.log(tl))


class BrlensPrior:
    """brlens_log_prior for trees of one shape (root and node count): the edge list and, for gammadir,
    the parts that do not depend on the lengths are kept."""

    def __init__(self, prior, parent: np.ndarray, n_tips: int):
        self.prior, self.root = prior, int(np.flatnonzero(parent < 0)[0])
        self.edges = np.flatnonzero(parent >= 0)
        self.is_terminal = self.edges < n_tips
        sub = getattr(prior, "sub", None)
        gammadir = prior.kind == "Unconstrained" and sub is not None and sub.kind == "GammaDir"
        self._gammadir = _GammaDir(sub, self.is_terminal) if gammadir else None

    def fits(self, tree) -> bool:
        return tree.parent.size == self.edges.size + 1 and tree.parent[self.root] < 0

    def __call__(self, brlen: np.ndarray) -> float:
        b = brlen[self.edges]
        if self._gammadir is None:
            return brlens_log_prior(self.prior, b, self.is_terminal)
        return self._gammadir(b)


def _dirichlet_alphas(prior, n: int) -> np.ndarray:
    """One value stands for all n; so do equal values of another count (the table's default
    Dirichlet(1,1,1,1) is MrBayes' all-ones default, 20 ones for protein frequencies)."""
    args = [float(a) for a in prior.args] or [1.0]
    return np.full(n, args[0]) if len(args) == 1 or (len(args) != n and len(set(args)) == 1) else np.array(args)


def parameter_log_prior(p, n_chars: dict[int, float] | None = None, value=None) -> float:
    """Log prior of one FreeParameter at `value` (default: its start value)."""
    kind, prior, form = p.kind, p.prior, KIND[p.kind].form
    v = np.asarray(p.value if value is None else value, float)
    if form == SIMPLEX:
        return log_dirichlet(v / v.sum(), _dirichlet_alphas(prior, v.size))
    if form == RATIO:
        a, b = map(float, prior.args or (1.0, 1.0))
        x = v[0] / (v[0] + v[1])
        return float((a - 1) * math.log(x) + (b - 1) * math.log(1 - x) - (math.lgamma(a) + math.lgamma(b)
                                                                          - math.lgamma(a + b)))
    if form == SCALAR:
        if prior.kind == "Exponential":
            lam = float(prior.args[0]) if prior.args else 1.0
            return float(math.log(lam) - lam * v[0])
        if prior.kind == "Uniform":
            lo, hi = map(float, prior.args)
            return float(-math.log(hi - lo))
    if form == MULTIPLIERS:
        return _ratemult_log_prior(p, n_chars or {}, v)
    raise NotImplementedYet("the prior %s for %s is not supported yet" % (prior, kind))


def _ratemult_log_prior(p, n_chars: dict[int, float], value) -> float:
    """Dirichlet on the character-weighted multipliers w_i = n_i m_i / N, with its Jacobian."""
    n = np.array([n_chars[d] for d in p.divisions], float)
    total = n.sum()
    w = n * np.asarray(value, float) / total
    alphas = _dirichlet_alphas(p.prior, w.size)
    return log_dirichlet(w / w.sum(), alphas) + float(np.log(n[:-1] / total).sum())
