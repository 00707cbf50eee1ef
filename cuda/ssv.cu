// HMMER3 SSV filter, bit-exact: one thread per diagonal class, 8 model lanes per thread.
//
// Model positions k = j*h + t + 1 (lane j = 0..7, phase t = 0..h-1, h = ceil(M/8)) are striped
// like HMMER's SSE layout: at each residue a thread updates one cell in each of its 8 lanes,
// all on the same residue, so the 8 scores are one 16-byte row of the shared-memory table.
// When the phase wraps (t == h) the lanes shift up by one (a diagonal leaves lane j and enters
// lane j+1; lane 0 starts a new diagonal at -128). Thread c starts at phase c, so the h threads
// of a sequence cover every diagonal once, with no traffic between them until the final max.
//
// Arithmetic: int16x2 with Hopper DPX, v = max(v + s, -128) (__viaddmax_s16x2), where s = -sb is
// HMMER's signed SSV score. Before the overflow threshold this equals HMMER's saturated signed
// byte update; after it the values no longer matter because the running max (never decreasing)
// already records the overflow. Four residues come from one 32-bit load (sequences are packed
// with 32-bit aligned offsets and padded with a code whose scores are -127).
#include <stdint.h>

#ifndef SSV_NROWS
#define SSV_NROWS 30          // residue codes 0..28 plus the PAD code 29
#endif
#ifndef SSV_BLOCK
#define SSV_BLOCK 512
#endif

#define FLOOR2 0xFF80FF80u    // (-128, -128) as int16x2

__device__ __forceinline__ void shift_lanes(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3)
{
    // lane l+1 <- lane l; lane 0 <- -128. Lane 2m is the low half of r_m.
    r3 = __byte_perm(r2, r3, 0x5432);
    r2 = __byte_perm(r1, r2, 0x5432);
    r1 = __byte_perm(r0, r1, 0x5432);
    r0 = __byte_perm(FLOOR2, r0, 0x5432);
}

__device__ __forceinline__ void step(const uint4 *__restrict__ stab, unsigned x, int h, int &t,
                                     unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3,
                                     unsigned &m0, unsigned &m1)
{
    const uint4 s = stab[x * (unsigned)h + (unsigned)t];
    r0 = __viaddmax_s16x2(r0, s.x, FLOOR2);
    r1 = __viaddmax_s16x2(r1, s.y, FLOOR2);
    r2 = __viaddmax_s16x2(r2, s.z, FLOOR2);
    r3 = __viaddmax_s16x2(r3, s.w, FLOOR2);
    m0 = __vimax3_s16x2(m0, r0, r1);
    m1 = __vimax3_s16x2(m1, r2, r3);
    if (++t == h) {
        shift_lanes(r0, r1, r2, r3);
        t = 0;
    }
}

// table: SSV_NROWS * h uint4 (8 int16 scores each); seq32: packed codes as 32-bit words;
// offsets: residue offset of each sequence (multiple of 4); lengths: residues; order: sequence
// ids in launch order (longest first keeps warps uniform); out: max cell per sequence, preset -128.
extern "C" __global__ void __launch_bounds__(SSV_BLOCK)
ssv_kernel(const uint4 *__restrict__ table, const unsigned *__restrict__ seq32,
           const long long *__restrict__ offsets, const int *__restrict__ lengths,
           const int *__restrict__ order, long long nseq, int h, int *__restrict__ out)
{
    extern __shared__ uint4 stab[];
    for (int i = threadIdx.x; i < SSV_NROWS * h; i += blockDim.x) stab[i] = table[i];
    __syncthreads();

    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long j = g / h;
    const bool valid = j < nseq;
    int s = -1;
    long long nw = 0, w0 = 0;
    int t = (int)(g - j * h);
    if (valid) {
        s = order[j];
        w0 = offsets[s] >> 2;
        nw = ((long long)lengths[s] + 3) >> 2;
    }
    unsigned r0 = FLOOR2, r1 = FLOOR2, r2 = FLOOR2, r3 = FLOOR2, m0 = FLOOR2, m1 = FLOOR2;
    const unsigned *p = seq32 + w0;
    for (long long w = 0; w < nw; ++w) {
        const unsigned word = __ldg(p + w);
        step(stab, word & 0xFFu, h, t, r0, r1, r2, r3, m0, m1);
        step(stab, (word >> 8) & 0xFFu, h, t, r0, r1, r2, r3, m0, m1);
        step(stab, (word >> 16) & 0xFFu, h, t, r0, r1, r2, r3, m0, m1);
        step(stab, word >> 24, h, t, r0, r1, r2, r3, m0, m1);
    }
    const unsigned m = __vmaxs2(m0, m1);
    const int lo = (int)(short)(m & 0xFFFFu), hi = (int)(short)(m >> 16);
    int best = lo > hi ? lo : hi;
    const unsigned peers = __match_any_sync(0xFFFFFFFFu, s);
    best = __reduce_max_sync(peers, best);
    if (valid && (int)(threadIdx.x & 31) == __ffs(peers) - 1) atomicMax(out + s, best);
}
