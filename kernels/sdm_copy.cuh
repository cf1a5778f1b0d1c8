// sdm_copy.cuh: the copy layer of the SDM kernels, chosen by the compile target.
//
// Modern side (the device passes for sm_90, sm_100 and sm_103, the "modern" device class): rows
// are staged into shared memory by bulk asynchronous copies (cp.async.bulk, the TMA's
// one-dimensional form) that complete on an mbarrier, and kernels chained on one stream overlap
// through programmatic dependent launch (griddepcontrol; the plan's SDM_PLAN_PDL).
// Portable side (every other device pass, SDM_PORTABLE_ARCH): the same staging through cp.async
// (16 bytes per thread, commit and wait groups); PDL calls are no-ops (the plans of the other
// classes never ask for PDL: the runtime refuses it outside the modern class).
//
// A Stage is one shared-memory buffer and its completion; gather() fills it with up to 32 rows of
// `bytes` each (16-byte aligned, a multiple of 16), row j from row(j) (nullptr: skipped, its bytes
// left as they were), and wait() returns when the fill has landed. Every thread of the block calls
// both. On the modern side warp 0 issues one bulk copy per row, all completing on the stage's
// mbarrier; on the portable side every thread takes 16-byte pieces. Before refilling a stage the
// block must be done reading it (__syncthreads). wait<N>() lets the N fills issued after this one
// stay in flight (the portable side's cp.async groups; the modern side waits on this stage only).
#pragma once
#include <stdint.h>

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || __CUDA_ARCH__ == 1030) && !defined(SDM_FORCE_PORTABLE)
#define SDM_MODERN_ARCH 1
#else
#define SDM_PORTABLE_ARCH 1
#endif

namespace sdm_copy {

__device__ inline uint32_t smem_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

#ifdef SDM_MODERN_ARCH

// Waits for the grids this one depends on (PDL): their writes are visible after it.
__device__ inline void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Lets the next grid on the stream start its blocks (they wait in pdl_wait for this one to end).
__device__ inline void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" :::); }

struct Stage {
    uint64_t* bar;  // an mbarrier in shared memory
    uint32_t phase = 0;

    // Thread 0 initialises the barrier; the block must __syncthreads before the first gather.
    __device__ explicit Stage(uint64_t* b) : bar(b) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(bar)));
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        }
    }
    template <typename RowFn>
    __device__ void gather(void* dst, uint32_t bytes, int count, RowFn row) {
        if (threadIdx.x >= 32) return;
        const int lane = static_cast<int>(threadIdx.x);
        const void* src = lane < count ? row(lane) : nullptr;
        const unsigned present = __ballot_sync(0xffffffffu, src != nullptr);
        if (lane == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(__popc(present) * bytes)
                         : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the block's earlier reads of dst come first
        __syncwarp();
        if (src != nullptr)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                             smem_address(static_cast<char*>(dst) + lane * bytes)),
                         "l"(src), "r"(bytes), "r"(smem_address(bar))
                         : "memory");
    }
    template <int Pending = 0>
    __device__ void wait() {
        uint32_t done = 0;
        while (!done) {
            asm volatile(
                "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                : "=r"(done)
                : "r"(smem_address(bar)), "r"(phase)
                : "memory");
        }
        phase ^= 1;
    }
};

#else  // SDM_PORTABLE_ARCH

__device__ inline void pdl_wait() {}
__device__ inline void pdl_launch_dependents() {}

struct Stage {
    __device__ explicit Stage(uint64_t*) {}
    template <typename RowFn>
    __device__ void gather(void* dst, uint32_t bytes, int count, RowFn row) {
        const uint32_t pieces = bytes / 16;
        for (uint32_t i = threadIdx.x; i < pieces * static_cast<uint32_t>(count); i += blockDim.x) {
            const int j = static_cast<int>(i / pieces);
            const char* src = static_cast<const char*>(row(j));
            if (src == nullptr) continue;
            char* to = static_cast<char*>(dst) + j * bytes + (i % pieces) * 16;
            src += (i % pieces) * 16;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_address(to)), "l"(src) : "memory");
#else
            *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(src);
#endif
        }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.commit_group;" ::: "memory");
#endif
    }
    // Waits for this thread's copies (all but the last Pending fills), then for every thread's.
    template <int Pending = 0>
    __device__ void wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
#endif
        __syncthreads();
    }
};

#endif

}  // namespace sdm_copy
