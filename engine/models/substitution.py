"""Substitution models: rate matrices normalised to mean rate 1, cached eigensystems, rate categories.

Conventions (those of MrBayes 3.2.7a, verified against its likelihoods):
* Q[i][j] = S[i][j] * pi[j] for i != j, rows sum to zero, scaled so -sum_i pi_i Q_ii = 1.
* Discrete gamma: K equal-weight categories with MrBayes' category means (mbgpu.models.discrete_gamma).
* +I: the variable categories' rates are divided by (1 - pinvar) so the mean rate stays 1; the site
  likelihood is pinvar * L_inv + (1 - pinvar) * (1/K) sum_k L_k.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mbgpu.errors import ModelError
from mbgpu.models.aamatrices import aa_revmat_to_matrix, load_aamodel
from mbgpu.models.discrete_gamma import discrete_gamma
from mbgpu.models.spec import ModelSpec


@dataclass(frozen=True)
class EigenSystem:
    """Q = V diag(values) V^-1; P(t) = V diag(exp(values t)) V^-1 (negatives clamped to 0 like MrBayes)."""

    values: np.ndarray
    vectors: np.ndarray
    inverse: np.ndarray

    @cached_property
    def packed(self) -> np.ndarray:
        """values, vectors and inverse raveled into one float64 array (what a GPU flush uploads)."""
        return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in (self.values, self.vectors,
                                                                                  self.inverse)])

    def transition_matrices(self, times: np.ndarray) -> np.ndarray:
        """P(t) for every t in `times` (any shape): result shape times.shape + (S, S)."""
        times = np.asarray(times, dtype=np.float64)
        expo = np.exp(times[..., None] * self.values)                 # (..., S)
        p = np.matmul(self.vectors * expo[..., None, :], self.inverse)  # V diag(e) V^-1, batched
        np.maximum(p, 0.0, out=p)
        return p


def reversible_eigensystem(q: np.ndarray, pi: np.ndarray) -> EigenSystem:
    """Eigensystem of a time-reversible Q through the symmetric matrix Pi^1/2 Q Pi^-1/2 (eigh)."""
    if np.all(pi > 0.0):
        root = np.sqrt(pi)
        sym = root[:, None] * q / root[None, :]
        sym = 0.5 * (sym + sym.T)
        values, u = np.linalg.eigh(sym)
        return EigenSystem(values, u / root[:, None], u.T * root[None, :])
    values, vectors = np.linalg.eig(q)
    if np.abs(values.imag).max() > 1e-10:
        raise ModelError("rate matrix has complex eigenvalues")
    vectors = vectors.real
    return EigenSystem(values.real, vectors, np.linalg.inv(vectors))


def rate_matrix(exchangeabilities: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Q from a symmetric exchangeability matrix and frequencies, scaled to mean rate 1."""
    q = exchangeabilities * pi[None, :]
    np.fill_diagonal(q, 0.0)
    np.fill_diagonal(q, -q.sum(axis=1))
    mean_rate = -float(np.dot(pi, np.diag(q)))
    if not mean_rate > 0.0:
        raise ModelError("rate matrix has zero mean rate (check rates and frequencies)")
    return q / mean_rate


def nucleotide_exchangeabilities(spec: ModelSpec) -> np.ndarray:
    """4x4 S for nst=1 (JC/F81), 2 (K80/HKY: kappa on AG and CT) or 6 (SYM/GTR, AC AG AT CG CT GT)."""
    if spec.nst == 1:
        rates = np.ones(6)
    elif spec.nst == 2:
        rates = np.array([1.0, spec.kappa, 1.0, 1.0, spec.kappa, 1.0])
    else:
        rates = np.asarray(spec.revmat, dtype=np.float64)
    s = np.zeros((4, 4))
    s[_UPPER_ROWS, _UPPER_COLS] = rates
    return s + s.T


_UPPER_ROWS, _UPPER_COLS = (0, 0, 0, 1, 1, 2), (1, 2, 3, 2, 3, 3)   # np.triu_indices(4, k=1): AC AG AT CG CT GT


def _frequencies(spec: ModelSpec, n: int, default: np.ndarray | None = None) -> np.ndarray:
    """Fixed frequencies of the spec normalised to sum 1; equal (or `default`) when None."""
    if spec.statefreqs is None:
        return np.full(n, 1.0 / n) if default is None else default
    pi = np.asarray(spec.statefreqs, dtype=np.float64)
    if pi.shape != (n,) or np.any(pi < 0.0) or not pi.sum() > 0.0:
        raise ModelError("statefreqs must be %d non-negative numbers, got %r" % (n, spec.statefreqs))
    return pi / pi.sum()


def exchangeabilities_and_frequencies(spec: ModelSpec) -> tuple[np.ndarray, np.ndarray]:
    """(S, pi) for any datatype; standard data is Mk: equal rates and equal frequencies, and under
    `ctype ordered` changes between adjacent states only (MrBayes' SetStdQMatrix)."""
    n = spec.resolved_n_states()
    if spec.datatype in ("dna", "rna"):
        return nucleotide_exchangeabilities(spec), _frequencies(spec, 4)
    if spec.datatype == "standard":
        gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
        s = (gap == 1) if spec.ordered else (gap > 0)
        return s.astype(np.float64), np.full(n, 1.0 / n)
    name = spec.aamodel.lower()
    if name == "gtr":
        if spec.aarevmat is None:
            raise ModelError("aamodel gtr needs aarevmat (190 rates)")
        return aa_revmat_to_matrix(spec.aarevmat), _frequencies(spec, 20)
    s, pi = load_aamodel(name)
    if name == "equalin":
        pi = _frequencies(spec, 20)
    return s, pi


def category_rates_and_weights(spec: ModelSpec) -> tuple[np.ndarray, np.ndarray, float]:
    """Rates and weights of the variable-site categories, and pinvar (rates already / (1 - pinvar))."""
    if spec.rates in ("gamma", "invgamma"):
        rates = discrete_gamma(float(spec.alpha), int(spec.ngammacat))
    else:
        rates = np.ones(1)
    pinvar = float(spec.pinvar) if spec.rates in ("propinv", "invgamma") else 0.0
    rates = rates / (1.0 - pinvar)
    return rates, np.full(rates.size, 1.0 / rates.size), pinvar


@dataclass(frozen=True)
class SubstitutionModel:
    """A built model: frequencies, normalised Q, cached eigensystem, category rates/weights, pinvar."""

    spec: ModelSpec
    frequencies: np.ndarray
    q: np.ndarray
    category_rates: np.ndarray
    category_weights: np.ndarray
    pinvar: float

    @property
    def n_states(self) -> int:
        return int(self.frequencies.size)

    @property
    def n_categories(self) -> int:
        return int(self.category_rates.size)

    @cached_property
    def eigen(self) -> EigenSystem:
        """The eigensystem of Q, computed once per model."""
        return reversible_eigensystem(self.q, self.frequencies)

    def transition_matrices(self, edge_lengths: np.ndarray) -> np.ndarray:
        """P(rate_c * t) for every edge and category: shape (n_edges, n_categories, S, S)."""
        t = np.asarray(edge_lengths, dtype=np.float64)[:, None] * self.category_rates[None, :]
        return self.eigen.transition_matrices(t)

    def with_rates(self, spec: ModelSpec, rates_of: "SubstitutionModel | None" = None) -> "SubstitutionModel":
        """The model of `spec`, which differs from this model's spec at most in its rate variation
        (rates, alpha, ngammacat, pinvar): frequencies, Q and the eigensystem are this model's; the rate
        categories are `rates_of`'s (a model with spec's rate variation) or computed."""
        spec.validate()
        if rates_of is not None:
            rates, weights, pinvar = rates_of.category_rates, rates_of.category_weights, rates_of.pinvar
        else:
            rates, weights, pinvar = category_rates_and_weights(spec)
        model = SubstitutionModel(spec, self.frequencies, self.q, rates, weights, pinvar)
        model.__dict__["eigen"] = self.eigen          # cached_property's own slot (frozen dataclass)
        return model

    def with_q(self, spec: ModelSpec) -> "SubstitutionModel":
        """The model of `spec`, which has this model's rate variation (rates, alpha, ngammacat, pinvar)
        but may differ in anything else: its Q is built, the rate categories are this model's."""
        spec.validate()
        s, pi = exchangeabilities_and_frequencies(spec)
        return SubstitutionModel(spec, pi, rate_matrix(s, pi), self.category_rates, self.category_weights,
                                 self.pinvar)


def build_model(spec: ModelSpec) -> SubstitutionModel:
    """Validate a ModelSpec and build its SubstitutionModel."""
    spec.validate()
    s, pi = exchangeabilities_and_frequencies(spec)
    q = rate_matrix(s, pi)
    rates, weights, pinvar = category_rates_and_weights(spec)
    return SubstitutionModel(spec, pi, q, rates, weights, pinvar)


def empirical_frequencies(tip_partials: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """State frequencies as MrBayes' statefreqpr=fixed(empirical): one pass from equal frequencies.

    Each (taxon, site) cell adds 1/m to each of its m compatible states (a missing cell adds 1/S to
    every state), sites counted with their pattern weights; the totals are normalised to sum 1.
    """
    tp = np.asarray(tip_partials, dtype=np.float64)
    counts = tp.sum(axis=2, keepdims=True)
    share = np.divide(tp, counts, out=np.zeros_like(tp), where=counts > 0)
    totals = np.einsum("tps,p->s", share, np.asarray(weights, dtype=np.float64))
    return totals / totals.sum()
