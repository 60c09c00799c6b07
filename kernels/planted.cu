// Positive controls with one planted defect per sanitizer tool (memcheck, racecheck, synccheck).

// memcheck: the guard is `<=`, so thread n writes one float past the end of an n-float buffer.
extern "C" __global__ void oob_write(float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = (float)i;
    }
}

// racecheck: a shared-memory tree reduction with no barrier between its steps.
extern "C" __global__ void racy_reduce(const float* in, float* out)
{
    __shared__ float partial[256];
    int t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) {
            partial[t] += partial[t + stride];  // reads a slot another thread writes, unordered
        }
    }
    if (t == 0) {
        out[blockIdx.x] = partial[0];
    }
}

// synccheck: every lane of the warp calls __syncwarp, but the mask leaves out lane 31.
extern "C" __global__ void bad_syncwarp(float* out)
{
    int lane = threadIdx.x % 32;
    out[threadIdx.x] = (float)lane;
    __syncwarp(0x7fffffffu);
    out[threadIdx.x] += 1.0f;
}

// The same reduction with its barriers: clean under every tool.
extern "C" __global__ void sound_reduce(const float* in, float* out)
{
    __shared__ float partial[256];
    int t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) {
            partial[t] += partial[t + stride];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = partial[0];
    }
}
