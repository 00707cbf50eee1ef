// Transition matrices on the device from eigensystems: P[m, c, i, j] = max(0, sum_k V[i,k]
// exp(lambda_k t rate_c) Vinv[k,j]), t = the edge length, in float64 (stored as REAL).  One thread
// per matrix entry (grid-stride over int64 indices); each matrix names its eigensystem and rate set,
// so one launch updates the matrices of many chains with different models.
#include "likelihood.cuh"

// eigens[e] = (values[S], V[S*S], Vinv[S*S]) in float64; rates[e] = category rates[CATEGORIES].
extern "C" __global__ void transition_matrices(i64 n, const i64* __restrict__ mat_index,
                                               const double* __restrict__ lengths, const i64* __restrict__ eigen_of,
                                               const double* __restrict__ eigens, const double* __restrict__ rates,
                                               REAL* __restrict__ matrices) {
    const i64 per = (i64)CATEGORIES * STATES * STATES;
    const i64 total = n * per;
    const size_t eig_width = (size_t)STATES + 2 * (size_t)STATES * STATES;
    for (i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (i64)gridDim.x * blockDim.x) {
        const i64 k = g / per;
        const i64 r = g - k * per;
        const int c = (int)(r / (STATES * STATES));
        const int ij = (int)(r - (i64)c * STATES * STATES);
        const int i = ij / STATES, j = ij - (ij / STATES) * STATES;
        const i64 e = eigen_of[k];
        const double* values = eigens + (size_t)e * eig_width;
        const double* vec = values + STATES;
        const double* inv = vec + STATES * STATES;
        const double t = lengths[k] * rates[(size_t)e * CATEGORIES + c];
        double acc = 0.0;
        for (int l = 0; l < STATES; ++l) acc += vec[i * STATES + l] * exp(t * values[l]) * inv[l * STATES + j];
        matrices[(size_t)mat_index[k] * per + r] = (REAL)fmax(acc, 0.0);
    }
}
