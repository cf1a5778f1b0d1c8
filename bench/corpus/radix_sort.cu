// Block-wide key/value radix sort and scans built on CUB block primitives (CCCL).
#include <cub/cub.cuh>

#include <cstdint>

namespace {

// Sorts each tile of BLOCK_THREADS * ITEMS keys (with their values) inside one block, then writes
// the tile back in blocked order. The last tile is padded with the key type's maximum.
template <typename Key, typename Value, int BLOCK_THREADS, int ITEMS>
__device__ void sort_tile(const Key* keys_in, const Value* values_in, Key* keys_out, Value* values_out, int n) {
    using Sort = cub::BlockRadixSort<Key, BLOCK_THREADS, ITEMS, Value>;
    using LoadK = cub::BlockLoad<Key, BLOCK_THREADS, ITEMS, cub::BLOCK_LOAD_TRANSPOSE>;
    using LoadV = cub::BlockLoad<Value, BLOCK_THREADS, ITEMS, cub::BLOCK_LOAD_TRANSPOSE>;
    using StoreK = cub::BlockStore<Key, BLOCK_THREADS, ITEMS, cub::BLOCK_STORE_TRANSPOSE>;
    using StoreV = cub::BlockStore<Value, BLOCK_THREADS, ITEMS, cub::BLOCK_STORE_TRANSPOSE>;
    __shared__ union {
        typename Sort::TempStorage sort;
        typename LoadK::TempStorage load_k;
        typename LoadV::TempStorage load_v;
        typename StoreK::TempStorage store_k;
        typename StoreV::TempStorage store_v;
    } temp;

    constexpr int TILE = BLOCK_THREADS * ITEMS;
    const int offset = blockIdx.x * TILE;
    const int valid = min(TILE, n - offset);
    Key keys[ITEMS];
    Value values[ITEMS];
    LoadK(temp.load_k).Load(keys_in + offset, keys, valid, cuda::std::numeric_limits<Key>::max());
    __syncthreads();
    LoadV(temp.load_v).Load(values_in + offset, values, valid, Value{});
    __syncthreads();
    Sort(temp.sort).Sort(keys, values);
    __syncthreads();
    StoreK(temp.store_k).Store(keys_out + offset, keys, valid);
    __syncthreads();
    StoreV(temp.store_v).Store(values_out + offset, values, valid);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256) block_sort_u32_u32(const uint32_t* keys_in, const uint32_t* values_in,
                                                                     uint32_t* keys_out, uint32_t* values_out, int n) {
    sort_tile<uint32_t, uint32_t, 256, 8>(keys_in, values_in, keys_out, values_out, n);
}

extern "C" __global__ void __launch_bounds__(128) block_sort_u64_i32(const uint64_t* keys_in, const int32_t* values_in,
                                                                     uint64_t* keys_out, int32_t* values_out, int n) {
    sort_tile<uint64_t, int32_t, 128, 8>(keys_in, values_in, keys_out, values_out, n);
}

extern "C" __global__ void __launch_bounds__(256) block_sort_f32_u32(const float* keys_in, const uint32_t* values_in,
                                                                     float* keys_out, uint32_t* values_out, int n) {
    sort_tile<float, uint32_t, 256, 4>(keys_in, values_in, keys_out, values_out, n);
}

// Exclusive prefix sum per tile plus the tile totals (the first pass of a two-pass device scan).
extern "C" __global__ void __launch_bounds__(256) tile_exclusive_scan(const int32_t* in, int32_t* out, int32_t* tile_sums, int n) {
    constexpr int BLOCK = 256, ITEMS = 4;
    using Load = cub::BlockLoad<int32_t, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<int32_t, BLOCK, cub::BLOCK_SCAN_RAKING_MEMOIZE>;
    using Store = cub::BlockStore<int32_t, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Scan::TempStorage scan;
        typename Store::TempStorage store;
    } temp;
    const int offset = blockIdx.x * BLOCK * ITEMS;
    const int valid = min(BLOCK * ITEMS, n - offset);
    int32_t items[ITEMS];
    Load(temp.load).Load(in + offset, items, valid, 0);
    __syncthreads();
    int32_t total = 0;
    Scan(temp.scan).ExclusiveSum(items, items, total);
    __syncthreads();
    Store(temp.store).Store(out + offset, items, valid);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Stream compaction of one tile: keeps the values above a threshold, in order.
extern "C" __global__ void __launch_bounds__(128) tile_select_above(const float* in, float* out, int32_t* counts, float threshold, int n) {
    constexpr int BLOCK = 128, ITEMS = 8;
    using Scan = cub::BlockScan<int32_t, BLOCK, cub::BLOCK_SCAN_WARP_SCANS>;
    using Reduce = cub::BlockReduce<float, BLOCK>;
    __shared__ typename Scan::TempStorage scan_temp;
    __shared__ typename Reduce::TempStorage reduce_temp;
    const int offset = blockIdx.x * BLOCK * ITEMS;
    float v[ITEMS];
    int32_t flags[ITEMS];
    cub::LoadDirectStriped<BLOCK>(threadIdx.x, in + offset, v, n - offset, -cuda::std::numeric_limits<float>::infinity());
    for (int i = 0; i < ITEMS; ++i) flags[i] = v[i] > threshold;
    int32_t kept = 0;
    Scan(scan_temp).ExclusiveSum(flags, flags, kept);
    for (int i = 0; i < ITEMS; ++i)
        if (v[i] > threshold) out[offset + flags[i]] = v[i];
    float local_max = v[0];
    for (int i = 1; i < ITEMS; ++i) local_max = fmaxf(local_max, v[i]);
    const float block_max = Reduce(reduce_temp).Reduce(local_max, cuda::maximum<>{});
    if (threadIdx.x == 0) {
        counts[2 * blockIdx.x] = kept;
        counts[2 * blockIdx.x + 1] = __float_as_int(block_max);
    }
}
