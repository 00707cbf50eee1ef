// Partials update of the likelihood protocol: one launch runs every operation of one dependency
// level (blockIdx.y = operation within the level, from an int64 ops array on the device).
// Block = PATTERN_BLOCK patterns x CATEGORIES categories, one thread per (pattern, category), so a
// warp works under one transition matrix (Huang et al. 2022); both children's matrices of all
// categories sit in shared memory (ta(MC)^3); a block walks several pattern tiles so the matrices
// are loaded once per block.  Node classes: tip-tip (down_3), tip-internal (down_12),
// internal-internal (down_0); compact tips read the transposed matrix through an 'any state' column.
// Rescaling divides each pattern by its largest entry over categories and states and stores the
// natural log of the factor (float64 scale buffers).  Every offset is size_t / long long.
#include "likelihood.cuh"
#if __CUDA_ARCH__ >= 800
#include <cuda_pipeline.h>
#endif

struct Child {
    const REAL* vec;             // partial vectors (nullptr for a compact tip)
    size_t cstride;              // elements between categories (0 for tip partials)
    const unsigned char* states; // compact tip states (nullptr otherwise)
};

// Which pattern tiles of an operation a block computes: tiles first, first + stride, ... (the level
// kernel: blockIdx.x of gridDim.x; the jobs kernel: the block's rank among its job's blocks).
struct Tiles {
    i64 first;
    i64 stride;
};

__device__ __forceinline__ Child child_of(i64 b, i64 n_tips, i64 n_patterns, const REAL* partials,
                                          const REAL* tip_partials, const unsigned char* tip_states,
                                          const i64* tip_index) {
    Child ch;
    const size_t ps = (size_t)n_patterns * STATES;
    if (b < n_tips) {
        const i64 k = tip_index[b];
        if (k < 0) {
            ch.vec = nullptr;
            ch.cstride = 0;
            ch.states = tip_states + (size_t)b * (size_t)n_patterns;
        } else {
            ch.vec = tip_partials + (size_t)k * ps;
            ch.cstride = 0;
            ch.states = nullptr;
        }
    } else {
        ch.vec = partials + (size_t)(b - n_tips) * CATEGORIES * ps;
        ch.cstride = ps;
        ch.states = nullptr;
    }
    return ch;
}

#ifndef WIDE_MMA
#define WIDE_MMA 0
#endif
#if WIDE_MMA
#include "likelihood_mma.cuh"
#endif

// One child's contribution for pattern p, category c: '=' (first child) or '*=' (second child).
template <bool STATE, bool MUL>
__device__ __forceinline__ void child_term(REAL (&out)[STATES], const Child& ch, const REAL* m, int c, i64 p) {
    if constexpr (STATE) {
        state_term<MUL>(out, m, (int)ch.states[p]);
    } else {
        REAL x[STATES];
        load_row(ch.vec + (size_t)c * ch.cstride + (size_t)p * STATES, x);
        vector_term<MUL>(out, m, x);
    }
}

// Rescale (write) or reuse stored factors (read); all threads of the block call it together.
__device__ __forceinline__ void rescale(REAL (&out)[STATES], bool active, i64 p, i64 n_patterns,
                                        i64 sw, i64 sr, double* scale, REAL* smax) {
    if (sw >= 0) {
        REAL m = (REAL)0;
#pragma unroll
        for (int i = 0; i < STATES; ++i) m = fmax(m, out[i]);
        smax[threadIdx.y * PATTERN_BLOCK + threadIdx.x] = active ? m : (REAL)0;
        __syncthreads();
        REAL big = smax[threadIdx.x];
        for (int cc = 1; cc < CATEGORIES; ++cc) big = fmax(big, smax[cc * PATTERN_BLOCK + threadIdx.x]);
        __syncthreads();
        if (!(big > (REAL)0)) big = (REAL)1;
#pragma unroll
        for (int i = 0; i < STATES; ++i) out[i] /= big;
        if (active && threadIdx.y == 0) scale[(size_t)sw * n_patterns + p] = log((double)big);
    } else if (sr >= 0 && active) {
        const REAL f = (REAL)exp(-scale[(size_t)sr * n_patterns + p]);
#pragma unroll
        for (int i = 0; i < STATES; ++i) out[i] *= f;
    }
}

// The node-class specialisations: A/B compact states or partial vectors.
template <bool A_STATE, bool B_STATE>
__device__ void update_tiles(const Child& a, const REAL* ma, const Child& b, const REAL* mb, REAL* dest,
                             i64 n_patterns, i64 sw, i64 sr, double* scale, REAL* smax, Tiles tl) {
    const int c = threadIdx.y;
    const REAL* mca = ma + (size_t)c * STATES * MSTRIDE;
    const REAL* mcb = mb + (size_t)c * STATES * MSTRIDE;
    const i64 n_tiles = (n_patterns + PATTERN_BLOCK - 1) / PATTERN_BLOCK;
    for (i64 tile = tl.first; tile < n_tiles; tile += tl.stride) {
        const i64 p = tile * PATTERN_BLOCK + threadIdx.x;
        const bool active = p < n_patterns;
        REAL out[STATES];
        if (active) {
            child_term<A_STATE, false>(out, a, mca, c, p);
            child_term<B_STATE, true>(out, b, mcb, c, p);
        } else {
#pragma unroll
            for (int i = 0; i < STATES; ++i) out[i] = (REAL)0;
        }
        rescale(out, active, p, n_patterns, sw, sr, scale, smax);
        if (active) store_row(dest + (size_t)c * n_patterns * STATES + (size_t)p * STATES, out);
    }
}

// Wide rows (protein): the output tile [CATEGORIES][PATTERN_BLOCK][STATES+1] lives in shared memory,
// so only the child vector is held in registers (high occupancy), and the block writes the tile with
// coalesced 16-byte stores (a thread's own row is 80-160 bytes, too wide for coalesced row stores).
#define OSTRIDE (STATES + 1)

template <bool STATE, bool MUL>
__device__ __forceinline__ void child_term_shared(REAL* o, const Child& ch, const REAL* m, int c, i64 p) {
    if constexpr (STATE) {
        const int state = (int)ch.states[p];
#pragma unroll 4
        for (int i = 0; i < STATES; ++i) {
            const REAL v = m[i * MSTRIDE + state];
            if constexpr (MUL) o[i] *= v; else o[i] = v;
        }
    } else {
        REAL x[STATES];
        load_row(ch.vec + (size_t)c * ch.cstride + (size_t)p * STATES, x);
#pragma unroll 2
        for (int i = 0; i < STATES; ++i) {
            REAL acc = (REAL)0;
            if constexpr (sizeof(REAL) == 8 && STATES % 2 == 0) {
                const double2* row = reinterpret_cast<const double2*>(m + i * MSTRIDE);
#pragma unroll
                for (int j = 0; j < STATES / 2; ++j) {
                    const double2 v = row[j];
                    acc += (REAL)v.x * x[2 * j] + (REAL)v.y * x[2 * j + 1];
                }
            } else if constexpr (sizeof(REAL) == 4 && STATES % 4 == 0) {
                const float4* row = reinterpret_cast<const float4*>(m + i * MSTRIDE);
#pragma unroll
                for (int j = 0; j < STATES / 4; ++j) {
                    const float4 v = row[j];
                    acc += (REAL)v.x * x[4 * j] + (REAL)v.y * x[4 * j + 1] + (REAL)v.z * x[4 * j + 2]
                         + (REAL)v.w * x[4 * j + 3];
                }
            } else {
#pragma unroll
                for (int j = 0; j < STATES; ++j) acc += m[i * MSTRIDE + j] * x[j];
            }
            if constexpr (MUL) o[i] *= acc; else o[i] = acc;
        }
    }
}

template <bool A_STATE, bool B_STATE>
__device__ void update_tiles_wide(const Child& a, const REAL* ma, const Child& b, const REAL* mb, REAL* dest,
                                  i64 n_patterns, i64 sw, i64 sr, double* scale, REAL* smax, REAL* otile,
                                  Tiles tl) {
    const int c = threadIdx.y;
    const int tid = threadIdx.y * PATTERN_BLOCK + threadIdx.x;
    const REAL* mca = ma + (size_t)c * STATES * MSTRIDE;
    const REAL* mcb = mb + (size_t)c * STATES * MSTRIDE;
    REAL* o = otile + ((size_t)c * PATTERN_BLOCK + threadIdx.x) * OSTRIDE;
    const i64 n_tiles = (n_patterns + PATTERN_BLOCK - 1) / PATTERN_BLOCK;
    for (i64 tile = tl.first; tile < n_tiles; tile += tl.stride) {
        const i64 p0 = tile * PATTERN_BLOCK;
        const i64 p = p0 + threadIdx.x;
        const bool active = p < n_patterns;
        if (active) {
            child_term_shared<A_STATE, false>(o, a, mca, c, p);
            child_term_shared<B_STATE, true>(o, b, mcb, c, p);
        }
        if (sw >= 0) {
            REAL m = (REAL)0;
            if (active) {
                for (int i = 0; i < STATES; ++i) m = fmax(m, o[i]);
            }
            smax[threadIdx.y * PATTERN_BLOCK + threadIdx.x] = m;
            __syncthreads();
            REAL big = smax[threadIdx.x];
            for (int cc = 1; cc < CATEGORIES; ++cc) big = fmax(big, smax[cc * PATTERN_BLOCK + threadIdx.x]);
            if (!(big > (REAL)0)) big = (REAL)1;
            if (active) {
                for (int i = 0; i < STATES; ++i) o[i] /= big;
                if (threadIdx.y == 0) scale[(size_t)sw * n_patterns + p] = log((double)big);
            }
        } else if (sr >= 0 && active) {
            const REAL f = (REAL)exp(-scale[(size_t)sr * n_patterns + p]);
            for (int i = 0; i < STATES; ++i) o[i] *= f;
        }
        __syncthreads();
        const int np = (int)(n_patterns - p0 < PATTERN_BLOCK ? n_patterns - p0 : PATTERN_BLOCK);
        for (int cc = 0; cc < CATEGORIES; ++cc) {       // coalesced store of the tile, category by category
            REAL* dst = dest + (size_t)cc * n_patterns * STATES + (size_t)p0 * STATES;
            const REAL* src = otile + (size_t)cc * PATTERN_BLOCK * OSTRIDE;
            if constexpr (STATES % VW == 0) {
                for (int e = tid; e < np * (STATES / VW); e += PATTERN_BLOCK * CATEGORIES) {
                    const int pp = (e * VW) / STATES, j = e * VW - pp * STATES;
                    const REAL* s = src + pp * OSTRIDE + j;
                    if constexpr (sizeof(REAL) == 8) {
                        reinterpret_cast<double2*>(dst)[e] = make_double2((double)s[0], (double)s[1]);
                    } else {
                        reinterpret_cast<float4*>(dst)[e] = make_float4((float)s[0], (float)s[1], (float)s[2],
                                                                        (float)s[3]);
                    }
                }
            } else {
                for (int e = tid; e < np * STATES; e += PATTERN_BLOCK * CATEGORIES) {
                    const int pp = e / STATES;
                    dst[e] = src[pp * OSTRIDE + e - pp * STATES];
                }
            }
        }
        __syncthreads();
    }
}

#ifndef WIDE
#define WIDE (STATES >= 12)
#endif

#ifndef MMA_WARPS               // warps of a block on the tensor-core path (blockDim = 32 x MMA_WARPS)
#define MMA_WARPS 8
#endif
#if WIDE_MMA
#define BLOCK_THREADS (32 * MMA_WARPS)
#else
#define BLOCK_THREADS (PATTERN_BLOCK * CATEGORIES)
#endif
#if MIN_BLOCKS > 1
#define PARTIALS_BOUNDS __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS)
#else
#define PARTIALS_BOUNDS __launch_bounds__(BLOCK_THREADS)
#endif

#if !WIDE_MMA
// One operation's tiles on the SIMT paths, its two matrices already in shared memory (ma, mb).
__device__ __forceinline__ void op_tiles_simt(i64 dest, i64 sw, i64 sr, i64 c1, i64 c2, i64 n_patterns, i64 n_tips,
                                              REAL* partials, const REAL* __restrict__ tip_partials,
                                              const unsigned char* __restrict__ tip_states,
                                              const i64* __restrict__ tip_index, double* scale, const REAL* ma,
                                              const REAL* mb, REAL* smax, Tiles tl) {
    REAL* out = partials + (size_t)(dest - n_tips) * CATEGORIES * (size_t)n_patterns * STATES;
    const Child a = child_of(c1, n_tips, n_patterns, partials, tip_partials, tip_states, tip_index);
    const Child b = child_of(c2, n_tips, n_patterns, partials, tip_partials, tip_states, tip_index);
#if WIDE
    REAL* otile = smax + CATEGORIES * PATTERN_BLOCK;         // [CATEGORIES][PATTERN_BLOCK][STATES+1]
    if (a.states && b.states) {
        update_tiles_wide<true, true>(a, ma, b, mb, out, n_patterns, sw, sr, scale, smax, otile, tl);
    } else if (a.states) {
        update_tiles_wide<true, false>(a, ma, b, mb, out, n_patterns, sw, sr, scale, smax, otile, tl);
    } else if (b.states) {
        update_tiles_wide<true, false>(b, mb, a, ma, out, n_patterns, sw, sr, scale, smax, otile, tl);
    } else {
        update_tiles_wide<false, false>(a, ma, b, mb, out, n_patterns, sw, sr, scale, smax, otile, tl);
    }
#else
    if (a.states && b.states) {                 // tip-tip (down_3)
        update_tiles<true, true>(a, ma, b, mb, out, n_patterns, sw, sr, scale, smax, tl);
    } else if (a.states) {                      // tip-internal (down_12)
        update_tiles<true, false>(a, ma, b, mb, out, n_patterns, sw, sr, scale, smax, tl);
    } else if (b.states) {
        update_tiles<true, false>(b, mb, a, ma, out, n_patterns, sw, sr, scale, smax, tl);
    } else {                                    // internal-internal (down_0), also tip partials
        update_tiles<false, false>(a, ma, b, mb, out, n_patterns, sw, sr, scale, smax, tl);
    }
#endif
}
#endif

// One operation for this block's pattern tiles (the caller has synchronised the block before it:
// the matrices go into shared memory here).
__device__ __forceinline__ void run_op(const i64* op, i64 n_patterns, i64 n_tips, REAL* partials,
                                       const REAL* __restrict__ tip_partials,
                                       const unsigned char* __restrict__ tip_states,
                                       const i64* __restrict__ tip_index, const REAL* __restrict__ matrices,
                                       double* scale, REAL* sm, Tiles tl) {
    const i64 mats[2] = {op[4], op[6]};
#if WIDE_MMA
    const i64 dest = op[0], sw = op[1], sr = op[2];
    REAL* out = partials + (size_t)(dest - n_tips) * CATEGORIES * (size_t)n_patterns * STATES;
    double* bs = reinterpret_cast<double*>(sm);               // [2][FRAG_MATRIX] when MMA_B_SHARED
#if MMA_B_SHARED
    load_fragments_shared(bs, matrices, mats, 2);
#endif
    __syncthreads();
    const Child a = child_of(op[3], n_tips, n_patterns, partials, tip_partials, tip_states, tip_index);
    const Child b = child_of(op[5], n_tips, n_patterns, partials, tip_partials, tip_states, tip_index);
    const double* fa = bs;
    const double* fb = bs + FRAG_MATRIX;
    if (a.states && b.states) {
        update_tiles_mma<true, true>(a, fa, mats[0], b, fb, mats[1], matrices, out, n_patterns, sw, sr, scale, tl);
    } else if (a.states) {
        update_tiles_mma<true, false>(a, fa, mats[0], b, fb, mats[1], matrices, out, n_patterns, sw, sr, scale, tl);
    } else if (b.states) {
        update_tiles_mma<true, false>(b, fb, mats[1], a, fa, mats[0], matrices, out, n_patterns, sw, sr, scale, tl);
    } else {
        update_tiles_mma<false, false>(a, fa, mats[0], b, fb, mats[1], matrices, out, n_patterns, sw, sr, scale, tl);
    }
#else
    load_matrices_shared(sm, matrices, mats, 2);
    __syncthreads();
    op_tiles_simt(op[0], op[1], op[2], op[3], op[5], n_patterns, n_tips, partials, tip_partials, tip_states,
                  tip_index, scale, sm, sm + MAT_SHARED, sm + 2 * MAT_SHARED, tl);
#endif
}

#if !WIDE_MMA
// The jobs kernel's shared memory on the SIMT paths: two buffers of both children's matrices (the next
// operation's are copied in while this one computes), the rescaling scratch (and the wide output
// tile), then JOB_CHUNK operation rows. CudaBackend.jobs_shared computes the same size.
#define JOB_MATS (4 * MAT_SHARED)
#define JOB_SCRATCH ((size_t)CATEGORIES * PATTERN_BLOCK * (1 + (WIDE ? OSTRIDE : 0)))
#define JOB_ROWS_AT ((((JOB_MATS + JOB_SCRATCH) * sizeof(REAL)) + 15) / 16 * 16)

// Queue the copy of two matrices (global indices m0, m1) into a buffer's STATES columns: cp.async on
// sm_80+, so the loads overlap the current operation; the pad columns were written once.
__device__ __forceinline__ void prefetch_matrices(REAL* buf, const REAL* __restrict__ matrices, i64 m0, i64 m1) {
    constexpr int CH = (STATES * sizeof(REAL)) % 16 == 0 ? (int)(16 / sizeof(REAL)) : 1;   // REALs a copy
    constexpr int PER_ROW = STATES / CH, ROWS = CATEGORIES * STATES;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    for (int e = tid; e < 2 * ROWS * PER_ROW; e += nthreads) {
        const int k = e / (ROWS * PER_ROW), r = e - k * ROWS * PER_ROW;
        const int row = r / PER_ROW, j = (r - row * PER_ROW) * CH;
        const REAL* src = matrices + (size_t)(k ? m1 : m0) * ROWS * STATES + (size_t)row * STATES + j;
        REAL* dst = buf + (size_t)k * MAT_SHARED + (size_t)row * MSTRIDE + j;
#if __CUDA_ARCH__ >= 800
        __pipeline_memcpy_async(dst, src, CH * sizeof(REAL));
#else
#pragma unroll
        for (int q = 0; q < CH; ++q) dst[q] = src[q];
#endif
    }
#if __CUDA_ARCH__ >= 800
    __pipeline_commit();
#endif
}

// Operation rows [from, from + n) of a job into shared memory (all threads take part).
__device__ __forceinline__ void load_rows(i64* rows, const i64* __restrict__ ops, i64 from, i64 n) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    for (i64 e = tid; e < n * OP_WIDTH; e += nthreads) rows[e] = ops[from * OP_WIDTH + e];
}

// A job's operations in order on this block's tiles, software-pipelined: the rows come into shared
// memory JOB_CHUNK at a time and each operation's matrices are copied in during the one before, so an
// operation waits on its children's loads alone (the jobs kernel is latency-bound: a generation's
// longest job is a chain of dependent operations).
__device__ void run_job_simt(const i64* __restrict__ ops, i64 count, i64 n_patterns, i64 n_tips, REAL* partials,
                             const REAL* __restrict__ tip_partials, const unsigned char* __restrict__ tip_states,
                             const i64* __restrict__ tip_index, const REAL* __restrict__ matrices, double* scale,
                             unsigned char* smem, Tiles tl) {
    REAL* bufs = reinterpret_cast<REAL*>(smem);
    REAL* smax = bufs + JOB_MATS;
    i64* rows = reinterpret_cast<i64*>(smem + JOB_ROWS_AT);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    for (int e = tid; e < 4 * CATEGORIES * STATES; e += nthreads) {      // pad columns of all four matrices
        REAL* row = bufs + (size_t)e * MSTRIDE;
        for (int col = STATES; col < MSTRIDE; ++col) row[col] = col == STATES ? (REAL)1 : (REAL)0;
    }
    i64 base = 0;
    load_rows(rows, ops, 0, count < JOB_CHUNK ? count : JOB_CHUNK);
    __syncthreads();
    if (count > 0) prefetch_matrices(bufs, matrices, rows[4], rows[6]);
    for (i64 k = 0; k < count; ++k) {
#if __CUDA_ARCH__ >= 800
        __pipeline_wait_prior(0);
#endif
        __syncthreads();                        // op k's matrices are in; op k-1 is done with the other buffer
        const i64* r = rows + (k - base) * OP_WIDTH;
        const i64 dest = r[0], sw = r[1], sr = r[2], c1 = r[3], c2 = r[5];
        if (k + 1 < count) {
            if (k + 1 - base == JOB_CHUNK) {     // the next row is past this chunk: load the next chunk
                __syncthreads();
                base = k + 1;
                load_rows(rows, ops, base, count - base < JOB_CHUNK ? count - base : JOB_CHUNK);
                __syncthreads();
            }
            const i64* n = rows + (k + 1 - base) * OP_WIDTH;
            prefetch_matrices(bufs + ((k + 1) & 1) * 2 * MAT_SHARED, matrices, n[4], n[6]);
        }
        const REAL* m = bufs + (k & 1) * 2 * MAT_SHARED;
        op_tiles_simt(dest, sw, sr, c1, c2, n_patterns, n_tips, partials, tip_partials, tip_states, tip_index, scale,
                      m, m + MAT_SHARED, smax, tl);
        __threadfence_block();
    }
}
#endif

// One dependency level: blockIdx.y = operation within the level.
extern "C" __global__ void PARTIALS_BOUNDS
update_partials(const i64* __restrict__ ops, i64 first_op, i64 n_patterns, i64 n_tips, REAL* partials,
                const REAL* __restrict__ tip_partials, const unsigned char* __restrict__ tip_states,
                const i64* __restrict__ tip_index, const REAL* __restrict__ matrices, double* scale) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL* sm = reinterpret_cast<REAL*>(smem_raw);            // child1 and child2 matrices, then smax
    run_op(ops + (size_t)(first_op + (i64)blockIdx.y) * OP_WIDTH, n_patterns, n_tips, partials, tip_partials,
           tip_states, tip_index, matrices, scale, sm, Tiles{(i64)blockIdx.x, (i64)gridDim.x});
}

// A block's job and tile schedule in the jobs kernel: job j (weight w_j = spans[SPAN_WIDTH j + 2], the
// host's count of full partial-vector passes) owns blocks [start_j, start_{j+1}) with start_j = j +
// floor((G - n) W_<j / W), so every job has a block and the rest go by weight: all jobs end together
// instead of every job waiting for the heaviest one with an equal share of the device.
__device__ __forceinline__ i64 job_of_block(const i64* __restrict__ spans, i64 n_jobs, Tiles& tl) {
    i64 total = 0;
    for (i64 j = 0; j < n_jobs; ++j) total += spans[SPAN_WIDTH * (size_t)j + 2];
    const i64 spare = (i64)gridDim.x - n_jobs, x = blockIdx.x;
    i64 cum = 0, start = 0;
    for (i64 j = 0; j < n_jobs; ++j) {
        cum += spans[SPAN_WIDTH * (size_t)j + 2];
        const i64 end = j + 1 + spare * cum / total;
        if (x < end) {
            tl = Tiles{x - start, end - start};
            return j;
        }
        start = end;
    }
    tl = Tiles{0, 1};
    return -1;                                  // not reached: the last job ends at gridDim.x
}

// Every operation of a generation in ONE launch: each chain's job is ops[spans[3j] .. spans[3j] +
// spans[3j + 1]) in child-first order, run by its share of the grid's blocks (job_of_block). A node's
// pattern tile depends only on the same tile of its children, which this block wrote in an earlier
// iteration with the same tile assignment, so jobs and tiles need no synchronisation across blocks (no
// launch per tree level).
extern "C" __global__ void PARTIALS_BOUNDS
update_partials_jobs(const i64* __restrict__ ops, const i64* __restrict__ spans, i64 n_jobs, i64 n_patterns,
                     i64 n_tips, REAL* partials, const REAL* __restrict__ tip_partials,
                     const unsigned char* __restrict__ tip_states, const i64* __restrict__ tip_index,
                     const REAL* __restrict__ matrices, double* scale) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Tiles tl;
    const i64 job = job_of_block(spans, n_jobs, tl);
    if (job < 0) return;
    const i64 first = spans[SPAN_WIDTH * (size_t)job], count = spans[SPAN_WIDTH * (size_t)job + 1];
#if WIDE_MMA
    REAL* sm = reinterpret_cast<REAL*>(smem_raw);
    for (i64 k = 0; k < count; ++k) {
        __syncthreads();                        // the previous operation is done with the shared matrices
        run_op(ops + (size_t)(first + k) * OP_WIDTH, n_patterns, n_tips, partials, tip_partials, tip_states,
               tip_index, matrices, scale, sm, tl);
        __threadfence_block();
    }
#else
    run_job_simt(ops + (size_t)first * OP_WIDTH, count, n_patterns, n_tips, partials, tip_partials, tip_states,
                 tip_index, matrices, scale, smem_raw, tl);
#endif
}
