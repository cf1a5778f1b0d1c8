// Kernels written the way CuPy and cuda.core users write them (issue 39): templates fetched by
// name expressions that spell typedefs, literal casts, enumerators and default arguments, a
// complex scalar by value, and (with -DSECOND) a second module defining test_sum alone. Each
// kernel writes its own mark to out[0], so a test sees which kernel ran. Compiled by
// regenerate.sh to user_names.sm_90.cubin and user_names_second.sm_90.cubin.
#include <cuda/std/complex>
#if !defined(__CUDACC_RTC__)  // thrust/complex.h needs <cmath>, which NVRTC lacks
#include <thrust/complex.h>
#endif

#ifndef SECOND
namespace mylib {
enum class Tag : int { A = 0, B = 1 };
}

template <typename T>
__global__ void ptr_param(T* out) { out[0] = static_cast<T>(sizeof(T) == 8 ? 101 : 102); }
template __global__ void ptr_param<size_t>(size_t*);
template __global__ void ptr_param<unsigned int>(unsigned int*);

template <typename T, int N>
__global__ void non_type_param(T* out) { out[0] = static_cast<T>(N); }
template __global__ void non_type_param<float, 3>(float*);

template <mylib::Tag tag>
__global__ void enum_param(int* out) { out[0] = 200 + static_cast<int>(tag); }
template __global__ void enum_param<mylib::Tag::B>(int*);

template <typename T, typename U = void>
__global__ void shift(T* out, T by) { out[0] += by; }
template __global__ void shift<int>(int*, int);

// A complex<float> by value: out[0] its real part, out[1] its imaginary part.
__global__ void complex_scale(cuda::std::complex<float> v, float* out) {
    out[0] = v.real();
    out[1] = v.imag();
}

// A thrust::complex<float> as a template argument and by value (its symbol names thrust's
// versioned inline namespace, THRUST_300001_SM_900_NS). Not for NVRTC (see the include): found at
// run time, by the inline-namespace rule, not by a recorded expression.
#if !defined(__CUDACC_RTC__)
template <typename C>
__global__ void cplx_param(C v, float* out) {
    out[0] = v.real() * 10.0f;
    out[1] = v.imag() * 10.0f;
}
template __global__ void cplx_param<thrust::complex<float>>(thrust::complex<float>, float*);
#endif

extern "C" __global__ void test_sum(int* out) { out[0] = 10; }
#else
extern "C" __global__ void test_sum(int* out) { out[0] = 20; }
#endif
