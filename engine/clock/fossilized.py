"""The fossilized birth-death tree prior of MrBayes 3.2.7a (LnFossilizedBDPriorRandom / Diversity /
FossilTip in mcmc.c), with fossil-sampling rate shifts (`prset samplestrat=random s: t_1 ... t_s`; the
birth and death rate shifts of the C code have no command in 3.2.7a and are not modelled).

Parameters as MrBayes samples them: d = net_speciation, r = relative_extinction, s = relative_fossilization,
ρ = sampleprob. Random and diversity: λ = d/(1-r), μ = rλ, ψ = μs/(1-s); fossiltip: λ = d/(1-r),
μ = λr(1-s), ψ = λrs. Fossil tips are tips deeper than 0; a sampled ancestor is a tip on a zero-length
branch (MrBayes' internal node with a zero-length child). Slices: t_f = shift times then 0; diversity
adds MrBayes' cut at 0.95 x the youngest fossil or bifurcation, below which ψ = 0 and ρ = 1.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.limits import BRLENS_MIN    # slice-time tolerances
from mbgpu.clock.rooted import branch_lengths, children, root_of
from mbgpu.clock.tree_priors import DIVERSITY, FOSSILTIP, RANDOM, tree_age_term
from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def _slice_of(t, t_f, sl) -> int:
    """Slice_i: the interval index i with t_f[i] <= t (tolerance BRLENS_MIN/5), sl when none."""
    i = 0
    while t < t_f[i] + BRLENS_MIN / 5:
        i += 1
        if i > sl:
            return sl
    return i


@numba.njit(**JIT_OPTIONS)
def _ln_q(t, t_f, sl, c1, c2) -> float:
    """LnQi_fossil."""
    i = _slice_of(t, t_f, sl)
    e = math.exp(c1[i] * (t_f[i] - t))
    return math.log(4.0) + c1[i] * (t_f[i] - t) - 2.0 * math.log(1 + c2[i] + (1 - c2[i]) * e)


@numba.njit(**JIT_OPTIONS)
def _ln_pi(t, t_f, sl, c1, c2, lam, mu, psi) -> float:
    """LnPi_fossil: no sampled descendants."""
    i = _slice_of(t, t_f, sl)
    e = math.exp(c1[i] * (t_f[i] - t))
    other = lam[i] + mu[i] + psi[i] - c1[i] * (1 + c2[i] - (1 - c2[i]) * e) / (1 + c2[i] + (1 - c2[i]) * e)
    return math.log(other) - math.log(2 * lam[i])


@numba.njit(**JIT_OPTIONS)
def _slices(t_f, tmrca, lam, mu, psi, rho):
    """c1, c2 and p_t of every slice, oldest first (the loop of LnFossilizedBDPriorRandom)."""
    sl = t_f.shape[0] - 1
    c1, c2, p_t = np.zeros(sl + 1), np.zeros(sl + 1), np.zeros(sl + 1)
    for i in range(sl, -1, -1):
        c1[i] = math.sqrt((lam[i] - mu[i] - psi[i]) ** 2 + 4 * lam[i] * psi[i])
        keep = 1.0 if i == sl else p_t[i + 1]
        c2[i] = ((1 - 2 * (1 - rho[i]) * keep) * lam[i] + mu[i] + psi[i]) / c1[i]
        e = math.exp(c1[i] * (t_f[i] - (t_f[i - 1] if i > 0 else tmrca)))
        p_t[i] = (lam[i] + mu[i] + psi[i] - c1[i] * (1 + c2[i] - (1 - c2[i]) * e) / (1 + c2[i] + (1 - c2[i]) * e)) \
            * 0.5 / lam[i]
    return c1, c2, p_t


@numba.njit(**JIT_OPTIONS)
def ln_fossilized_bd(parent, depth, n_tips, clock_rate, net_speciation, relative_extinction,
                     fossilization, sample_prob, strategy, age_kind, age_p, root_dated,
                     shift_times=np.zeros(0)) -> float:
    """clock:fossilization log prior for samplestrat random, diversity or fossiltip. `fossilization`
    holds relative_fossilization per fossil-sampling interval, oldest first (s+1 values for the s
    `samplestrat=random s: t_1 ... t_s` shift times, given decreasing, in time units; one value and
    no shift times otherwise). Fossiltip takes no shifts."""
    if strategy == FOSSILTIP:
        assert shift_times.shape[0] == 0
        return _fossil_tip(parent, depth, n_tips, clock_rate, net_speciation, relative_extinction,
                           fossilization[0], sample_prob, age_kind, age_p, root_dated)
    assert strategy == RANDOM or strategy == DIVERSITY
    assert fossilization.shape[0] == shift_times.shape[0] + 1
    root = root_of(parent)
    tmrca = depth[root] / clock_rate
    length = branch_lengths(parent, depth)
    kids = children(parent)
    t_f, lam, mu, psi, rho = _intervals(depth, length, kids, n_tips, clock_rate, tmrca, net_speciation,
                                        relative_extinction, fossilization, sample_prob, strategy, shift_times)
    sl = t_f.shape[0] - 1
    c1, c2, p_t = _slices(t_f, tmrca, lam, mu, psi, rho)
    ln_p = 0.0
    n_fossil = n_extant = 0
    for v in range(parent.shape[0]):
        x = depth[v] / clock_rate
        if v >= n_tips:
            if length[kids[v, 0]] > 0.0 and length[kids[v, 1]] > 0.0:
                if v != root:
                    ln_p += math.log(lam[_slice_of(x, t_f, sl)]) + _ln_q(x, t_f, sl, c1, c2)
            else:
                ln_p += _ln_sampled_ancestor(depth[v], x, t_f, sl, clock_rate, psi, rho)
        elif length[v] > 0.0:
            if depth[v] > 0.0:
                ln_p += _ln_fossil_tip(depth[v], x, t_f, sl, clock_rate, c1, c2, lam, mu, psi, rho, p_t)
                n_fossil += 1
            else:
                if strategy == RANDOM:
                    ln_p += math.log(rho[sl])
                n_extant += 1
        if v != root:
            for j in range(sl):                       # degree-two vertices at slice time t_j
                tj = t_f[j] * clock_rate
                if length[v] > 0.0 and depth[v] + BRLENS_MIN / 10 < tj < depth[parent[v]] + BRLENS_MIN / 10:
                    ln_p += _ln_q(t_f[j], t_f, sl, c1, c2) + math.log(1 - rho[j])
    ln_p += 2.0 * (_ln_q(tmrca, t_f, sl, c1, c2) - math.log(1 - p_t[0]))
    if strategy == DIVERSITY:
        m_x = int(math.floor(n_extant / sample_prob + 0.5)) - n_extant
        e = math.exp((mu[sl] - lam[sl]) * t_f[sl - 1])
        ln_p += m_x * (math.log(lam[sl] * (1.0 - e)) - math.log(lam[sl] - mu[sl] * e))
    ln_p += (n_fossil + n_extant - 1) * math.log(2.0)
    return ln_p + tree_age_term(tmrca, root_dated, age_kind, age_p)


@numba.njit(**JIT_OPTIONS)
def _intervals(depth, length, kids, n_tips, clock_rate, tmrca, net_speciation, relative_extinction,
               fossilization, sample_prob, strategy, shift_times):
    """Slice times t_f (shift times, diversity's cut, 0) and each slice's λ, μ, ψ, ρ (ρ = 1e-20 at shift
    times; sampleprob at 0 for random, 1 below diversity's cut where ψ = 0)."""
    s = shift_times.shape[0]
    sl = s if strategy == RANDOM else s + 1
    t_f = np.zeros(sl + 1)
    t_f[:s] = shift_times
    if strategy == DIVERSITY:
        x_cut = _diversity_cut(depth, length, kids, n_tips, clock_rate, tmrca)
        if s > 0 and x_cut > t_f[s - 1]:
            x_cut = t_f[s - 1]
        t_f[sl - 1] = x_cut * 0.95
    lam = np.full(sl + 1, net_speciation / (1.0 - relative_extinction))
    mu = lam * relative_extinction
    psi = np.zeros(sl + 1)
    rho = np.full(sl + 1, 1e-20)
    for i in range(s + 1):
        psi[i] = mu[i] * fossilization[i] / (1.0 - fossilization[i])
    rho[sl] = sample_prob if strategy == RANDOM else 1.0
    return t_f, lam, mu, psi, rho


@numba.njit(**JIT_OPTIONS)
def _ln_sampled_ancestor(d, x, t_f, sl, clock_rate, psi, rho) -> float:
    """A fossil ancestor: ln ψ of its slice, or ln ρ_j - ln(1 - ρ_j) when it sits on slice time t_j."""
    for j in range(sl):
        if abs(d - t_f[j] * clock_rate) < BRLENS_MIN / 5:
            return math.log(rho[j]) - math.log(1 - rho[j])
    return math.log(psi[_slice_of(x, t_f, sl)])


@numba.njit(**JIT_OPTIONS)
def _ln_fossil_tip(d, x, t_f, sl, clock_rate, c1, c2, lam, mu, psi, rho, p_t) -> float:
    """A fossil tip: ln p(y) - ln q(y) + ln ψ, or ln p_{j+1} + ln ρ_j on slice time t_j."""
    for j in range(sl):
        if abs(d - t_f[j] * clock_rate) < BRLENS_MIN / 5:
            return math.log(p_t[j + 1]) + math.log(rho[j])
    return (_ln_pi(x, t_f, sl, c1, c2, lam, mu, psi) - _ln_q(x, t_f, sl, c1, c2)
            + math.log(psi[_slice_of(x, t_f, sl)]))


@numba.njit(**JIT_OPTIONS)
def _diversity_cut(depth, length, kids, n_tips, clock_rate, tmrca) -> float:
    """x_cut of LnFossilizedBDPriorDiversity: the youngest fossil tip or bifurcation (time units)."""
    x_cut = tmrca
    for v in range(depth.shape[0]):
        if v < n_tips and depth[v] > 0.0:
            x_cut = min(x_cut, depth[v] / clock_rate)
        if v >= n_tips and length[kids[v, 0]] > 0.0 and length[kids[v, 1]] > 0.0:
            x_cut = min(x_cut, depth[v] / clock_rate)
    return x_cut


@numba.njit(**JIT_OPTIONS)
def _ln_p1_fossil(t, rho, c1, c2) -> float:
    """LnP1_fossil: one sampled extant descendant, no sampled extinct one."""
    other = 2.0 * (1 - c2 * c2) * math.exp(-c1 * t) + (1 - c2) ** 2 * math.exp(-2 * c1 * t) + (1 + c2) ** 2
    return math.log(4.0) + math.log(rho) - c1 * t - math.log(other)


@numba.njit(**JIT_OPTIONS)
def _fossil_tip(parent, depth, n_tips, clock_rate, sr, er, fr, rho, age_kind, age_p, root_dated) -> float:
    """LnFossilizedBDPriorFossilTip: sampled lineages die (no sampled ancestors)."""
    lam = sr / (1.0 - er)
    mu = lam * er * (1.0 - fr)
    psi = lam * er * fr
    root = root_of(parent)
    tmrca = depth[root] / clock_rate
    c1 = math.sqrt(sr * sr + 4 * lam * psi)
    c2 = (2 * lam * rho - sr) / c1
    ln_p = 0.0
    for v in range(parent.shape[0]):
        x = depth[v] / clock_rate
        if v >= n_tips and v != root:
            ln_p += math.log(lam) + _ln_p1_fossil(x, rho, c1, c2)
        elif v < n_tips and depth[v] > 0.0:
            ln_p += math.log(psi) - _ln_p1_fossil(x, rho, c1, c2)
    ln_p += 2.0 * _ln_p1_fossil(tmrca, rho, c1, c2)
    e = math.exp(-c1 * tmrca)
    other = (e * (1 - c2) - (1 + c2)) / (e * (1 - c2) + (1 + c2))
    ln_p0 = math.log(lam + mu + psi + c1 * other) - math.log(2.0 * lam)
    ln_p -= 2.0 * math.log(1 - math.exp(ln_p0))
    return ln_p + tree_age_term(tmrca, root_dated, age_kind, age_p)
