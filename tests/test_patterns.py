import numpy as np

from mbgpu.analysis import division_pattern_sets
from mbgpu.interpreter import Interpreter
from mbgpu.console import Console
from mbgpu.patterns import compress, division_patterns
import io


def load(path):
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(path))
    return it


def test_primates_has_413_patterns_like_mrbayes(shared_data):
    it = load(shared_data / "mrbayes" / "primates.nex")
    (sets,) = division_pattern_sets(it.settings)
    assert len(sets) == 1 and sets[0].n_patterns == 413 and sets[0].weights.sum() == 898


def test_patterns_reconstruct_every_column():
    rng = np.random.default_rng(1)
    masks = rng.choice(np.array([1, 2, 4, 8, 15], dtype=np.uint32), size=(6, 300))
    ps = compress(masks, "dna", 4, np.arange(300))
    assert ps.weights.sum() == 300
    seen = {tuple(ps.masks[:, k]): w for k, w in enumerate(ps.weights)}
    for j in range(300):
        assert tuple(masks[:, j]) in seen
    assert len(seen) == ps.n_patterns


def test_tip_partials_and_states():
    masks = np.array([[1, 15, 5]], dtype=np.uint32)
    ps = compress(masks, "dna", 4, np.arange(3))
    assert ps.tip_partials()[0].tolist() == [[1, 0, 0, 0], [1, 1, 1, 1], [1, 0, 1, 0]]
    assert ps.tip_states()[0].tolist() == [0, -1, -1]


def test_standard_data_split_by_state_count():
    all10 = (1 << 10) - 1
    masks = np.array([[1, 1, 4, all10], [2, 1, 1, 2], [1, 3, 2, all10]], dtype=np.uint32)
    sets = division_patterns(masks, "standard", 10, np.arange(4))
    ks = {p.n_states: p.weights.sum() for p in sets}
    assert ks == {2: 3, 3: 1}  # column 3 shows state 2 -> k=3; others binary (k=2 minimum)
    k2 = [p for p in sets if p.n_states == 2][0]
    assert k2.tip_partials().shape[2] == 2 and k2.masks.max() <= 3


def test_cynmix_divisions(shared_data):
    it = load(shared_data / "mrbayes" / "cynmix.nex")
    assert it.settings.matrix.nchar == 3246 and it.settings.matrix.ntax == 32
