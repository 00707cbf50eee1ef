// Needleman-Wunsch kernels (global alignment, linear gap, 32-bit scores). Host side: cuda/nw.py.
//
// nw_tiles:     one anti-diagonal of NW_TH x NW_TW tiles (one warp per tile); reads the tile's top border
//               row and left border column, writes its bottom row and right column. Only these borders
//               are kept, (rows/NW_TH + cols/NW_TW) * length ints, so 1M x 1M fits on a large GPU.
// nw_traceback: one warp walks back from (m, n): recomputes the tile holding the current cell from its
//               borders with 2-bit directions in shared memory (only the columns left of the current
//               cell), follows them to the tile's edge, repeats.
// nw_batch:     many independent pairs, one warp per pair, stripes of NW_TH rows; the stripe's bottom row
//               is kept in a per-pair scratch row (in place).
#include "nw.cuh"

#ifndef NW_WPB
#define NW_WPB 4  // warps per block of nw_tiles and nw_batch
#endif

__device__ __forceinline__ void nw_load_sub(signed char* sub_s, const signed char* sub) {
    for (int k = threadIdx.x; k < 32 * 32; k += blockDim.x) sub_s[k] = sub[k];
    __syncthreads();
}

// Letters of this lane's 8 rows (padding code beyond the end).
__device__ __forceinline__ void nw_lane_rows(int arow[NW_R], const unsigned char* a, long long first,
                                             long long len) {
#pragma unroll
    for (int k = 0; k < NW_R; ++k) arow[k] = (first + k < len) ? (int)a[first + k] : NW_PAD;
}

extern "C" __global__ void __launch_bounds__(32 * NW_WPB)
nw_tiles(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,
         const signed char* __restrict__ sub, int* hrow, int* vcol, long long ldh, long long ldv,
         int d, int ti0, int count, int gap, int nalpha, int fm, int fn, int* result) {
    __shared__ signed char sub_s[32 * 32];
    __shared__ uint2 prof_s[NW_WPB][32 * 32];
    nw_load_sub(sub_s, sub);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile = blockIdx.x * NW_WPB + warp;
    if (tile >= count) return;
    const int ti = ti0 + tile, tj = d - ti;
    const long long i0 = (long long)ti * NW_TH, j0 = (long long)tj * NW_TW;
    int arow[NW_R], h[NW_R];
    nw_lane_rows(arow, A, i0 + (long long)lane * NW_R, ldv - 1);
    nw_build_profile(prof_s[warp], sub_s, arow, nalpha, lane);
    const int* left = vcol + (long long)tj * ldv + i0 + (long long)lane * NW_R;
#pragma unroll
    for (int k = 0; k < NW_R; ++k) h[k] = left[k + 1];
    const int up_prev = left[0];
    int fc = -1, fl = -1, fk = 0;
    if ((fm - 1) / NW_TH == ti && (fn - 1) / NW_TW == tj) {
        const int r = (int)(fm - 1 - i0);
        fl = r / NW_R;
        fk = r % NW_R;
        fc = (int)(fn - 1 - j0);
    }
    nw_warp_stripe<false>(hrow + (long long)ti * ldh + j0, hrow + (long long)(ti + 1) * ldh + j0, B + j0,
                          NW_TW, prof_s[warp], gap, h, up_prev, fc, fl, fk, result, nullptr, lane);
    int* right = vcol + (long long)(tj + 1) * ldv + i0 + (long long)lane * NW_R;
#pragma unroll
    for (int k = 0; k < NW_R; ++k) right[k + 1] = h[k];
}

// Follow directions inside the tile from local (li, lj) (1-based) until a border; ops appended in reverse.
__device__ long long nw_walk_tile(const unsigned* dirs, int& li, int& lj, unsigned char* ops, long long nops) {
    while (li > 0 && lj > 0) {
        const int r = li - 1;
        const unsigned w = dirs[(r / NW_R) * NW_DIR_LD + (lj - 1)];
        const unsigned op = (w >> (2 * (r % NW_R))) & 3u;
        ops[nops++] = (unsigned char)op;
        li -= (op != 2u);
        lj -= (op != 1u);
    }
    return nops;
}

// Launch with one block of 32 threads. state[0..1] = (i, j) where the walk stopped (a matrix edge);
// *nops_out = number of ops written (reverse order: from (m, n) backwards).
extern "C" __global__ void __launch_bounds__(32)
nw_traceback(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,
             const signed char* __restrict__ sub, const int* hrow, const int* vcol, long long ldh,
             long long ldv, int gap, int nalpha, int fm, int fn, unsigned char* ops, long long* nops_out,
             int* state) {
    __shared__ signed char sub_s[32 * 32];
    __shared__ uint2 prof_s[32 * 32];
    __shared__ unsigned dirs[32 * NW_DIR_LD];
    nw_load_sub(sub_s, sub);
    const int lane = threadIdx.x & 31;
    long long i = fm, j = fn, nops = 0;
    int dummy = 0;
    while (i > 0 && j > 0) {
        const long long ti = (i - 1) / NW_TH, tj = (j - 1) / NW_TW;
        const long long i0 = ti * NW_TH, j0 = tj * NW_TW;
        int arow[NW_R], h[NW_R];
        nw_lane_rows(arow, A, i0 + (long long)lane * NW_R, ldv - 1);
        nw_build_profile(prof_s, sub_s, arow, nalpha, lane);
        const int* left = vcol + tj * ldv + i0 + (long long)lane * NW_R;
#pragma unroll
        for (int k = 0; k < NW_R; ++k) h[k] = left[k + 1];
        nw_warp_stripe<true>(hrow + ti * ldh + j0, nullptr, B + j0, (int)(j - j0), prof_s, gap, h, left[0], -1, -1,
                             0, &dummy, dirs, lane);
        int li = (int)(i - i0), lj = (int)(j - j0);
        if (lane == 0) nops = nw_walk_tile(dirs, li, lj, ops, nops);
        nops = __shfl_sync(NW_FULL, nops, 0);
        li = __shfl_sync(NW_FULL, li, 0);
        lj = __shfl_sync(NW_FULL, lj, 0);
        i = i0 + li;
        j = j0 + lj;
        __syncwarp();
    }
    if (lane == 0) {
        *nops_out = nops;
        state[0] = (int)i;
        state[1] = (int)j;
    }
}

extern "C" __global__ void __launch_bounds__(32 * NW_WPB)
nw_batch(const unsigned char* __restrict__ A, const long long* __restrict__ a_off,
         const int* __restrict__ a_len, const unsigned char* __restrict__ B,
         const long long* __restrict__ b_off, const int* __restrict__ b_len,
         const signed char* __restrict__ sub, int* scratch, const long long* __restrict__ s_off,
         int npairs, int gap, int nalpha, int* scores) {
    __shared__ signed char sub_s[32 * 32];
    __shared__ uint2 prof_s[NW_WPB][32 * 32];
    nw_load_sub(sub_s, sub);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int pair = blockIdx.x * NW_WPB + warp;
    if (pair >= npairs) return;
    const int m = a_len[pair], n = b_len[pair];
    const unsigned char* a = A + a_off[pair];
    int* row = scratch + s_off[pair];
    for (long long j = lane; j <= n; j += 32) row[j] = -gap * (int)j;
    __syncwarp();
    const int nstripes = (m + NW_TH - 1) / NW_TH;
    const int fs = (m - 1) / NW_TH, fr = (m - 1) % NW_TH;
    for (int st = 0; st < nstripes; ++st) {
        const long long first = (long long)st * NW_TH + (long long)lane * NW_R;
        int arow[NW_R], h[NW_R];
        nw_lane_rows(arow, a, first, m);
        nw_build_profile(prof_s[warp], sub_s, arow, nalpha, lane);
#pragma unroll
        for (int k = 0; k < NW_R; ++k) h[k] = -gap * (int)(first + k + 1);
        const bool fin = (st == fs);
        nw_warp_stripe<false>(row, row, B + b_off[pair], n, prof_s[warp], gap, h, -gap * (int)first,
                              fin ? n - 1 : -1, fr / NW_R, fr % NW_R, scores + pair, nullptr, lane);
    }
}

// Boundary values of the border arrays: hrow[0][j] = -g*j, vcol[0][i] = -g*i, hrow[k][0] = -g*k*NW_TH,
// vcol[k][0] = -g*k*NW_TW (the rest is written by nw_tiles). Grid-stride over the longest of them.
extern "C" __global__ void nw_init_borders(int* hrow, int* vcol, long long ldh, long long ldv, int nI, int nJ,
                                           int gap) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x; x < ldh || x < ldv; x += stride) {
        if (x < ldh) hrow[x] = (int)(-(long long)gap * x);
        if (x < ldv) vcol[x] = (int)(-(long long)gap * x);
        if (x <= nI) hrow[x * ldh] = (int)(-(long long)gap * x * NW_TH);
        if (x <= nJ) vcol[x * ldv] = (int)(-(long long)gap * x * NW_TW);
    }
}
