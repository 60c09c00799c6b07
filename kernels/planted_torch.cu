// Planted defects in memory torch's caching allocator hands out (probes/planted_torch.py).

// memcheck: the guard is `<=`, so thread n writes one float past the end of an n-float tensor; with
// n * 4 not a multiple of 512 that float lies in the block's rounding, inside the same cached segment.
extern "C" __global__ void overrun_write(float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = (float)i;
    }
}

// initcheck: copies `in` to `out`; `in` is a block freed and handed out again that nobody wrote since.
extern "C" __global__ void copy_read(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i];
    }
}
