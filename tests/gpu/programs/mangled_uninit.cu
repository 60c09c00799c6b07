// A C++ (mangled-name) kernel that reads memory nobody wrote: every one of its 64 threads reads src[i].
// Its records name demo::scale<float>, which compute-sanitizer prints demangled unless run with --demangle no.
#include <cstdio>
#include <cuda_runtime.h>

namespace demo {
template <typename T>
__global__ void scale(const T* __restrict__ src, T* __restrict__ dst, int n, T factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] * factor;
}
}  // namespace demo

int main()
{
    const int n = 64;
    float *src = nullptr, *dst = nullptr;
    cudaMalloc(&src, n * sizeof(float));
    cudaMalloc(&dst, n * sizeof(float));
    demo::scale<float><<<1, n>>>(src, dst, n, 2.0f);
    cudaError_t err = cudaDeviceSynchronize();
    std::printf("scale: %s\n", cudaGetErrorString(err));
    cudaFree(src);
    cudaFree(dst);
    return err == cudaSuccess ? 0 : 1;
}
