// Registers torch's CUDA caching allocator with compute-sanitizer through the NVTX memory API.
//
// Attached as a trace tracker (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker), it turns
// each allocator event into NVTX calls: a segment (cudaMalloc) becomes a sub-allocator heap, a live
// block a region of its requested size. The rules are those of probes/allocator_events.py (Registrar),
// which CI tests on a recorded trace; keep the two in step. With `compute-sanitizer --nvtx yes`,
// memcheck then reports accesses to the parts of a segment that no live tensor owns.
// Built by kernels/extension.py with torch.utils.cpp_extension.load; called through ctypes (extern "C").

#include <c10/cuda/CUDACachingAllocator.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

namespace {

using c10::cuda::CUDACachingAllocator::TraceEntry;

// Counters read back by Python (cuprobe_nvtx_counts), in this order.
enum Counter {
  EVENTS,
  HEAPS_REGISTERED,
  HEAPS_UNREGISTERED,
  REGIONS_REGISTERED,
  REGIONS_UNREGISTERED,
  SKIPPED_UNKNOWN_MEMORY,  // events about memory allocated before the tracker was attached
  SKIPPED_OTHER,  // overlapping or empty segments, zero-byte or duplicate blocks
  SKIPPED_EXPANDABLE,  // segment_map / segment_unmap: expandable segments are not registered
  N_COUNTERS
};

struct Registrar {
  std::mutex mutex;  // the tracker runs under one allocator lock per device: guard our own state
  nvtxDomainHandle_t domain = nullptr;
  std::map<uintptr_t, size_t> heaps;  // segment start -> size
  std::map<uintptr_t, nvtxMemHeapHandle_t> handles;
  std::map<uintptr_t, size_t> regions;  // block start -> requested size
  uint64_t counts[N_COUNTERS] = {};
  FILE* log = nullptr;

  // The start of the registered heap holding addr, or 0.
  uintptr_t heap_of(uintptr_t addr) const {
    auto it = heaps.upper_bound(addr);
    if (it == heaps.begin()) return 0;
    --it;
    return addr < it->first + it->second ? it->first : 0;
  }

  void heap_register(uintptr_t addr, size_t size) {
    nvtxMemVirtualRangeDesc_t range = {};
    range.ptr = reinterpret_cast<void const*>(addr);
    range.size = size;
    nvtxMemHeapDesc_t desc = {};
    desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    desc.structSize = sizeof(desc);
    desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    desc.typeSpecificDescSize = sizeof(range);
    desc.typeSpecificDesc = &range;
    handles[addr] = nvtxMemHeapRegister(domain, &desc);
    heaps[addr] = size;
    counts[HEAPS_REGISTERED]++;
    if (log) std::fprintf(log, "heap_register %#llx %zu\n", (unsigned long long)addr, size);
  }

  void heap_unregister(uintptr_t addr) {
    size_t size = heaps[addr];
    nvtxMemHeapUnregister(domain, handles[addr]);
    for (auto it = regions.lower_bound(addr); it != regions.end() && it->first < addr + size;) {
      it = regions.erase(it);  // unregistering the heap dropped its regions with it
    }
    heaps.erase(addr);
    handles.erase(addr);
    counts[HEAPS_UNREGISTERED]++;
    if (log) std::fprintf(log, "heap_unregister %#llx\n", (unsigned long long)addr);
  }

  void region_register(uintptr_t heap, uintptr_t addr, size_t size) {
    nvtxMemVirtualRangeDesc_t range = {};
    range.ptr = reinterpret_cast<void const*>(addr);
    range.size = size;
    nvtxMemRegionsRegisterBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = handles[heap];
    batch.regionCount = 1;
    batch.regionDescElementSize = sizeof(range);
    batch.regionDescElements = &range;
    nvtxMemRegionsRegister(domain, &batch);
    regions[addr] = size;
    counts[REGIONS_REGISTERED]++;
    if (log) {
      std::fprintf(log, "region_register %#llx %zu heap=%#llx\n", (unsigned long long)addr, size,
                   (unsigned long long)heap);
    }
  }

  void region_unregister(uintptr_t addr) {
    nvtxMemRegionRef_t ref;
    ref.pointer = reinterpret_cast<void const*>(addr);
    nvtxMemRegionsUnregisterBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    batch.refCount = 1;
    batch.refElementSize = sizeof(ref);
    batch.refElements = &ref;
    nvtxMemRegionsUnregister(domain, &batch);
    regions.erase(addr);
    counts[REGIONS_UNREGISTERED]++;
    if (log) std::fprintf(log, "region_unregister %#llx\n", (unsigned long long)addr);
  }

  // The rules of probes/allocator_events.py Registrar.apply.
  void apply(TraceEntry::Action action, uintptr_t addr, size_t size) {
    counts[EVENTS]++;
    switch (action) {
      case TraceEntry::SEGMENT_ALLOC:
        if (size == 0 || heap_of(addr) != 0) {
          counts[SKIPPED_OTHER]++;
        } else {
          heap_register(addr, size);
        }
        break;
      case TraceEntry::SEGMENT_FREE:
        if (heaps.count(addr) == 0) {
          counts[SKIPPED_UNKNOWN_MEMORY]++;
        } else {
          heap_unregister(addr);
        }
        break;
      case TraceEntry::ALLOC: {
        uintptr_t heap = heap_of(addr);
        if (heap == 0) {
          counts[SKIPPED_UNKNOWN_MEMORY]++;
        } else if (size == 0 || regions.count(addr) != 0) {
          counts[SKIPPED_OTHER]++;
        } else {
          region_register(heap, addr, size);
        }
        break;
      }
      case TraceEntry::FREE_COMPLETED:
        if (regions.count(addr) == 0) {
          counts[SKIPPED_UNKNOWN_MEMORY]++;
        } else {
          region_unregister(addr);
        }
        break;
      case TraceEntry::SEGMENT_MAP:
      case TraceEntry::SEGMENT_UNMAP:
        counts[SKIPPED_EXPANDABLE]++;
        break;
      default:  // free_requested (another stream may still use the block), snapshot, oom
        break;
    }
    if (log) std::fflush(log);
  }
};

Registrar& registrar() {
  static Registrar* instance = new Registrar();  // never destroyed: the allocator may call it at exit
  return *instance;
}

}  // namespace

extern "C" {

// Attach the tracker to torch's caching allocator (CUDA must be initialised: torch.cuda.init()).
// log_path: where to write every NVTX call, one a line (probes/allocator_events.py NvtxCall.line), or "".
int cuprobe_nvtx_attach(const char* log_path) {
  Registrar& r = registrar();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.domain != nullptr) return 1;  // already attached in this process
    r.domain = nvtxDomainCreateA("cuprobe torch caching allocator");
    if (log_path != nullptr && log_path[0] != '\0') r.log = std::fopen(log_path, "w");
  }
  c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker([](const TraceEntry& te) {
    Registrar& reg = registrar();
    std::lock_guard<std::mutex> lock(reg.mutex);
    reg.apply(te.action_, static_cast<uintptr_t>(te.addr_), te.size_);
  });
  return 0;
}

// Register memory the allocator already held when the tracker was attached (from a memory snapshot).
void cuprobe_nvtx_seed(int action, uint64_t addr, uint64_t size) {
  Registrar& reg = registrar();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.apply(action == 0 ? TraceEntry::SEGMENT_ALLOC : TraceEntry::ALLOC, static_cast<uintptr_t>(addr),
            static_cast<size_t>(size));
}

// Copy the counters (enum Counter order) into out[0..n).
void cuprobe_nvtx_counts(uint64_t* out, int n) {
  Registrar& reg = registrar();
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (int i = 0; i < n && i < N_COUNTERS; ++i) out[i] = reg.counts[i];
}

}  // extern "C"
