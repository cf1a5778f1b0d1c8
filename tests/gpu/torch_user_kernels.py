#!/usr/bin/env python3
"""GPU test: a user's kernels (tests/data/launch.cu, imported by the build: BUILD/tests/launch.sdma)
through the Python bindings on PyTorch tensors and a PyTorch stream, passed straight in (the
tensors by __cuda_array_interface__, the stream object itself): a 2-D tiled matmul in a
(grid, block) tuple checked against torch.matmul, a cooperative grid.sync() kernel, a
__constant__ table written through sdm, a template fetched by its C++ name with ints and floats
for its derived (b32/b64) parameters.

    SDM_LIBRARY=build-gpu/capi/libsdm.so.1 python3 tests/gpu/torch_user_kernels.py build-gpu

Exits 0 when every check passes, 1 naming each failure, 77 without PyTorch or a CUDA device.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("skipped: PyTorch sees no CUDA device")
        return 77
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import sdm

    build = Path(sys.argv[1] if len(sys.argv) > 1 else "build-gpu")
    failures = 0

    def check(ok: bool, what: str) -> None:
        nonlocal failures
        print(f"{'ok' if ok else 'FAIL'}: {what}")
        failures += 0 if ok else 1

    torch.cuda.init()
    device = torch.device("cuda", 0)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream), sdm.Runtime() as rt:
        rt.mount_file(build / "tests" / "launch.sdma")
        # 1. matmul_tiled(a, b, c, n) on a 2-D grid of 16x16 tiles.
        n = 333
        a = torch.randn(n, n, device=device)
        b = torch.randn(n, n, device=device)
        c = torch.full((n, n), float("nan"), device=device)
        mm = rt.kernel(0, "matmul_tiled", signature="ptr,ptr,ptr,i32")
        tiles = (n + 15) // 16
        mm.launch(((tiles, tiles), (16, 16)), [a, b, c, n], stream=stream)
        stream.synchronize()
        err = (c - a @ b).abs().max().item()
        check(err < 1e-2, f"matmul_tiled {n}x{n} in a (grid, block) tuple on torch tensors: max abs error {err:.2e}")
        # 2. grid_sum(partial, total): cooperative, as many blocks as the refusal says fit.
        gs = rt.kernel(0, "grid_sum")
        partial = torch.zeros(1 << 20, dtype=torch.int32, device=device)
        total = torch.zeros(1, dtype=torch.int32, device=device)
        most = 0
        try:
            gs.launch(sdm.Plan(grid=1 << 20, block=256, cooperative=True), [partial, total], stream=stream)
            check(False, "a cooperative grid of 2^20 blocks is refused")
        except sdm.SdmError as e:
            message = str(e)
            check("cannot all be resident" in message, "a cooperative grid of 2^20 blocks is refused: " + message[:160])
            most = int(message.split("launch at most ")[1].split()[0]) if "launch at most " in message else 0
        if most:
            gs.launch(sdm.Plan(grid=most, block=256, cooperative=True), [partial, total], stream=stream)
            stream.synchronize()
            want = most * (most - 1) // 2
            check(total.item() == want, f"grid_sum cooperative over {most} blocks: {total.item()} (want {want})")
        # 3. scale_by_table(in, out, n) reading a __constant__ table sdm wrote, on the torch stream.
        sbt = rt.kernel(0, "scale_by_table", signature="ptr,ptr,i32")
        coefficients = torch.arange(16, dtype=torch.float32) * 0.5 + 1.0
        sbt.global_write("coefficients", coefficients.numpy().tobytes(), stream=stream)
        m = 1 << 20
        x = torch.randn(m, device=device)
        y = torch.empty_like(x)
        sbt.launch(sbt.plan_for_elements(m), [x, y, m], stream=stream)
        stream.synchronize()
        want = x * coefficients.to(device).repeat(m // 16)
        check(torch.equal(y, want), "scale_by_table read the __constant__ table sdm wrote")
        # 4. fill<float, 256>(p, value): by its name expression, a Python float for the b32 value.
        fill = rt.kernel(0, "sdm_test::fill<float, 256>")
        p = torch.zeros(256, device=device)
        fill.launch(((2,), (128,)), [p, 2.5], stream=stream)
        stream.synchronize()
        check(bool((p == 2.5).all()), "fill<float, 256> by its C++ name, a float for its derived b32 parameter")
        names = [e.demangled for e in rt.kernels()]
        check("void sdm_test::reduce<int>(int const*, int*, int)" in names, "the listing has the demangled names")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
