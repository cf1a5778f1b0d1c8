// Every CUDA driver entry point sdm calls, once: the driver resolves each through cuGetProcAddress
// (driver.hpp), the fake driver implements each (tests/fake_cuda), and the fault-injection test
// fails each in turn (tests/runtime/platform/test_faults.cpp). A new call into the driver is added here and
// nowhere else; the fake then fails to build until it implements it. Base names, as
// cuGetProcAddress takes them; no includes, so the fake and the tests can use it alone.
#pragma once

#define SDM_DRIVER_ENTRY_POINTS(X)            \
    X(cuInit)                                 \
    X(cuDriverGetVersion)                     \
    X(cuGetErrorName)                         \
    X(cuGetErrorString)                       \
    X(cuDeviceGetCount)                       \
    X(cuDeviceGet)                            \
    X(cuDeviceGetName)                        \
    X(cuDeviceGetAttribute)                   \
    X(cuDevicePrimaryCtxRetain)               \
    X(cuDevicePrimaryCtxRelease)              \
    X(cuCtxPushCurrent)                       \
    X(cuCtxPopCurrent)                        \
    X(cuCtxGetCurrent)                        \
    X(cuCtxGetDevice)                         \
    X(cuCtxGetId)                             \
    X(cuModuleLoadData)                       \
    X(cuModuleLoadDataEx)                     \
    X(cuModuleUnload)                         \
    X(cuModuleGetFunction)                    \
    X(cuLibraryLoadData)                      \
    X(cuLibraryUnload)                        \
    X(cuLibraryGetKernel)                     \
    X(cuKernelGetFunction)                    \
    X(cuFuncGetAttribute)                     \
    X(cuStreamIsCapturing)                    \
    X(cuStreamGetCaptureInfo)                 \
    X(cuUserObjectCreate)                     \
    X(cuUserObjectRelease)                    \
    X(cuGraphRetainUserObject)                \
    X(cuFuncSetAttribute)                     \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuOccupancyMaxActiveClusters)           \
    X(cuLaunchKernelEx)                       \
    X(cuEventCreate)                          \
    X(cuEventRecord)                          \
    X(cuEventQuery)                           \
    X(cuEventSynchronize)                     \
    X(cuEventDestroy)                         \
    X(cuCtxSynchronize)                       \
    X(cuCtxGetStreamPriorityRange)            \
    X(cuOccupancyMaxPotentialBlockSize)       \
    X(cuModuleGetGlobal)                      \
    X(cuLibraryGetGlobal)                     \
    X(cuMemcpyHtoDAsync)                      \
    X(cuMemcpyDtoHAsync)                      \
    X(cuMemGetInfo)
