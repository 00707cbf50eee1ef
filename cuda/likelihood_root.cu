// Root log likelihood and scale-buffer arithmetic of the likelihood protocol.
// root_lnl: one thread per pattern (grid-stride), blockIdx.y = job (one chain's root call), so one
// launch finishes the roots of many chains.  Site likelihood L_p = sum_c w_c sum_s pi_s R[c,p,s]
// (times P x child when an edge child finishes a trifurcating root), log, + cumulative log scale,
// mixed with pinvar * L_inv in log space; sum_p n_p log L_p with Neumaier-compensated per-thread
// sums and an error-free (TwoSum) block reduction; the host adds the block pairs with math.fsum.
// scale_jobs: cumulative (+)= / -= sum of listed scale buffers, one job per blockIdx.y; root_lnl does the
// same for its own job when given the scale table (the compiled core's flushes pair them: one launch less).
#include "likelihood.cuh"

#ifndef ROOT_BLOCK
#define ROOT_BLOCK 256
#endif

#define JOB_WIDTH 4          // root buffer, cumulative scale, edge child, edge child matrix
#define PARAM_WIDTH (STATES + CATEGORIES + 2)   // freqs, category weights, pinvar, log1p(-pinvar)

__device__ __forceinline__ void two_sum_add(double& s, double& e, double s2, double e2) {
    const double t = s + s2;
    const double bp = t - s;
    const double err = (s - (t - bp)) + (s2 - bp);
    s = t;
    e = e + e2 + err;
}

__device__ __forceinline__ double logaddexp(double a, double b) {
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    const double m = fmax(a, b);
    return m + log1p(exp(-fabs(a - b)));
}

// One pattern of a scale job jb = (cumulative, reset, first, count, sign): the cumulative row's new value,
// written back and returned (the arithmetic of scale_jobs, so fused and separate launches agree bit for bit).
__device__ __forceinline__ double scale_job_row(double* scale, i64 n_patterns, const i64* jb, const i64* idx,
                                                i64 p) {
    double acc = 0.0;
    for (i64 k = 0; k < jb[3]; ++k) acc += scale[(size_t)idx[jb[2] + k] * n_patterns + p];
    double* dst = scale + (size_t)jb[0] * n_patterns + p;
    const double base = jb[1] ? 0.0 : *dst;
    const double v = jb[4] > 0 ? base + acc : base - acc;
    *dst = v;
    return v;
}

// sum_c w_c sum_s pi_s R[c,p,s] (x child term) for one pattern.
__device__ __forceinline__ double site_likelihood(const REAL* root, const REAL* cvec, size_t cstride,
                                                  const unsigned char* cstates, const REAL* cmat,
                                                  const double* par, i64 p, i64 n_patterns) {
    double site = 0.0;
    for (int c = 0; c < CATEGORIES; ++c) {
        REAL r[STATES];
        load_row(root + (size_t)c * n_patterns * STATES + (size_t)p * STATES, r);
        const REAL* m = cmat + (size_t)c * STATES * MSTRIDE;
        if (cstates) {
            state_term<true>(r, m, (int)cstates[p]);
        } else if (cvec) {
            REAL x[STATES];
            load_row(cvec + (size_t)c * cstride + (size_t)p * STATES, x);
            vector_term<true>(r, m, x);
        }
        double acc = 0.0;
#pragma unroll
        for (int s = 0; s < STATES; ++s) acc += par[s] * (double)r[s];
        site += par[STATES + c] * acc;
    }
    return site;
}

extern "C" __global__ void __launch_bounds__(ROOT_BLOCK)
root_lnl(const i64* __restrict__ jobs, const double* __restrict__ params, i64 n_patterns, i64 n_tips,
         const REAL* __restrict__ partials, const REAL* __restrict__ tip_partials,
         const unsigned char* __restrict__ tip_states, const i64* __restrict__ tip_index,
         const REAL* __restrict__ matrices, double* scale, const double* __restrict__ compat,
         const double* __restrict__ pattern_weights, double* __restrict__ site_out, double* __restrict__ block_sums,
         const i64* __restrict__ scale_table, const i64* __restrict__ scale_idx) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL* sm = reinterpret_cast<REAL*>(smem_raw);                     // the edge child's matrices
    __shared__ double red_s[ROOT_BLOCK], red_e[ROOT_BLOCK];
    const i64 job = blockIdx.y;
    const i64* jb = jobs + (size_t)job * JOB_WIDTH;
    const double* par = params + (size_t)job * PARAM_WIDTH;
    const i64 root = jb[0], cum = jb[1], child = jb[2];
    const i64* sj = scale_table ? scale_table + (size_t)job * 5 : nullptr;   // fused scale job (same cum)
    const size_t ps = (size_t)n_patterns * STATES;
    const REAL* rbuf = partials + (size_t)(root - n_tips) * CATEGORIES * ps;
    const REAL* cvec = nullptr;
    const unsigned char* cstates = nullptr;
    size_t cstride = 0;
    if (child >= 0) {
        load_matrices_shared(sm, matrices, jb + 3, 1);
        if (child >= n_tips) {
            cvec = partials + (size_t)(child - n_tips) * CATEGORIES * ps;
            cstride = ps;
        } else if (tip_index[child] >= 0) {
            cvec = tip_partials + (size_t)tip_index[child] * ps;
        } else {
            cstates = tip_states + (size_t)child * n_patterns;
        }
    }
    __syncthreads();
    const double pinvar = par[STATES + CATEGORIES];
    const double log1m = par[STATES + CATEGORIES + 1];
    double s = 0.0, e = 0.0;
    for (i64 p = (i64)blockIdx.x * ROOT_BLOCK + threadIdx.x; p < n_patterns; p += (i64)gridDim.x * ROOT_BLOCK) {
        double ln = log(site_likelihood(rbuf, cvec, cstride, cstates, sm, par, p, n_patterns));
        if (sj) {
            ln += scale_job_row(scale, n_patterns, sj, scale_idx, p);
        } else if (cum >= 0) {
            ln += scale[(size_t)cum * n_patterns + p];
        }
        if (pinvar > 0.0) {
            double inv = 0.0;
            for (int k = 0; k < STATES; ++k) inv += compat[(size_t)p * STATES + k] * par[k];
            ln = logaddexp(ln + log1m, log(pinvar * inv));
        }
        if (site_out) site_out[(size_t)job * n_patterns + p] = ln;
        const double v = pattern_weights[p] * ln;          // Neumaier: keep the low-order part
        const double t = s + v;
        e += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
        s = t;
    }
    red_s[threadIdx.x] = s;
    red_e[threadIdx.x] = e;
    __syncthreads();
    for (int half = ROOT_BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            double a = red_s[threadIdx.x], ae = red_e[threadIdx.x];
            two_sum_add(a, ae, red_s[threadIdx.x + half], red_e[threadIdx.x + half]);
            red_s[threadIdx.x] = a;
            red_e[threadIdx.x] = ae;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        block_sums[((size_t)job * gridDim.x + blockIdx.x) * 2] = red_s[0];
        block_sums[((size_t)job * gridDim.x + blockIdx.x) * 2 + 1] = red_e[0];
    }
}

// jobs[j] = (cumulative, reset (0/1), first, count, sign (+1/-1)): cumulative = (reset ? 0 : cumulative)
// + sign * sum_k scale[idx[first + k]] (the sum taken first, in order, like the numpy backend).
extern "C" __global__ void scale_jobs(double* scale, i64 n_patterns, const i64* __restrict__ jobs,
                                      const i64* __restrict__ idx) {
    const i64* jb = jobs + (size_t)blockIdx.y * 5;
    for (i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x; p < n_patterns; p += (i64)gridDim.x * blockDim.x) {
        scale_job_row(scale, n_patterns, jb, idx, p);
    }
}
