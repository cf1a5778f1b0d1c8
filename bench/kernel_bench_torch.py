"""PyTorch's read and write on the same shapes as bench/kernel_bench.cpp (same GPU, same run):
torch.nn.functional.embedding_bag(mode='sum', per_sample_weights=w) for the read, and
V.index_add_(0, idx, lr * w * delta rows) for the write. Same output format:
op  dtype  D  table_MiB  bytes  ms  GB/s."""
import torch

B, K, REPS = 16384, 32, 15


def median_ms(fn):
    fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPS):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


torch.manual_seed(1)
for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    es = 4 if dtype == torch.float32 else 2
    for mib in (32, 1024, 8192):
        for D in (256, 1024, 4096):
            rows = (mib << 20) // (D * es)
            V = torch.ones(rows, D, dtype=dtype, device="cuda")
            idx = torch.randint(0, rows, (B, K), device="cuda", dtype=torch.int64)
            w = torch.full((B, K), 0.5, dtype=dtype, device="cuda")
            delta = torch.full((B, D), 1e-3, dtype=dtype, device="cuda")
            moved = B * K * D * es
            read = lambda: torch.nn.functional.embedding_bag(idx, V, mode="sum", per_sample_weights=w)
            ms = median_ms(read)
            nbytes = moved + B * D * es
            print(f"read\t{name}\t{D}\t{mib}\t{nbytes}\t{ms:.4f}\t{nbytes / ms / 1e6:.1f}", flush=True)
            flat = idx.reshape(-1)

            def write():
                V.index_add_(0, flat, (1e-3 * w.unsqueeze(-1) * delta.unsqueeze(1)).reshape(-1, D))

            ms = median_ms(write)
            nbytes = 2 * moved + B * D * es
            print(f"write\t{name}\t{D}\t{mib}\t{nbytes}\t{ms:.4f}\t{nbytes / ms / 1e6:.1f}", flush=True)
            del V, idx, w, delta
            torch.cuda.empty_cache()
