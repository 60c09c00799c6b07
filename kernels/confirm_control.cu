// The confirmer's own control: a writer that the run excludes with a kernel filter (initcheck cannot see its
// writes) and two readers that the run checks. Names: the readers start with cuprobe_control_, the writer not.
extern "C" __global__ void cuprobe_hidden_write(float* __restrict__ buf, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        buf[i] = 1.0f + 0.5f * i;
    }
}

// dst = src: the result depends on every element read.
extern "C" __global__ void cuprobe_control_copy(const float* __restrict__ src, float* __restrict__ dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = src[i];
    }
}

// Reads every element (a volatile load the compiler cannot drop), keeps only the first k: the rest is masked out.
extern "C" __global__ void cuprobe_control_masked(const float* src, float* __restrict__ dst, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = ((const volatile float*)src)[i];
        dst[i] = i < k ? v : -1.0f;
    }
}
