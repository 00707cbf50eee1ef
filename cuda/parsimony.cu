// Fitch parsimony costs of ParsSPR's regraft candidates (host side: cuda/parsimony.py).
//
// Sets are bit planes: a node's set is K planes of 64-pattern words (uint64 [K][W]), tips read from
// `tips` (packed once), internal nodes kept in `down` and `fin` ([n_nodes][K][W]). Patterns are
// independent, so each word walks the whole tree program on its own (a segment of lanes, one per
// plane, see below) and a proposal is one launch: the downpass of R (rooted at the anchor tip) and of
// the pruned subtree S, the final (uppass) sets of R, then for each candidate branch (x, y) the weighted
// count of the patterns where neither final set meets S's set: sum over weight bit planes b of
// popcount(miss & W_b) << b. The same integer operations as engine.moves.parsimony with
// bitplanes.PlaneOps, so the costs are equal to the last bit.
typedef unsigned long long u64;

// Lane layout: every 64-pattern word w is handled by a segment of SEG lanes of one warp (SEG = K rounded
// up to a power of two, <= 32); lane k of the segment owns plane k of every set (lanes k >= K hold
// zeros). A lane reads and writes only its own plane, so the node passes need no barrier; the
// per-pattern tests across planes ('do the sets meet', 'is up a subset of down') are ORs over the
// segment with warp shuffles. Compared with one thread per word this gives SEG times the threads and a
// SEG times shorter chain of dependent loads per thread (the passes are latency bound: a DNA set of
// 30k patterns has only 463 words).
template <int SEG>
__device__ __forceinline__ u64 seg_or(u64 x) {
#pragma unroll
    for (int off = SEG / 2; off > 0; off >>= 1) x |= __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

// Plane k of node v's set for word w (tips from `tips`, internal nodes from `buf`).
__device__ __forceinline__ u64 plane_of(const u64* tips, const u64* buf, int v, int n_tips, int k, int K, int W,
                                        int w, bool live) {
    if (!live) return 0;
    const u64* base = v < n_tips ? tips : buf;
    return base[((long long)v * K + k) * W + w];
}

// prog: n_down rows (v, kid1, kid2) in dependency order (R's and S's internal nodes), then n_up rows
// (v, parent, kid1, kid2) in preorder of R's internal nodes; cand: n_cand rows (x, y).
// weights: the perturbed integer pattern weights (n_bits <= 32 bits). cost: n_cand counters, zeroed by
// the caller. down, fin: [n_nodes][K][W] scratch.
template <int SEG>
__device__ void pars_costs_seg(const u64* __restrict__ tips, u64* down, u64* fin, const int* __restrict__ prog,
                               int n_down, int n_up, const int* __restrict__ cand, int n_cand, int s_node,
                               const unsigned* __restrict__ weights, int n_patterns, int n_bits, int n_tips, int K,
                               int W, unsigned long long* cost) {
    constexpr int PER = 32 / SEG;                      // weight bit planes per lane
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int w = (int)(t / SEG), k = (int)(t % SEG);
    const bool word = w < W, live = word && k < K;
    // this lane's weight bit planes b = k + SEG i of word w
    u64 wp[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) wp[i] = 0;
    if (word) {
        for (int j = 0; j < 64; ++j) {
            const long long p = 64LL * w + j;
            const unsigned x = p < n_patterns ? weights[p] : 0u;
#pragma unroll
            for (int i = 0; i < PER; ++i) wp[i] |= (u64)((x >> (k + SEG * i)) & 1u) << j;
        }
    }
    for (int r = 0; r < n_down; ++r) {                 // down[v] = kids' meet where not empty, else their union
        const int* o = prog + 3 * r;
        const u64 a = plane_of(tips, down, o[1], n_tips, k, K, W, w, live);
        const u64 b = plane_of(tips, down, o[2], n_tips, k, K, W, w, live);
        const u64 both = a & b, meet = seg_or<SEG>(both);
        if (live) down[((long long)o[0] * K + k) * W + w] = both ^ (((a | b) ^ both) & ~meet);
    }
    const int* up = prog + 3 * n_down;                 // final sets of R's internal nodes, in preorder
    for (int r = 0; r < n_up; ++r) {
        const int* o = up + 4 * r;
        const u64 u = plane_of(tips, fin, o[1], n_tips, k, K, W, w, live);
        const u64 d = plane_of(tips, down, o[0], n_tips, k, K, W, w, live);
        const u64 a = plane_of(tips, down, o[2], n_tips, k, K, W, w, live);
        const u64 b = plane_of(tips, down, o[3], n_tips, k, K, W, w, live);
        const u64 inter = seg_or<SEG>(a & b), outside = seg_or<SEG>(u & ~d);
        const u64 x = d | u, y = d | (u & (a | b));
        const u64 g = y ^ ((x ^ y) & ~inter);          // select(empty(inter), d | up, d | (up & union))
        if (live) fin[((long long)o[0] * K + k) * W + w] = g ^ ((u ^ g) & ~outside);   // select(subset(up, d), up, g)
    }
    const u64 s_plane = plane_of(tips, down, s_node, n_tips, k, K, W, w, live);
    const int lane = threadIdx.x & 31;
    for (int c = 0; c < n_cand; ++c) {                 // patterns where neither end's final set meets S
        const u64 fx = plane_of(tips, fin, cand[2 * c], n_tips, k, K, W, w, live);
        const u64 fy = plane_of(tips, fin, cand[2 * c + 1], n_tips, k, K, W, w, live);
        const u64 miss = ~seg_or<SEG>((fx | fy) & s_plane);
        unsigned long long total = 0;
        if (word) {
#pragma unroll
            for (int i = 0; i < PER; ++i)
                if (k + SEG * i < n_bits) total += (unsigned long long)__popcll(miss & wp[i]) << (k + SEG * i);
        }
        for (int off = 16; off > 0; off >>= 1) total += __shfl_down_sync(0xffffffffu, total, off);
        if (lane == 0 && total) atomicAdd(cost + c, total);
    }
}

#define PARS_KERNEL(SEG)                                                                                         \
    extern "C" __global__ void pars_costs_##SEG(const u64* __restrict__ tips, u64* down, u64* fin,                \
                                                 const int* __restrict__ prog, int n_down, int n_up,              \
                                                 const int* __restrict__ cand, int n_cand, int s_node,            \
                                                 const unsigned* __restrict__ weights, int n_patterns,            \
                                                 int n_bits, int n_tips, int K, int W, unsigned long long* cost) {\
        pars_costs_seg<SEG>(tips, down, fin, prog, n_down, n_up, cand, n_cand, s_node, weights, n_patterns,       \
                            n_bits, n_tips, K, W, cost);                                                         \
    }
PARS_KERNEL(2)
PARS_KERNEL(4)
PARS_KERNEL(8)
PARS_KERNEL(16)
PARS_KERNEL(32)
