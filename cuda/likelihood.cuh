// Shared definitions of the likelihood kernels (likelihood_partials.cu, likelihood_root.cu,
// likelihood_matrices.cu): the -D specialisation flags with their defaults, the padded
// shared-memory matrix layout and vectorised row loads.  Every offset is size_t / long long.
#pragma once

#ifndef STATES
#define STATES 4                 // 4 (DNA, hand-unrolled), 20 (protein), any other count (generic)
#endif
#ifndef CATEGORIES
#define CATEGORIES 4             // rate categories: threadIdx.y of a block
#endif
#ifndef REAL
#define REAL double              // partials and matrices: float or double
#endif
#ifndef PATTERN_BLOCK            // patterns per block (threadIdx.x); a warp shares one category
#define PATTERN_BLOCK (((256 / CATEGORIES) / 32) * 32 < 32 ? 32 : ((256 / CATEGORIES) / 32) * 32)
#endif

#ifndef MIN_BLOCKS               // __launch_bounds__ minimum resident blocks per SM (register cap)
#define MIN_BLOCKS 1
#endif

typedef long long i64;
typedef unsigned long long u64;

// One operation row: dest, dest_scale_write, dest_scale_read, child1, child1_matrix, child2, child2_matrix.
#define OP_WIDTH 7
#ifndef JOB_CHUNK
#define JOB_CHUNK 32             // operation rows the jobs kernel holds in shared memory at a time
#endif
#define SPAN_WIDTH 3             // a job's first operation, operation count, weight (cuda/batch.py)

// Vector width (elements of 16 bytes) and the padded row length of a matrix in shared memory:
// STATES entries P[i][0..S-1], then 1.0 at column S (the 'any state' column of compact tips).
#define VW ((int)(16 / sizeof(REAL)))
#define MSTRIDE ((((STATES) + 1 + VW - 1) / VW) * VW)
#define MAT_SHARED ((size_t)CATEGORIES * STATES * MSTRIDE)   // REALs per matrix (all categories)

// Loads of partials go through the read-only cache (__ldg) unless the module is built with
// COHERENT_LOADS=1: update_partials_jobs reads, in one kernel, partials that the same kernel wrote.
#if defined(COHERENT_LOADS) && COHERENT_LOADS
#define LDG(p) (*(p))
#define LOAD_RESTRICT
#else
#define LDG(p) __ldg(p)
#define LOAD_RESTRICT __restrict__
#endif

// Load STATES contiguous REALs (16-byte vectors when the row is 16-byte aligned).
__device__ __forceinline__ void load_row(const REAL* LOAD_RESTRICT src, REAL (&x)[STATES]) {
    if constexpr (sizeof(REAL) == 8 && STATES % 2 == 0) {
        const double2* q = reinterpret_cast<const double2*>(src);
#pragma unroll
        for (int j = 0; j < STATES / 2; ++j) {
            double2 v = LDG(q + j);
            x[2 * j] = (REAL)v.x;
            x[2 * j + 1] = (REAL)v.y;
        }
    } else if constexpr (sizeof(REAL) == 4 && STATES % 4 == 0) {
        const float4* q = reinterpret_cast<const float4*>(src);
#pragma unroll
        for (int j = 0; j < STATES / 4; ++j) {
            float4 v = LDG(q + j);
            x[4 * j] = (REAL)v.x;
            x[4 * j + 1] = (REAL)v.y;
            x[4 * j + 2] = (REAL)v.z;
            x[4 * j + 3] = (REAL)v.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < STATES; ++j) x[j] = LDG(src + j);
    }
}

// Store STATES contiguous REALs (vectorised like load_row).
__device__ __forceinline__ void store_row(REAL* __restrict__ dst, const REAL (&x)[STATES]) {
    if constexpr (sizeof(REAL) == 8 && STATES % 2 == 0) {
        double2* q = reinterpret_cast<double2*>(dst);
#pragma unroll
        for (int j = 0; j < STATES / 2; ++j) q[j] = make_double2((double)x[2 * j], (double)x[2 * j + 1]);
    } else if constexpr (sizeof(REAL) == 4 && STATES % 4 == 0) {
        float4* q = reinterpret_cast<float4*>(dst);
#pragma unroll
        for (int j = 0; j < STATES / 4; ++j)
            q[j] = make_float4((float)x[4 * j], (float)x[4 * j + 1], (float)x[4 * j + 2], (float)x[4 * j + 3]);
    } else {
#pragma unroll
        for (int j = 0; j < STATES; ++j) dst[j] = x[j];
    }
}

// Copy `count` matrices (each CATEGORIES x STATES x STATES, global index mats[k]) into shared memory
// in the padded layout, with 1.0 in the 'any state' column.  All threads of the block take part.
__device__ __forceinline__ void load_matrices_shared(REAL* sm, const REAL* __restrict__ matrices,
                                                     const i64* mats, int count) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;
    const int per = CATEGORIES * STATES * MSTRIDE;
    for (int e = tid; e < count * per; e += nthreads) {
        const int k = e / per;
        const int r = e - k * per;
        const int row = r / MSTRIDE;                 // category * STATES + i
        const int col = r - row * MSTRIDE;
        REAL v = (REAL)0;
        if (col < STATES) {
            v = matrices[(size_t)mats[k] * CATEGORIES * STATES * STATES + (size_t)row * STATES + col];
        } else if (col == STATES) {
            v = (REAL)1;
        }
        sm[(size_t)k * per + r] = v;
    }
}

// out[i] (=, or *= when MUL) sum_j M[i][j] x[j] for a partial-vector child; M = one category's
// padded matrix in shared memory.
template <bool MUL>
__device__ __forceinline__ void vector_term(REAL (&out)[STATES], const REAL* __restrict__ m,
                                            const REAL (&x)[STATES]) {
    if constexpr (STATES == 4) {       // hand-unrolled DNA: 16 FMAs, rows of 4 (+pad) from shared
        REAL t0 = m[0] * x[0] + m[1] * x[1] + m[2] * x[2] + m[3] * x[3];
        REAL t1 = m[MSTRIDE] * x[0] + m[MSTRIDE + 1] * x[1] + m[MSTRIDE + 2] * x[2] + m[MSTRIDE + 3] * x[3];
        REAL t2 = m[2 * MSTRIDE] * x[0] + m[2 * MSTRIDE + 1] * x[1] + m[2 * MSTRIDE + 2] * x[2]
                + m[2 * MSTRIDE + 3] * x[3];
        REAL t3 = m[3 * MSTRIDE] * x[0] + m[3 * MSTRIDE + 1] * x[1] + m[3 * MSTRIDE + 2] * x[2]
                + m[3 * MSTRIDE + 3] * x[3];
        if constexpr (MUL) {
            out[0] *= t0; out[1] *= t1; out[2] *= t2; out[3] *= t3;
        } else {
            out[0] = t0; out[1] = t1; out[2] = t2; out[3] = t3;
        }
    } else if constexpr (STATES % VW == 0) {   // rows read from shared memory as 16-byte vectors
#pragma unroll
        for (int i = 0; i < STATES; ++i) {
            REAL acc = (REAL)0;
            if constexpr (sizeof(REAL) == 8) {
                const double2* row = reinterpret_cast<const double2*>(m + i * MSTRIDE);
#pragma unroll
                for (int j = 0; j < STATES / 2; ++j) {
                    const double2 v = row[j];
                    acc += (REAL)v.x * x[2 * j] + (REAL)v.y * x[2 * j + 1];
                }
            } else {
                const float4* row = reinterpret_cast<const float4*>(m + i * MSTRIDE);
#pragma unroll
                for (int j = 0; j < STATES / 4; ++j) {
                    const float4 v = row[j];
                    acc += (REAL)v.x * x[4 * j] + (REAL)v.y * x[4 * j + 1] + (REAL)v.z * x[4 * j + 2]
                         + (REAL)v.w * x[4 * j + 3];
                }
            }
            if constexpr (MUL) out[i] *= acc; else out[i] = acc;
        }
    } else {
#pragma unroll
        for (int i = 0; i < STATES; ++i) {
            const REAL* row = m + i * MSTRIDE;
            REAL acc = (REAL)0;
#pragma unroll
            for (int j = 0; j < STATES; ++j) acc += row[j] * x[j];
            if constexpr (MUL) out[i] *= acc; else out[i] = acc;
        }
    }
}

// out[i] (=, or *=) M[i][state]: a compact tip (state == STATES reads the 1.0 'any state' column).
template <bool MUL>
__device__ __forceinline__ void state_term(REAL (&out)[STATES], const REAL* __restrict__ m, int state) {
#pragma unroll
    for (int i = 0; i < STATES; ++i) {
        const REAL v = m[i * MSTRIDE + state];
        if constexpr (MUL) out[i] *= v; else out[i] = v;
    }
}
