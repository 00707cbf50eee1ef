// Needleman-Wunsch kernels (global alignment, linear gap, 32-bit scores). Host side: cuda/nw.py.
//
// nw_tiles:     one anti-diagonal of NW_TH x NW_TW tiles (one warp per tile); reads the tile's top border
//               row and left border column, writes its bottom row and right column. Only these borders
//               are kept, (rows/NW_TH + cols/NW_TW) * length ints, so 1M x 1M fits on a large GPU.
// nw_traceback: one warp walks back from (m, n): recomputes the tile holding the current cell from its
//               borders with 2-bit directions in shared memory (only the columns left of the current
//               cell), follows them to the tile's edge, repeats.
// nw_tiles_dirs + nw_walk_dirs: when 2 bits per cell fit in device memory (up to ~400k x 400k on an 80 GB
//               GPU), the forward pass also stores every cell's direction and the traceback only walks
//               them: no recomputation on the (serial) way back.
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

// One tile of the anti-diagonal launch; with GDIRS the tile's directions go to gdirs (nw_tiles_dirs).
template <bool GDIRS>
__device__ __forceinline__ void nw_tile(const unsigned char* A, const unsigned char* B, const signed char* sub_s,
                                        uint2* prof, int* hrow, int* vcol, long long ldh, long long ldv, int ti,
                                        int tj, int gap, int nalpha, int fm, int fn, int* result,
                                        unsigned short* gdirs, int lane) {
    const long long i0 = (long long)ti * NW_TH, j0 = (long long)tj * NW_TW;
    int arow[NW_R], h[NW_R];
    nw_lane_rows(arow, A, i0 + (long long)lane * NW_R, ldv - 1);
    nw_build_profile(prof, sub_s, arow, nalpha, lane);
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
    nw_warp_stripe<false, GDIRS>(hrow + (long long)ti * ldh + j0, hrow + (long long)(ti + 1) * ldh + j0, B + j0,
                                 NW_TW, prof, gap, h, up_prev, fc, fl, fk, result, nullptr, lane, gdirs);
    int* right = vcol + (long long)(tj + 1) * ldv + i0 + (long long)lane * NW_R;
#pragma unroll
    for (int k = 0; k < NW_R; ++k) right[k + 1] = h[k];
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
    const int ti = ti0 + tile;
    nw_tile<false>(A, B, sub_s, prof_s[warp], hrow, vcol, ldh, ldv, ti, d - ti, gap, nalpha, fm, fn, result,
                   nullptr, lane);
}

// nw_tiles that also keeps every cell's 2-bit direction: tile (ti, tj) owns NW_DIRS_TILE words of gdirs
// from (ti * nj + tj) * NW_DIRS_TILE, in the step order of nw_warp_stripe (read back by nw_walk_dirs).
#define NW_DIRS_TILE ((long long)(NW_TW + 31) * 32)
extern "C" __global__ void __launch_bounds__(32 * NW_WPB)
nw_tiles_dirs(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,
              const signed char* __restrict__ sub, int* hrow, int* vcol, long long ldh, long long ldv,
              int d, int ti0, int count, int gap, int nalpha, int fm, int fn, int* result,
              unsigned short* gdirs, int nj) {
    __shared__ signed char sub_s[32 * 32];
    __shared__ uint2 prof_s[NW_WPB][32 * 32];
    nw_load_sub(sub_s, sub);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile = blockIdx.x * NW_WPB + warp;
    if (tile >= count) return;
    const int ti = ti0 + tile, tj = d - ti;
    unsigned short* gd = gdirs + ((long long)ti * nj + tj) * NW_DIRS_TILE;
    nw_tile<true>(A, B, sub_s, prof_s[warp], hrow, vcol, ldh, ldv, ti, tj, gap, nalpha, fm, fn, result, gd, lane);
}

// Walk back from (m, n) through the directions kept by nw_tiles_dirs. One block: its threads copy the part
// of the current tile the walk can reach (steps below lj + 31) into shared memory with 16-byte loads, then
// thread 0 follows the directions to the tile's edge; ops are appended in reverse, state as nw_traceback.
#ifndef NW_WALK_THREADS
#define NW_WALK_THREADS 256
#endif
extern "C" __global__ void __launch_bounds__(NW_WALK_THREADS)
nw_walk_dirs(const unsigned short* __restrict__ gdirs, int nj, int fm, int fn, unsigned char* ops,
             long long* nops_out, int* state) {
    __shared__ __align__(16) unsigned short sd[NW_DIRS_TILE];
    __shared__ long long sh_i, sh_j, sh_n;
    if (threadIdx.x == 0) {
        sh_i = fm;
        sh_j = fn;
        sh_n = 0;
    }
    __syncthreads();
    while (sh_i > 0 && sh_j > 0) {
        const long long i = sh_i, j = sh_j;
        const long long ti = (i - 1) / NW_TH, tj = (j - 1) / NW_TW;
        const int li0 = (int)(i - ti * NW_TH), lj0 = (int)(j - tj * NW_TW);
        const uint4* src = (const uint4*)(gdirs + (ti * nj + tj) * NW_DIRS_TILE);
        const int nvec = (lj0 + 31) * 32 / 8;  // steps 0 .. lj0 + 30, 8 words per uint4
        for (int x = threadIdx.x; x < nvec; x += blockDim.x) ((uint4*)sd)[x] = src[x];
        __syncthreads();
        if (threadIdx.x == 0) {
            int li = li0, lj = lj0;
            long long n = sh_n;
            while (li > 0 && lj > 0) {
                const int r = li - 1, ln = r / NW_R;
                const unsigned op = ((unsigned)sd[(lj - 1 + ln) * 32 + ln] >> (2 * (r % NW_R))) & 3u;
                ops[n++] = (unsigned char)op;
                li -= (op != 2u);
                lj -= (op != 1u);
            }
            sh_n = n;
            sh_i = ti * NW_TH + li;
            sh_j = tj * NW_TW + lj;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        *nops_out = sh_n;
        state[0] = (int)sh_i;
        state[1] = (int)sh_j;
    }
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
