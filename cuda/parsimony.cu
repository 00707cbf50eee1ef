// Fitch parsimony costs of ParsSPR's regraft candidates (host side: cuda/parsimony.py).
//
// Sets are bit planes: a node's set is K planes of 64-pattern words (uint64 [K][W]), tips read from
// `tips` (packed once), internal nodes kept in `down` and `fin` ([n_nodes][K][W]). One thread per word
// walks the whole tree program for its 64 patterns (patterns are independent), so a proposal is one
// launch: the downpass of R (rooted at the anchor tip) and of the pruned subtree S, the final (uppass)
// sets of R, then for each candidate branch (x, y) the weighted count of the patterns where neither
// final set meets S's set: sum over weight bit planes b of popcount(miss & W_b) << b. The same integer
// operations as engine.moves.parsimony with bitplanes.PlaneOps, so the costs are equal to the last bit.
typedef unsigned long long u64;

__device__ __forceinline__ const u64* node_set(const u64* tips, const u64* buf, int v, int n_tips, long long kw) {
    return (v < n_tips ? tips : buf) + (long long)v * kw;
}

// down[v] = intersection of the kids' sets where it is not empty, else their union.
__device__ __forceinline__ void fitch_down(u64* d, const u64* a, const u64* b, int K, int W) {
    u64 meet = 0;
    for (int k = 0; k < K; ++k) meet |= a[(long long)k * W] & b[(long long)k * W];
    for (int k = 0; k < K; ++k) {
        const u64 both = a[(long long)k * W] & b[(long long)k * W], uni = a[(long long)k * W] | b[(long long)k * W];
        d[(long long)k * W] = both ^ ((uni ^ both) & ~meet);
    }
}

// fin[v] = up if up is a subset of down[v], else (kids' sets disjoint ? down | up : down | (up & kids' union)).
__device__ __forceinline__ void fitch_final(u64* f, const u64* up, const u64* d, const u64* a, const u64* b,
                                            int K, int W) {
    u64 inter = 0, outside = 0;
    for (int k = 0; k < K; ++k) {
        inter |= a[(long long)k * W] & b[(long long)k * W];
        outside |= up[(long long)k * W] & ~d[(long long)k * W];
    }
    for (int k = 0; k < K; ++k) {
        const u64 u = up[(long long)k * W], dd = d[(long long)k * W];
        const u64 x = dd | u, y = dd | (u & (a[(long long)k * W] | b[(long long)k * W]));
        const u64 g = y ^ ((x ^ y) & ~inter);            // select(empty(inter), d | up, d | (up & union))
        f[(long long)k * W] = g ^ ((u ^ g) & ~outside);   // select(subset(up, d), up, g)
    }
}

// This thread's word of the weights' bit planes: wplanes[b][w] bit j = bit b of weights[64 w + j].
__device__ __forceinline__ void weight_planes(u64* wplanes, const unsigned* weights, int n_patterns, int n_bits,
                                              int w, int W) {
    u64 plane[32];
#pragma unroll
    for (int b = 0; b < 32; ++b) plane[b] = 0;
    for (int j = 0; j < 64; ++j) {
        const long long p = 64LL * w + j;
        const unsigned x = p < n_patterns ? weights[p] : 0u;
#pragma unroll
        for (int b = 0; b < 32; ++b) plane[b] |= (u64)((x >> b) & 1u) << j;
    }
#pragma unroll
    for (int b = 0; b < 32; ++b)
        if (b < n_bits) wplanes[(long long)b * W + w] = plane[b];
}

// prog: n_down rows (v, kid1, kid2) in dependency order (R's and S's internal nodes), then n_up rows
// (v, parent, kid1, kid2) in preorder of R's internal nodes; cand: n_cand rows (x, y).
// weights: the perturbed integer pattern weights (n_bits bits); wplanes [n_bits][W] and meets
// [n_nodes][W]: scratch. cost: n_cand counters, zeroed by the caller.
extern "C" __global__ void pars_costs(const u64* __restrict__ tips, u64* down, u64* fin, u64* meets,
                                      const int* __restrict__ prog, int n_down, int n_up,
                                      const int* __restrict__ cand, int n_cand, int s_node,
                                      const unsigned* __restrict__ weights, int n_patterns, u64* wplanes,
                                      int n_bits, int n_tips, int K, int W, unsigned long long* cost) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = w < W;
    const long long kw = (long long)K * W;
    if (live) {
        weight_planes(wplanes, weights, n_patterns, n_bits, w, W);
        const u64* T = tips + w;
        u64* D = down + w;
        u64* F = fin + w;
        for (int r = 0; r < n_down; ++r) {
            const int* o = prog + 3 * r;
            fitch_down(D + (long long)o[0] * kw, node_set(T, D, o[1], n_tips, kw), node_set(T, D, o[2], n_tips, kw), K, W);
        }
        // the anchor (a tip, R's root) keeps its own set; tips' final sets are their sets
        const int* up = prog + 3 * n_down;
        for (int r = 0; r < n_up; ++r) {
            const int* o = up + 4 * r;
            const u64* parent = o[1] < n_tips ? T + (long long)o[1] * kw : F + (long long)o[1] * kw;
            fitch_final(F + (long long)o[0] * kw, parent, D + (long long)o[0] * kw, node_set(T, D, o[2], n_tips, kw),
                        node_set(T, D, o[3], n_tips, kw), K, W);
        }
        const u64* S = node_set(T, D, s_node, n_tips, kw);
        u64* M = meets + w;
        for (int c = 0; c < n_cand; ++c) {           // 'F meets S' per node (each node once per end)
            for (int e = 0; e < 2; ++e) {
                const int v = cand[2 * c + e];
                const u64* fv = node_set(T, F, v, n_tips, kw);
                u64 m = 0;
                for (int k = 0; k < K; ++k) m |= fv[(long long)k * W] & S[(long long)k * W];
                M[(long long)v * W] = m;
            }
        }
    }
    const int lane = threadIdx.x & 31;
    for (int c = 0; c < n_cand; ++c) {
        unsigned long long total = 0;
        if (live) {
            const u64 miss = ~(meets[(long long)cand[2 * c] * W + w] | meets[(long long)cand[2 * c + 1] * W + w]);
            for (int b = 0; b < n_bits; ++b)
                total += (unsigned long long)__popcll(miss & wplanes[(long long)b * W + w]) << b;
        }
        for (int off = 16; off > 0; off >>= 1) total += __shfl_down_sync(0xffffffffu, total, off);
        if (lane == 0 && total) atomicAdd(cost + c, total);
    }
}
