/* A CUDA allocator for torch's CUDAPluggableAllocator that fills every fresh block with one byte: the
 * confirmer's poison. It calls the driver API through dlopen (libcuda.so.1 is always there on a GPU machine),
 * so it builds with a plain C compiler and no CUDA headers, and uses the same primary context as torch. */
#include <dlfcn.h>
#include <stddef.h>
#include <sys/types.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;

static int poison_byte = -1; /* -1: leave fresh blocks as the driver gives them */
static int loaded;           /* 0: not tried, 1: ready, -1: libcuda or a symbol missing */
static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);
static CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*stream_sync)(CUstream);
static CUresult (*ctx_sync)(void);
static CUresult (*ctx_get)(CUcontext *);
static CUresult (*ctx_set)(CUcontext);
static CUresult (*device_get)(CUdevice *, int);
static CUresult (*primary_retain)(CUcontext *, CUdevice);
static unsigned long long blocks;

void cuprobe_set_poison(int byte) { poison_byte = byte; }
int cuprobe_poison_byte(void) { return poison_byte; }
unsigned long long cuprobe_poisoned_blocks(void) { return blocks; }

static int load(void)
{
    if (loaded) {
        return loaded > 0;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        loaded = -1;
        return 0;
    }
    *(void **)&mem_alloc = dlsym(lib, "cuMemAlloc_v2");
    *(void **)&mem_free = dlsym(lib, "cuMemFree_v2");
    *(void **)&memset_d8 = dlsym(lib, "cuMemsetD8Async");
    *(void **)&stream_sync = dlsym(lib, "cuStreamSynchronize");
    *(void **)&ctx_sync = dlsym(lib, "cuCtxSynchronize");
    *(void **)&ctx_get = dlsym(lib, "cuCtxGetCurrent");
    *(void **)&ctx_set = dlsym(lib, "cuCtxSetCurrent");
    *(void **)&device_get = dlsym(lib, "cuDeviceGet");
    *(void **)&primary_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    loaded = (mem_alloc && mem_free && memset_d8 && stream_sync && ctx_sync && ctx_get && ctx_set && device_get
              && primary_retain) ? 1 : -1;
    return loaded > 0;
}

/* torch may call the allocator before the runtime made a context current on this thread: use the primary one. */
static int make_current(int device)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    if (ctx_get(&ctx) == 0 && ctx != NULL) {
        return 1;
    }
    if (device_get(&dev, device) != 0 || primary_retain(&ctx, dev) != 0) {
        return 0;
    }
    return ctx_set(ctx) == 0;
}

void *cuprobe_poison_malloc(ssize_t size, int device, void *stream)
{
    CUdeviceptr ptr = 0;
    size_t bytes = size > 0 ? (size_t)size : 1;
    if (!load() || !make_current(device) || mem_alloc(&ptr, bytes) != 0) {
        return NULL;
    }
    if (poison_byte >= 0) {
        /* Filled on the stream torch will use the block on, and finished before torch sees the block. */
        if (memset_d8(ptr, (unsigned char)poison_byte, bytes, (CUstream)stream) != 0
            || stream_sync((CUstream)stream) != 0) {
            mem_free(ptr);
            return NULL;
        }
        ++blocks;
    }
    return (void *)ptr;
}

void cuprobe_poison_free(void *ptr, ssize_t size, int device, void *stream)
{
    (void)size;
    (void)device;
    (void)stream;
    if (ptr == NULL || !load()) {
        return;
    }
    ctx_sync(); /* queued work may still read the block */
    mem_free((CUdeviceptr)ptr);
}
