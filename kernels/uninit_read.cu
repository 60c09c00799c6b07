// The initcheck positive control: reads all n elements of a buffer whose host wrote only the first k.
extern "C" __global__ void double_all(const float* __restrict__ src, float* __restrict__ dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = 2.0f * src[i];  // src[k..n) was never written: initcheck reports one read per such i
    }
}
