"""The README's Python host: fetch the kernel `scale` of an archive by name, launch it on GPU 0 and
check what it computed. Memory is the host's own business (PyTorch, CuPy, cuda.core hand sdm their
device pointers as integers); here it calls the CUDA driver sdm loads ($SDM_CUDA_DRIVER, else
libcuda.so.1) through ctypes, so that nothing but sdm is needed."""
import ctypes
import os
import sys

import sdm

driver = ctypes.CDLL(os.environ.get("SDM_CUDA_DRIVER", "libcuda.so.1"))


def cuda(name, *argtypes):
    """The driver's entry point `name` (its CUDA 12.0 ABI), raising OSError when a call fails."""
    fn = ctypes.c_void_p()
    if driver.cuGetProcAddress_v2(name.encode(), ctypes.byref(fn), 12000, 0, None) != 0 or not fn:
        raise OSError(f"the CUDA driver has no {name}")
    call = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(fn.value)

    def checked(*args):
        if (status := call(*args)) != 0:
            raise OSError(f"{name}: CUresult {status}")
    return checked


N = 1000
x = (ctypes.c_float * N)(*range(N))
y = (ctypes.c_float * N)()
with sdm.Runtime() as rt:
    rt.mount_file(sys.argv[1])
    scale = rt.kernel(0, "scale", signature="ptr,f32,i32")
    info = scale.info()
    print(f"kernel {info.name} ({info.signature}) from {info.archive}, image sm_{info.loaded_sm}")

    # Device 0's primary context, the one sdm loaded the kernel in; x = 0, 1, 2, ... on the device.
    context, device_x = ctypes.c_void_p(), ctypes.c_uint64()
    cuda("cuDevicePrimaryCtxRetain", ctypes.c_void_p, ctypes.c_int)(ctypes.byref(context), 0)
    cuda("cuCtxSetCurrent", ctypes.c_void_p)(context)
    cuda("cuMemAlloc", ctypes.c_void_p, ctypes.c_size_t)(ctypes.byref(device_x), ctypes.sizeof(x))
    cuda("cuMemcpyHtoD", ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)(device_x, x, ctypes.sizeof(x))

    # The plan the archive's manifest gives for N elements on this GPU, and the launch: x *= 2.
    plan = scale.plan(N)
    scale.launch(plan, [device_x.value, 2.0, N])
    cuda("cuCtxSynchronize")()
    cuda("cuMemcpyDtoH", ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t)(y, device_x, ctypes.sizeof(y))
    print(f"launched: grid {plan.grid} x {plan.block} threads")

doubled = all(b == 2 * a for a, b in zip(x, y))
unchanged = list(x) == list(y)
# The fake driver (docs/GPU_TESTS.md) loads images and takes launches but runs no kernel.
fake = hasattr(driver, "sdm_fake_cuda_configure")
print(f"y[999] = {y[N - 1]:g}: " + ("x * 2, as computed on the GPU" if doubled else
                                     "x, unchanged: the fake driver runs no kernel" if unchanged and fake else "WRONG"))
sys.exit(0 if doubled or (unchanged and fake) else 1)
