// Needleman-Wunsch (global, linear gap) warp pipeline shared by the tile, traceback and batch kernels.
//
// One warp computes a stripe of 32*NW_R rows: lane t owns rows t*NW_R .. t*NW_R+NW_R-1 in registers and
// walks the columns one step behind lane t-1 (anti-diagonal wavefront), receiving the cell above its
// first row from lane t-1 by a warp shuffle. Substitution scores come from a per-warp query profile in
// shared memory: prof[letter][lane] packs the int8 scores of the lane's NW_R rows (one 64-bit load per
// column). Each cell is one Hopper DPX max3: H = max(diag + s, up - g, left - g).
#pragma once

#ifndef NW_R
#define NW_R 8  // rows per lane; the profile packing below assumes 8
#endif
#ifndef NW_TW
#define NW_TW 256  // tile width (columns) of the single-pair kernels; a multiple of 32
#endif
#define NW_TH (32 * NW_R)  // tile height (rows)
#define NW_PAD 31          // letter code of padding residues (scores 0 against everything)
#define NW_FULL 0xffffffffu
#define NW_DIR_LD (NW_TW + 2)  // row stride of the traceback direction words (bank-conflict free)

static_assert(NW_R == 8 || NW_R == 4, "the int8 profile packs 4 or 8 rows per lane");
static_assert(NW_TW % 32 == 0, "NW_TW must be a multiple of 32");

// Extract the signed int8 score of row k (0..7) from the packed profile entry.
__device__ __forceinline__ int nw_score_k(uint2 p, int k) {
    unsigned w = (k < 4) ? p.x : p.y;
    return ((int)(w << (24 - 8 * (k & 3)))) >> 24;
}

// Fill this warp's profile: prof[c*32 + lane] = scores of letter c against the lane's 8 row letters.
__device__ __forceinline__ void nw_build_profile(uint2* prof, const signed char* sub_s, const int* arow,
                                                 int nalpha, int lane) {
    for (int c = 0; c < 32; ++c) {
        if (c >= nalpha && c != NW_PAD) continue;
        unsigned lo = 0, hi = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            lo |= ((unsigned)(unsigned char)sub_s[arow[k] * 32 + c]) << (8 * k);
            if (NW_R == 8) hi |= ((unsigned)(unsigned char)sub_s[arow[(k + 4) % NW_R] * 32 + c]) << (8 * k);
        }
        prof[c * 32 + lane] = make_uint2(lo, hi);
    }
    __syncwarp();
}

// One stripe of `ncols` columns. top[c+1] = H of the row above the stripe at column c (c in [0,ncols));
// bottom[c+1] receives the stripe's last row (may alias top: reads run ahead of writes; unused with
// TRACE). h[] holds the
// left column on entry and the right column on exit; up_prev is H(row above first row, column -1).
// The cell (final row fl*NW_R+fk, column fc) is written to *result; TRACE stores 2-bit directions in
// shared memory (dirs[lane][column], for a traceback's tile recomputation). GDIRS keeps the bottom row and
// also stores every cell's directions to global memory in step order: gdirs[step * 32 + lane] holds the
// 2 * NW_R bits of the lane's rows at column step - lane (one coalesced 64-byte store per step).
template <bool TRACE, bool GDIRS = false>
__device__ __forceinline__ void nw_warp_stripe(const int* top, int* bottom, const unsigned char* bcodes,
                                               int ncols, const uint2* prof, int gap, int h[NW_R],
                                               int up_prev, int fc, int fl, int fk, int* result,
                                               unsigned* dirs, int lane, unsigned short* gdirs = nullptr) {
    int bottom_v = 0, outv = 0;
    int topn = (lane < ncols) ? top[lane + 1] : 0;
    int bn = (lane < ncols) ? (int)bcodes[lane] : NW_PAD;
    int topc = 0, bc = NW_PAD;
    // bcur: letter of this lane's column at the current step; its profile entry pcur is loaded one step
    // ahead (the letter travels down the wavefront by shuffle), keeping the shared load off the chain.
    int bcur = __shfl_sync(NW_FULL, bn, 0) & 31;
    uint2 pcur = prof[(lane == 0 ? bcur : NW_PAD) * 32 + lane];
    const int last = ncols + 30;
    for (int s = 0; s <= last; ++s) {
        const int sl = s & 31;
        if (sl == 0) {
            topc = topn;
            bc = bn;
            long long nx = (long long)s + 32 + lane;
            topn = (nx < ncols) ? top[nx + 1] : 0;
            bn = (nx < ncols) ? (int)bcodes[nx] : NW_PAD;
        }
        const int sn = (s + 1) & 31;
        const int b0n = __shfl_sync(NW_FULL, sn ? bc : bn, sn);
        int bnext = __shfl_up_sync(NW_FULL, bcur, 1);
        if (lane == 0) bnext = b0n;
        bnext &= 31;
        const uint2 pnext = prof[bnext * 32 + lane];
        int top_v = __shfl_sync(NW_FULL, topc, sl);
        int up_in = __shfl_up_sync(NW_FULL, bottom_v, 1);
        if (lane == 0) up_in = top_v;
        const int c = s - lane;
        if (c >= 0 && c < ncols) {
            const uint2 p = pcur;
            int diag = up_prev, up = up_in;
            unsigned bits = 0;
#pragma unroll
            for (int k = 0; k < NW_R; ++k) {
                const int dd = diag + nw_score_k(p, k), du = up - gap, dl = h[k] - gap;
                const int nh = __vimax3_s32(dd, du, dl);
                if (TRACE || GDIRS) bits |= (nh == dd ? 0u : (nh == du ? 1u : 2u)) << (2 * k);
                diag = h[k];
                h[k] = nh;
                up = nh;
            }
            if (TRACE) dirs[lane * NW_DIR_LD + c] = bits;
            if (GDIRS) gdirs[(long long)s * 32 + lane] = (unsigned short)bits;
            up_prev = up_in;
            bottom_v = h[NW_R - 1];
            if (c == fc && lane == fl) {
#pragma unroll
                for (int k = 0; k < NW_R; ++k)
                    if (k == fk) *result = h[k];
            }
        }
        bcur = bnext;
        pcur = pnext;
        const int w = __shfl_sync(NW_FULL, bottom_v, 31);  // lane 31's row at column s - 31
        if (lane == sl) outv = w;
        if (!TRACE && (sl == 31 || s == last)) {
            const long long col = (long long)s - sl + lane - 31;
            if (lane <= sl && col >= 0 && col < ncols) bottom[col + 1] = outv;
        }
    }
    __syncwarp();
}
