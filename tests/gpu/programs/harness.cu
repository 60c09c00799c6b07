// A plain CUDA host program around kernels/*.cu, used only to capture sanitizer output on the GPU box.
// Build from the project root: nvcc -lineinfo -I. -o harness tests/gpu/programs/harness.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <vector>
#include <cuda_runtime.h>
#include "kernels/uninit_read.cu"
#include "kernels/planted.cu"

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); } } while (0)

static int uninit(int n, int k)
{
    float *src, *dst;
    CHECK(cudaMalloc(&src, n * sizeof(float)));
    CHECK(cudaMalloc(&dst, n * sizeof(float)));
    std::vector<float> host(n, 1.0f);
    CHECK(cudaMemcpy(src, host.data(), k * sizeof(float), cudaMemcpyHostToDevice));
    double_all<<<(n + 255) / 256, 256>>>(src, dst, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(host.data(), dst, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
    printf("uninit n=%d k=%d first=%f\n", n, k, host[0]);
    return 0;
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "ok";
    if (!strcmp(mode, "uninit")) {
        return uninit(argc > 2 ? atoi(argv[2]) : 1024, argc > 3 ? atoi(argv[3]) : 1000);
    }
    if (!strcmp(mode, "ok")) {
        return uninit(1024, 1024);
    }
    if (!strcmp(mode, "oob")) {
        float* out;
        CHECK(cudaMalloc(&out, 1000 * sizeof(float)));
        oob_write<<<4, 256>>>(out, 1000);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(out));
        return 0;
    }
    if (!strcmp(mode, "race") || !strcmp(mode, "sound")) {
        float *in, *out;
        CHECK(cudaMalloc(&in, 1024 * sizeof(float)));
        CHECK(cudaMalloc(&out, 4 * sizeof(float)));
        CHECK(cudaMemset(in, 0, 1024 * sizeof(float)));
        if (!strcmp(mode, "race")) racy_reduce<<<4, 256>>>(in, out);
        else sound_reduce<<<4, 256>>>(in, out);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(in));
        CHECK(cudaFree(out));
        return 0;
    }
    if (!strcmp(mode, "syncwarp")) {
        float* out;
        CHECK(cudaMalloc(&out, 32 * sizeof(float)));
        bad_syncwarp<<<1, 32>>>(out);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(out));
        return 0;
    }
    if (!strcmp(mode, "leak_api")) {
        float* leaked;
        CHECK(cudaMalloc(&leaked, 4096));                         // never freed: a leak
        CHECK(cudaFree((void*)0x1234));                           // invalid device pointer: an API error
        float host[4];
        CHECK(cudaMemcpy(host, (void*)0x1000, sizeof(host), cudaMemcpyDeviceToHost));  // another
        return 0;
    }
    if (!strcmp(mode, "oob_then_more")) {
        // context death: the first precise error kills the context, later calls fail sticky
        float* out;
        CHECK(cudaMalloc(&out, 1000 * sizeof(float)));
        oob_write<<<4, 256>>>(out, 1000);
        CHECK(cudaDeviceSynchronize());
        oob_write<<<4, 256>>>(out, 1000);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(out));
        return 0;
    }
    if (!strcmp(mode, "kill") || !strcmp(mode, "segv") || !strcmp(mode, "abort")) {
        float* out;
        CHECK(cudaMalloc(&out, 16));
        CHECK(cudaDeviceSynchronize());
        fflush(stdout);
        if (!strcmp(mode, "kill")) raise(SIGKILL);
        if (!strcmp(mode, "abort")) abort();
        volatile int* p = nullptr;
        *p = 1;
        return 0;
    }
    if (!strcmp(mode, "exit3")) {
        float* out;
        CHECK(cudaMalloc(&out, 16));
        CHECK(cudaFree(out));
        return 3;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
