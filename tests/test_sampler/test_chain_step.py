"""A chain step's shortcuts must not change what it computes: the move draw is Generator.choice's
draw, and the cached prior terms give the value a fresh full prior evaluation gives, bit for bit."""
import numpy as np

from mbgpu.sampler.chain import Chain, _choice_cdf
from tests.test_sampler.test_batched import CYNMIX, PRIMATES, run_block


def test_move_draw_is_generator_choice():
    p = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 20.0, 7.0, 3.0, 0.5])
    p /= p.sum()
    cdf = _choice_cdf(p)
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    for _ in range(20_000):
        assert int(a.choice(p.size, p=p)) == int(cdf.searchsorted(b.random(), side="right"))


def test_cached_prior_equals_full_prior_every_step(tmp_path, monkeypatch, interpreted):
    """After every step of a run with tree and parameter moves (partitioned, several free parameters),
    the chain's log prior is exactly prior_fn(tree, values)."""
    checked = []
    end_step = Chain.end_step

    def checking(self, pending, heat, tunefreq, autotune, power=1.0):
        end_step(self, pending, heat, tunefreq, autotune, power)
        assert self.lnpr == self.prior_fn(self.tree, self.values)
        checked.append(pending[0].name)

    monkeypatch.setattr(Chain, "end_step", checking)
    for name, block in (("primates", PRIMATES), ("cynmix", CYNMIX)):
        run_block(tmp_path / name, block, monkeypatch, "batched")
    assert len(checked) > 1000
    assert any("Dirichlet" in n for n in checked) and any("Multiplier(V)" == n for n in checked)
