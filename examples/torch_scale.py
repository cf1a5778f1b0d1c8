#!/usr/bin/env python3
"""An sdm kernel on PyTorch tensors, through the Python bindings: `scale` of the test archive
(tests/golden/kernels.sdma; y[i] *= factor for i < n, tests/data/kernels.cu) with the plan sdm
selects, launched on torch's current stream, then checked against torch.

    SDM_LIBRARY=build/capi/libsdm.so python3 examples/torch_scale.py   # or with the sdm package installed

Device pointers and the stream cross as integers (tensor.data_ptr(), Stream.cuda_stream). sdm and
torch share the device's primary CUDA context: sdm uses it unless told otherwise, as torch does.
Prints "torch_scale: ok (N elements, max abs error E)" and exits 0; exits 1 on a mismatch or a
failure, naming it; exits 77, as the GPU tests do, without PyTorch or a CUDA device.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = 77


def main() -> int:
    """Runs the example; the exit status."""
    try:
        import torch
    except ImportError:
        print("torch_scale: skipped: PyTorch is not installed", file=sys.stderr)
        return SKIP
    if not torch.cuda.is_available():
        print("torch_scale: skipped: PyTorch sees no CUDA device", file=sys.stderr)
        return SKIP
    try:
        import sdm
    except ImportError:  # not installed: the source tree's bindings
        sys.path.insert(0, str(ROOT / "bindings" / "python"))
        import sdm

    # torch first: its first allocation creates the device's primary context and makes it current
    # on this thread, and sdm then retains that same context instead of another.
    torch.cuda.init()
    device = torch.device("cuda", torch.cuda.current_device())
    n = (1 << 20) + 3  # a multiple of no block size: the kernel's bound i < n matters
    factor = 2.5
    sentinel = 7.0
    # A stream of torch's own making: the default stream's handle is 0, which would reach sdm as
    # NULL, and the launch would not show that a real handle travels. Everything below runs on it.
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        x = torch.linspace(-4.0, 4.0, n, dtype=torch.float32, device=device)
        y = torch.full((n + 256,), sentinel, dtype=torch.float32, device=device)  # past n: must stay
        y[:n] = x
        handle = torch.cuda.current_stream().cuda_stream
        try:
            # README begin (docs/HOSTS.md's Python host: tests/tool/readme_examples.py checks the copy)
            with sdm.Runtime() as rt:
                rt.mount_file(ROOT / "tests" / "golden" / "kernels.sdma")
                kernel = rt.kernel(device.index, "scale", stream=handle, signature="ptr,f32,i32")
                kernel.launch(kernel.plan(n), [y.data_ptr(), factor, n], stream=handle)
                # Before close() unloads the module the launch runs from.
                torch.cuda.current_stream().synchronize()
            # README end
        except (sdm.SdmError, OSError) as e:  # OSError: no libsdm to load
            print(f"torch_scale: FAIL: {e}", file=sys.stderr)
            return 1
        expected = x * factor
        torch.cuda.current_stream().synchronize()

    # One single-precision multiply on each side, each rounded as IEEE 754 says: the results are
    # bit for bit the same, so any difference is a wrong element, not rounding.
    got = y[:n]
    error = (got - expected).abs().max().item()
    if not torch.equal(got, expected):
        index = int((got != expected).nonzero()[0].item())
        print(f"torch_scale: FAIL: y[{index}] is {got[index].item()}, torch says {expected[index].item()} "
              f"(max abs error {error:g} over {n} elements)", file=sys.stderr)
        return 1
    tail = y[n:]
    if not bool((tail == sentinel).all()):
        index = n + int((tail != sentinel).nonzero()[0].item())
        print(f"torch_scale: FAIL: the kernel wrote y[{index}], past n = {n}", file=sys.stderr)
        return 1
    print(f"torch_scale: ok ({n} elements, max abs error {error:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
