/* A CUDA allocator for torch's CUDAPluggableAllocator that fills every fresh block with one byte: the
 * confirmer's poison. It calls the driver API through dlopen (libcuda.so.1 is always there on a GPU machine),
 * so it builds with a plain C compiler and no CUDA headers, and uses the same primary context as torch. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
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

/* The allocation log of a confirming test run: every block's address, size and stream in the order torch asked for
 * them; and a quarantine: blocks freed are kept, not given back, up to a byte budget, so that no address names two
 * blocks. Past the budget blocks are freed again, and the log says from which block on an address may repeat. */
struct log_entry {
    unsigned long long ptr, size, stream;
};
static struct log_entry *log_entries;
static unsigned long long log_count, log_capacity, quarantine_budget, quarantined;
static unsigned long long reused_from = ~0ULL;
static int logging;

void cuprobe_log_start(unsigned long long quarantine_bytes)
{
    logging = 1;
    quarantine_budget = quarantine_bytes;
}
unsigned long long cuprobe_log_count(void) { return log_count; }
unsigned long long cuprobe_log_reused_from(void) { return reused_from; }
int cuprobe_log_entry(unsigned long long i, unsigned long long *ptr, unsigned long long *size,
                      unsigned long long *stream)
{
    if (i >= log_count) {
        return -1;
    }
    *ptr = log_entries[i].ptr;
    *size = log_entries[i].size;
    *stream = log_entries[i].stream;
    return 0;
}

static void log_block(CUdeviceptr ptr, size_t bytes, void *stream)
{
    if (log_count == log_capacity) {
        unsigned long long grown = log_capacity ? 2 * log_capacity : 4096;
        struct log_entry *more = realloc(log_entries, grown * sizeof *more);
        if (more == NULL) {
            logging = 0; /* the log stops; what it holds stays true */
            return;
        }
        log_entries = more;
        log_capacity = grown;
    }
    log_entries[log_count].ptr = ptr;
    log_entries[log_count].size = bytes;
    log_entries[log_count].stream = (unsigned long long)stream;
    ++log_count;
}

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
    if (logging) {
        log_block(ptr, bytes, stream);
    }
    return (void *)ptr;
}

void cuprobe_poison_free(void *ptr, ssize_t size, int device, void *stream)
{
    (void)device;
    (void)stream;
    if (ptr == NULL || !load()) {
        return;
    }
    if (logging) {
        unsigned long long bytes = size > 0 ? (unsigned long long)size : 1;
        if (quarantined + bytes <= quarantine_budget) {
            quarantined += bytes; /* kept: its address is never handed out again */
            return;
        }
        if (reused_from == ~0ULL) {
            reused_from = log_count;
        }
    }
    ctx_sync(); /* queued work may still read the block */
    mem_free((CUdeviceptr)ptr);
}
