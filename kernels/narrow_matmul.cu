// Tiled y = x @ w.T (x: [m, k], w: [n_pad, k], y: [m, n]); w is padded to n_pad = ceil(n / TILE) * TILE
// rows of which the host wrote only the first n. TILE comes from -DTILE=...; blocks are TILE x TILE.
#ifndef TILE
#define TILE 32
#endif

template <typename T, bool GUARDED>
__device__ void tiled_matmul(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                             int m, int k, int n)
{
    __shared__ T xs[TILE][TILE + 1];
    __shared__ T ws[TILE][TILE + 1];
    const int ty = threadIdx.y;
    const int tx = threadIdx.x;
    const int row = blockIdx.y * TILE + ty;   // output row i, < m when in range
    const int wrow = blockIdx.x * TILE + ty;  // weight row this thread stages, < n_pad always
    const int col = blockIdx.x * TILE + tx;   // output column j, < n when in range
    T acc = 0;
    for (int k0 = 0; k0 < k; k0 += TILE) {
        const int kc = k0 + tx;
        xs[ty][tx] = (row < m && kc < k) ? x[row * k + kc] : T(0);
        // Unguarded: rows n..n_pad of w were never written, and this load reads them (one read per thread).
        ws[ty][tx] = (kc < k && (!GUARDED || wrow < n)) ? w[wrow * k + kc] : T(0);
        __syncthreads();
        for (int t = 0; t < TILE; ++t) {
            acc += xs[ty][t] * ws[tx][t];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        y[row * n + col] = acc;  // columns >= n are masked out, so the unwritten rows never reach y
    }
}

extern "C" __global__ void narrow_matmul_unguarded_f32(const float* x, const float* w, float* y, int m, int k, int n)
{
    tiled_matmul<float, false>(x, w, y, m, k, n);
}

extern "C" __global__ void narrow_matmul_guarded_f32(const float* x, const float* w, float* y, int m, int k, int n)
{
    tiled_matmul<float, true>(x, w, y, m, k, n);
}

extern "C" __global__ void narrow_matmul_unguarded_f64(const double* x, const double* w, double* y, int m, int k, int n)
{
    tiled_matmul<double, false>(x, w, y, m, k, n);
}

extern "C" __global__ void narrow_matmul_guarded_f64(const double* x, const double* w, double* y, int m, int k, int n)
{
    tiled_matmul<double, true>(x, w, y, m, k, n);
}
