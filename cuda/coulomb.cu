// Direct Coulomb summation for AutoGrid-compatible electrostatic maps (engine.cuda.coulomb).
//
// Each thread owns NX grid points of one (y, z) row, BLOCK_X apart along x, so the y/z parts of
// the distance and the atom load are shared by NX points. Atoms (x, y, z relative to the grid
// centre, charge) sit in constant memory, one tile of up to TILE_ATOMS per launch; a thread sums
// a tile in fp32 and adds the tile's sum into the fp64 map slab, so long receptors keep fp64
// accuracy. The map is later multiplied by FE_coeff_estat (and 332/eps for constant eps) on the host.
//
// ATOM_SRC 0: atoms read from constant memory (the tile copied into c_atoms before the launch).
// ATOM_SRC 1: each block stages the tile from global memory into shared memory, BLOCK_X*BLOCK_Y
//             atoms at a time (padding atoms have charge 0), and reads them as broadcasts.
// Mehler-Solmajer bins are a step function, so a bin chosen differently from AutoGrid (fp32 r
// against its fp64 r) costs up to 0.08 kcal/mol per unit charge at r = 1 A. Pairs closer than
// R_EXACT whose fp32 r * 100 lies within `guard` of a bin edge therefore redo the distance in fp64
// exactly as AutoGrid does (no FMA contraction), from fp64 atom coordinates; beyond R_EXACT a flip
// costs < 3e-5 per unit charge.
// DDD_MODE 1: the Mehler-Solmajer factor 332/eps(r) comes from AutoGrid's 0.01 A table held in
//             shared memory (TABLE_N entries; larger bins are constant to fp32 precision).
// DDD_MODE 0: the same bin value from the closed form evaluated at the bin's left edge
//             (floor(100 r) / 100), i.e. exactly what the table holds, up to fp32 rounding.
#ifndef NX
#define NX 8
#endif
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#ifndef TILE_ATOMS
#define TILE_ATOMS 4000
#endif
#ifndef DDD_MODE
#define DDD_MODE 1
#endif
#ifndef TABLE_N
#define TABLE_N 8192
#endif
#ifndef ATOM_SRC
#define ATOM_SRC 1
#endif

#ifndef R_EXACT
#define R_EXACT 12.0f
#endif

#define MAX_DIST 16384
#define MS_A (-8.5525f)
#define MS_B (86.9525f)                   // 78.4 - A
#define MS_RK 7.7839f
#define MS_EX2 (-4.549924263e-3f)          // -lambda * B * 0.01 / ln(2): per 0.01 A bin

__constant__ float4 c_atoms[TILE_ATOMS];  // x, y, z (A, grid frame), charge

struct RowGeom {
    float x0, y, z;                        // first point of this thread, grid frame
    long long iy, iz, ix0;
    int nex, ney, nez;
};

__device__ __forceinline__ RowGeom row_geometry(int nex, int ney, int nez, int z0, float h)
{
    RowGeom g;
    g.ix0 = (long long)blockIdx.x * (BLOCK_X * NX) + threadIdx.x;
    g.iy = (long long)blockIdx.y * BLOCK_Y + threadIdx.y;
    g.iz = (long long)z0 + blockIdx.z;
    g.nex = nex; g.ney = ney; g.nez = nez;
    g.x0 = (float)(g.ix0 - nex) * h;
    g.y = (float)(g.iy - ney) * h;
    g.z = (float)(g.iz - nez) * h;
    return g;
}

// out[slab] += acc for the points of this thread that lie inside the grid.
__device__ __forceinline__ void add_row(double* __restrict__ out, const float* acc, const RowGeom& g,
                                        int nx, int ny, int z0)
{
    if (g.iy >= ny) return;
    const size_t row = ((size_t)(g.iz - z0) * (size_t)ny + (size_t)g.iy) * (size_t)nx;
#pragma unroll
    for (int k = 0; k < NX; ++k) {
        const long long ix = g.ix0 + (long long)k * BLOCK_X;
        if (ix < nx) out[row + (size_t)ix] += (double)acc[k];
    }
}

// 332 / eps of the bin (both modes agree with AutoGrid's table to fp32 rounding); bins are capped
// at MAX_DIST - 1 like AutoGrid (and at TABLE_N - 1 in table mode: equal in fp32, see docs/grid.md).
#if DDD_MODE == 1
#define REPS(t, idx) (s_reps[min((idx), TABLE_N - 1)])
#else
__device__ __forceinline__ float reps_closed(float t)
{
    const float bin = fminf(t - 8388608.0f, (float)(MAX_DIST - 1));
    const float u = fmaf(MS_RK, exp2f(bin * MS_EX2), 1.0f);     // 1 + k exp(-lambda B r)
    const float v = __fdividef(332.0f * u, fmaf(MS_A, u, MS_B)); // 332 / (A + B / u)
    return bin == 0.0f ? 332.0f : v;                             // AutoGrid's bin 0 holds eps = 1
}
#define REPS(t, idx) reps_closed(t)
#endif


// Add one atom's contribution to the NX points of this thread (constant dielectric).
__device__ __forceinline__ void add_atom_const(float (&acc)[NX], const float (&off)[NX], const float4 at,
                                               const RowGeom& g)
{
    const float dy = at.y - g.y, dz = at.z - g.z;
    const float yz2 = fmaf(dy, dy, dz * dz);
    const float dx0 = at.x - g.x0;
#pragma unroll
    for (int k = 0; k < NX; ++k) {
        const float dx = dx0 - off[k];
        const float r2 = fmaxf(fmaf(dx, dx, yz2), 0.25f);         // 1 / max(r, 0.5)
        acc[k] = fmaf(at.w, rsqrtf(r2), acc[k]);
    }
}

// AutoGrid's bin of the pair, in fp64 and in its order of operations: min(int(100 r), MAX_DIST - 1).
// ix, iy, iz: the point's indices relative to the centre point (icoord in AutoGrid).
// ad: the atom's x, y, z in fp64 (coordinate minus centre, as AutoGrid holds it).
__device__ __noinline__ int exact_bin(const double* __restrict__ ad, int ix, int iy, int iz, double hd)
{
    const double cx = __dmul_rn((double)ix, hd), cy = __dmul_rn((double)iy, hd), cz = __dmul_rn((double)iz, hd);
    const double dx = __dsub_rn(ad[0], cx), dy = __dsub_rn(ad[1], cy), dz = __dsub_rn(ad[2], cz);
    double r = __dsqrt_rn(__dadd_rn(__dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy)), __dmul_rn(dz, dz)));
    r = fmax(r, 1.0e-6);
    return (int)fmin(__dmul_rn(r, 100.0), (double)(MAX_DIST - 1));
}

// The NX points of one atom, distance-dependent dielectric: q * (332 / eps(bin(r))) / max(r, 0.5).
// CHECK: some point may lie within R_EXACT of the atom, so near-edge bins are redone in fp64.
template <bool CHECK>
__device__ __forceinline__ void ddd_points(float (&acc)[NX], const float (&off)[NX], const float4 at,
                                           float yz2, float dx0, const RowGeom& g, const float* s_reps,
                                           const double* __restrict__ ad, double hd, float guard)
{
#pragma unroll
    for (int k = 0; k < NX; ++k) {
        const float dx = dx0 - off[k];
        const float r2 = fmaxf(fmaf(dx, dx, yz2), 1.0e-12f);          // r >= APPROX_ZERO
        const float rinv = rsqrtf(r2);
        const float r = r2 * rinv;
        // floor(100 r) + 2^23, rounded toward zero: the bin index sits in the low mantissa bits
        const float t = __fmaf_rz(r, 100.0f, 8388608.0f);
        const int idx = __float_as_int(t) - 0x4B000000;             // floor(100 r)
        const float w = at.w * fminf(rinv, 2.0f);                   // q / max(r, 0.5)
        float reps = REPS(t, idx);
        if (CHECK && r2 < R_EXACT * R_EXACT) {                      // rare in bulk: close pairs
            const float frac = fmaf(r, 100.0f, 8388608.0f - t);     // 100 r - floor(100 r)
            if (fabsf(frac - 0.5f) > 0.5f - guard) {
                const int b = exact_bin(ad, (int)(g.ix0 + k * BLOCK_X - g.nex), (int)(g.iy - g.ney),
                                        (int)(g.iz - g.nez), hd);
                reps = REPS(__int_as_float(b + 0x4B000000), b);
            }
        }
        acc[k] = fmaf(w, reps, acc[k]);
    }
}

// One atom, distance-dependent dielectric. r2 = fma(dx, dx, yz2) >= yz2 under round-to-nearest, so
// when the row's y/z distance alone reaches R_EXACT no point needs the exact-bin test: that branch is
// uniform across the warp for most atoms and runs the unchecked loop (same results, bit for bit).
__device__ __forceinline__ void add_atom_ddd(float (&acc)[NX], const float (&off)[NX], const float4 at,
                                             const RowGeom& g, const float* s_reps,
                                             const double* __restrict__ ad, double hd, float guard)
{
    const float dy = at.y - g.y, dz = at.z - g.z;
    const float yz2 = fmaf(dy, dy, dz * dz);
    const float dx0 = at.x - g.x0;
    if (yz2 < R_EXACT * R_EXACT)
        ddd_points<true>(acc, off, at, yz2, dx0, g, s_reps, ad, hd, guard);
    else
        ddd_points<false>(acc, off, at, yz2, dx0, g, s_reps, ad, hd, guard);
}

#define CHUNK (BLOCK_X * BLOCK_Y)

// Loop over the tile's atoms from constant memory or staged through shared memory; ADD(at) adds one.
#if ATOM_SRC == 0
#define FOR_EACH_ATOM(ADD)                                                            \
    _Pragma("unroll 4")                                                               \
    for (int a = 0; a < n_atoms; ++a) { const float4 at = c_atoms[a]; const int ai = a; ADD; }
#else
#define FOR_EACH_ATOM(ADD)                                                            \
    __shared__ float4 s_atoms[CHUNK];                                                 \
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;                              \
    for (int base = 0; base < n_atoms; base += CHUNK) {                               \
        __syncthreads();                                                              \
        s_atoms[tid] = base + tid < n_atoms ? atoms[base + tid]                       \
                                            : make_float4(1.0e6f, 1.0e6f, 1.0e6f, 0.0f); \
        __syncthreads();                                                              \
        _Pragma("unroll 4")                                                           \
        for (int j = 0; j < CHUNK; ++j) {                                             \
            const float4 at = s_atoms[j]; const int ai = min(base + j, n_atoms - 1); ADD; \
        }                                                                             \
    }
#endif

// Constant dielectric: sum_i q_i / max(r, 0.5) over this launch's tile.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
coulomb_const(double* __restrict__ out, const float4* __restrict__ atoms, int n_atoms, int nx, int ny,
              int z0, int nex, int ney, int nez, float h)
{
    const RowGeom g = row_geometry(nex, ney, nez, z0, h);
    float off[NX], acc[NX];
#pragma unroll
    for (int k = 0; k < NX; ++k) { off[k] = (float)(k * BLOCK_X) * h; acc[k] = 0.0f; }
    FOR_EACH_ATOM((void)ai; add_atom_const(acc, off, at, g))
    add_row(out, acc, g, nx, ny, z0);
}

// Distance-dependent dielectric over this launch's tile.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
coulomb_ddd(double* __restrict__ out, const float4* __restrict__ atoms, const double* __restrict__ atoms_d,
            const float* __restrict__ reps_table, int n_atoms, int nx, int ny, int z0, int nex, int ney,
            int nez, float h, double hd, float guard)
{
#if DDD_MODE == 1
    __shared__ float s_reps[TABLE_N];
    for (int i = threadIdx.y * BLOCK_X + threadIdx.x; i < TABLE_N; i += BLOCK_X * BLOCK_Y)
        s_reps[i] = reps_table[i];
    __syncthreads();
#else
    const float* s_reps = reps_table;   // unused by the closed form
#endif
    const RowGeom g = row_geometry(nex, ney, nez, z0, h);
    float off[NX], acc[NX];
#pragma unroll
    for (int k = 0; k < NX; ++k) { off[k] = (float)(k * BLOCK_X) * h; acc[k] = 0.0f; }
    FOR_EACH_ATOM(add_atom_ddd(acc, off, at, g, s_reps, atoms_d + 4 * (size_t)ai, hd, guard))
    add_row(out, acc, g, nx, ny, z0);
}
