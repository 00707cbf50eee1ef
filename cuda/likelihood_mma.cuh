// Partials of wide state spaces (protein 20, doublet 16, codon 61) on the tensor cores (sm_80+).
// Per category, the update of 8 patterns by one child is the product X[8 x S] . P^T[S x S] of the child's
// partial rows and its transition matrix: fp64 MMA m8n8k4 (DMMA), NT tiles of 8 output states by KS
// steps of 4 child states, zero-padded. Arithmetic is fp64 whatever REAL is (fp32 storage is converted on
// load and rounded on store), so one kernel serves both precisions and the fp32 path is no less accurate
// than the fp32 SIMT one. A warp owns 8-pattern tiles and computes every category of its patterns, so
// per-pattern rescaling needs only two shuffles. The matrices sit in shared memory in fragment order
// (one conflict-free 8-byte load per lane and MMA) unless they are too large (codons: read from L1/L2).
// Fragment layouts (PTX ISA, mma.m8n8k4 .f64): lane l holds A[l>>2][l&3], B[l&3][l>>2] and
// C[l>>2][2(l&3) + i], i = 0, 1.
#pragma once
#include "likelihood.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "WIDE_MMA needs the fp64 MMA of sm_80 or later"
#endif

#define NT ((STATES + 7) / 8)                                 // output tiles of 8 states
#define KS ((STATES + 3) / 4)                                 // contraction steps of 4 states
#define FRAG_MATRIX (CATEGORIES * NT * KS * 32)               // doubles of one matrix in fragment order
#ifndef MMA_B_SHARED        // both children's matrices fit in 96 KiB (the backend passes its own decision)
#define MMA_B_SHARED (2 * FRAG_MATRIX * 8 <= 96 * 1024)
#endif
#ifndef MMA_HOLD                                              // every category's outputs held in registers
#define MMA_HOLD (CATEGORIES * NT * 2 <= 32)
#endif
#ifndef MMA_PREFETCH                                          // every category's child loads before the MMAs
#define MMA_PREFETCH 0
#endif
#define FULL_MASK 0xffffffffu

// Child state read by lane quarter q at contraction step s. Steps come in groups of four where a lane
// reads 4 consecutive states (one 16-byte load in fp32, two in fp64): columns 16g + 4q + r; the steps
// after the last whole group read columns 4s + q. A and B use the same map, so the sum is unchanged.
__device__ __forceinline__ int kcol(int s, int q) {
    constexpr int full = (KS / 4) * 4;
    if (s < full) return 16 * (s >> 2) + 4 * q + (s & 3);
    return 4 * s + q;
}

__device__ __forceinline__ void dmma(double (&d)[2], double a, double b) {
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
        : "+d"(d[0]), "+d"(d[1])
        : "d"(a), "d"(b));
}

// Entry B[k][n] = P[n][k] of category c's fragment (t, s) for lane `lane` (0 outside the matrix).
__device__ __forceinline__ double frag_global(const REAL* __restrict__ mat, int t, int s, int lane) {
    const int n = 8 * t + (lane >> 2), k = kcol(s, lane & 3);
    return (n < STATES && k < STATES) ? (double)__ldg(mat + (size_t)n * STATES + k) : 0.0;
}

// Both children's matrices (all categories) into shared memory in fragment order:
// [child][category][t][s][lane]. All threads of the block take part.
__device__ __forceinline__ void load_fragments_shared(double* bs, const REAL* __restrict__ matrices,
                                                      const i64* mats, int count) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;
    const int per = (int)FRAG_MATRIX;
    for (int e = tid; e < count * per; e += nthreads) {
        const int k = e / per;
        int r = e - k * per;
        const int lane = r & 31;
        r >>= 5;
        const int s = r % KS;
        r /= KS;
        const int t = r % NT, c = r / NT;
        bs[e] = frag_global(matrices + ((size_t)mats[k] * CATEGORIES + c) * STATES * STATES, t, s, lane);
    }
}

// One category's matrix of a child: fragments in shared memory, or the matrix itself in global memory.
struct MmaMatrix {
    const double* frag;          // [t][s][lane] (MMA_B_SHARED)
    const REAL* mat;             // [STATES][STATES] row-major (otherwise)
    __device__ __forceinline__ double b(int t, int s, int lane) const {
#if MMA_B_SHARED
        return frag[(t * KS + s) * 32 + lane];
#else
        return frag_global(mat, t, s, lane);
#endif
    }
    // P[n][state]; the 'any state' code STATES gives 1.
    __device__ __forceinline__ double column(int n, int state) const {
        if (state >= STATES || n >= STATES) return state >= STATES ? 1.0 : 0.0;
#if MMA_B_SHARED
        constexpr int grouped = (KS / 4) * 16;          // invert kcol: the step and quarter of `state`
        const int ss = state < grouped ? 4 * (state >> 4) + (state & 3) : state >> 2;
        const int qq = state < grouped ? (state >> 2) & 3 : state & 3;
        return frag[((n >> 3) * KS + ss) * 32 + ((n & 7) << 2) + qq];
#else
        return (double)__ldg(mat + (size_t)n * STATES + state);
#endif
    }
};

// This lane's A entries of one child row (pattern p, all steps), as stored (REAL).
__device__ __forceinline__ void load_a(REAL (&a)[KS], const REAL* LOAD_RESTRICT x, bool active, int q) {
    constexpr int full = (KS / 4) * 4;
    if constexpr (STATES % 4 == 0 && sizeof(REAL) == 4) {
#pragma unroll
        for (int g = 0; g < full / 4; ++g) {
            float4 v = active ? LDG(reinterpret_cast<const float4*>(x + 16 * g + 4 * q)) : make_float4(0, 0, 0, 0);
            a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
        }
    } else if constexpr (STATES % 2 == 0 && sizeof(REAL) == 8) {
#pragma unroll
        for (int g = 0; g < full / 4; ++g) {
            const double2* v = reinterpret_cast<const double2*>(x + 16 * g + 4 * q);
            double2 lo = active ? LDG(v) : make_double2(0, 0), hi = active ? LDG(v + 1) : make_double2(0, 0);
            a[4 * g] = lo.x; a[4 * g + 1] = lo.y; a[4 * g + 2] = hi.x; a[4 * g + 3] = hi.y;
        }
    } else {
#pragma unroll
        for (int s = 0; s < full; ++s) a[s] = active ? LDG(x + kcol(s, q)) : (REAL)0;
    }
#pragma unroll
    for (int s = full; s < KS; ++s) {
        const int k = kcol(s, q);
        a[s] = (active && k < STATES) ? LDG(x + k) : (REAL)0;
    }
}

// Load a child's A entries for category c (nothing for a compact tip).
template <bool STATE>
__device__ __forceinline__ void child_a(REAL (&a)[KS], const Child& ch, int c, i64 p, bool active, int lane) {
    if constexpr (!STATE) load_a(a, ch.vec + (size_t)c * ch.cstride + (size_t)p * STATES, active, lane & 3);
}

// One child's term for the lane's C entries (pattern p = tile row lane>>2, states 8t + 2(lane&3) + i),
// from its loaded A entries, or from the matrix column of a compact tip's state.
template <bool STATE>
__device__ __forceinline__ void mma_child(double (&d)[NT][2], const Child& ch, const REAL (&a)[KS],
                                          const MmaMatrix& m, i64 p, bool active, int lane) {
    if constexpr (STATE) {
        const int state = active ? (int)ch.states[p] : STATES;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            d[t][0] = m.column(8 * t + 2 * (lane & 3), state);
            d[t][1] = m.column(8 * t + 2 * (lane & 3) + 1, state);
        }
    } else {
#pragma unroll
        for (int t = 0; t < NT; ++t) d[t][0] = d[t][1] = 0.0;
#pragma unroll
        for (int s = 0; s < KS; ++s) {
#pragma unroll
            for (int t = 0; t < NT; ++t) dmma(d[t], (double)a[s], m.b(t, s, lane));
        }
    }
}

__device__ __forceinline__ MmaMatrix mma_matrix(const double* frag, const REAL* __restrict__ matrices, i64 index,
                                                int c) {
    MmaMatrix m;
    m.frag = frag + (size_t)c * NT * KS * 32;
    m.mat = matrices + ((size_t)index * CATEGORIES + c) * STATES * STATES;
    return m;
}

// Store (or load back) this lane's C entries of category c.
__device__ __forceinline__ void store_c(REAL* dst, const double (&o)[NT][2], int q) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int n = 8 * t + 2 * q;
        if constexpr (STATES % 2 == 0) {
            if (n < STATES) {
                if constexpr (sizeof(REAL) == 8) {
                    *reinterpret_cast<double2*>(dst + n) = make_double2(o[t][0], o[t][1]);
                } else {
                    *reinterpret_cast<float2*>(dst + n) = make_float2((float)o[t][0], (float)o[t][1]);
                }
            }
        } else {
            if (n < STATES) dst[n] = (REAL)o[t][0];
            if (n + 1 < STATES) dst[n + 1] = (REAL)o[t][1];
        }
    }
}

__device__ __forceinline__ double lane_max(const double (&o)[NT][2], int q) {
    double m = 0.0;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        if (8 * t + 2 * q < STATES) m = fmax(m, o[t][0]);
        if (8 * t + 2 * q + 1 < STATES) m = fmax(m, o[t][1]);
    }
    return m;
}

// Scale factor of a pattern: the row's largest entry over all categories (the four lanes of a row hold
// it between them), 1 when the row is all zero; lane q == 0 writes its natural log.
__device__ __forceinline__ double row_factor(double m, bool active, int q, i64 p, i64 n_patterns, i64 sw,
                                             double* scale) {
    m = fmax(m, __shfl_xor_sync(FULL_MASK, m, 1));
    m = fmax(m, __shfl_xor_sync(FULL_MASK, m, 2));
    if (!(m > 0.0)) m = 1.0;
    if (active && q == 0) scale[(size_t)sw * n_patterns + p] = log(m);
    return m;
}

template <bool A_STATE, bool B_STATE>
__device__ void update_tiles_mma(const Child& a, const double* fa, i64 ia, const Child& b, const double* fb, i64 ib,
                                 const REAL* __restrict__ matrices, REAL* dest, i64 n_patterns, i64 sw, i64 sr,
                                 double* scale, Tiles tl) {
    const int lane = threadIdx.x, q = lane & 3;
    const i64 n_tiles = (n_patterns + 7) / 8;
    const i64 stride = tl.stride * blockDim.y;
    for (i64 tile = tl.first * blockDim.y + threadIdx.y; tile < n_tiles; tile += stride) {
        const i64 p = tile * 8 + (lane >> 2);
        const bool active = p < n_patterns;
        const size_t row = (size_t)p * STATES, cstep = (size_t)n_patterns * STATES;
#if MMA_HOLD
        double o[CATEGORIES][NT][2];
        double m = 0.0;
#if MMA_PREFETCH
        REAL xa[CATEGORIES][KS], xb[CATEGORIES][KS];            // every category's loads in flight at once
#pragma unroll
        for (int c = 0; c < CATEGORIES; ++c) {
            child_a<A_STATE>(xa[c], a, c, p, active, lane);
            child_a<B_STATE>(xb[c], b, c, p, active, lane);
        }
#endif
#pragma unroll
        for (int c = 0; c < CATEGORIES; ++c) {
            double u[NT][2], v[NT][2];
#if MMA_PREFETCH
            mma_child<A_STATE>(u, a, xa[c], mma_matrix(fa, matrices, ia, c), p, active, lane);
            mma_child<B_STATE>(v, b, xb[c], mma_matrix(fb, matrices, ib, c), p, active, lane);
#else
            REAL xa[KS], xb[KS];
            child_a<A_STATE>(xa, a, c, p, active, lane);
            child_a<B_STATE>(xb, b, c, p, active, lane);
            mma_child<A_STATE>(u, a, xa, mma_matrix(fa, matrices, ia, c), p, active, lane);
            mma_child<B_STATE>(v, b, xb, mma_matrix(fb, matrices, ib, c), p, active, lane);
#endif
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                o[c][t][0] = u[t][0] * v[t][0];
                o[c][t][1] = u[t][1] * v[t][1];
            }
            m = fmax(m, lane_max(o[c], q));
        }
        double f = 1.0;
        if (sw >= 0) {
            f = 1.0 / row_factor(m, active, q, p, n_patterns, sw, scale);
        } else if (sr >= 0 && active) {
            f = exp(-scale[(size_t)sr * n_patterns + p]);
        }
        if (active) {
#pragma unroll
            for (int c = 0; c < CATEGORIES; ++c) {
                if (sw >= 0 || sr >= 0) {
#pragma unroll
                    for (int t = 0; t < NT; ++t) { o[c][t][0] *= f; o[c][t][1] *= f; }
                }
                store_c(dest + c * cstep + row, o[c], q);
            }
        }
#else
        // Too many outputs for registers (codons): store each category unscaled, then rescale in place
        // (each lane reads back only what it wrote).
        double m = 0.0;
        for (int c = 0; c < CATEGORIES; ++c) {
            double u[NT][2], v[NT][2];
            REAL xa[KS], xb[KS];
            child_a<A_STATE>(xa, a, c, p, active, lane);
            child_a<B_STATE>(xb, b, c, p, active, lane);
            mma_child<A_STATE>(u, a, xa, mma_matrix(fa, matrices, ia, c), p, active, lane);
            mma_child<B_STATE>(v, b, xb, mma_matrix(fb, matrices, ib, c), p, active, lane);
#pragma unroll
            for (int t = 0; t < NT; ++t) { u[t][0] *= v[t][0]; u[t][1] *= v[t][1]; }
            m = fmax(m, lane_max(u, q));
            if (active) store_c(dest + c * cstep + row, u, q);
        }
        double f = 1.0;
        if (sw >= 0) {
            f = 1.0 / row_factor(m, active, q, p, n_patterns, sw, scale);
        } else if (sr >= 0 && active) {
            f = exp(-scale[(size_t)sr * n_patterns + p]);
        }
        if (active && (sw >= 0 || sr >= 0)) {
            for (int c = 0; c < CATEGORIES; ++c) {
                REAL* d = dest + c * cstep + row;
#pragma unroll
                for (int t = 0; t < NT; ++t) {
                    const int n = 8 * t + 2 * q;
                    if (n < STATES) d[n] = (REAL)((double)d[n] * f);
                    if (n + 1 < STATES) d[n + 1] = (REAL)((double)d[n + 1] * f);
                }
            }
        }
#endif
    }
}
