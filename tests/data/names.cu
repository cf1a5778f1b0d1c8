// Kernels named the way CuPy users write them (tests/runtime/kernel/test_kernel_names.cpp): templates over
// typedefs, literals of every integral type, an enumerator, default template arguments, an
// argument pack, thrust's complex (its versioned inline namespace) and libcu++'s mdspan (its ABI
// namespace), and two templates one canonical spelling names (f<3> over int, f<3u> over unsigned).
#include <cstddef>
#include <cstdint>
#include <cuda/std/mdspan>
#include <cuda_fp16.h>
#include <thrust/complex.h>

namespace mylib {
enum class Tag { A, B };
}

namespace names {
template <typename T>
__global__ void ptr_param(T* p) { *p = T(); }
template __global__ void ptr_param<unsigned long>(unsigned long*);            // size_t, uint64_t
template __global__ void ptr_param<long>(long*);                              // ptrdiff_t, int64_t
template __global__ void ptr_param<long long>(long long*);                    // not int64_t
template __global__ void ptr_param<int>(int*);                                // int32_t
template __global__ void ptr_param<unsigned int>(unsigned int*);              // uint32_t, unsigned
template __global__ void ptr_param<short>(short*);                            // int16_t
template __global__ void ptr_param<signed char>(signed char*);                // int8_t
template __global__ void ptr_param<unsigned char>(unsigned char*);            // uint8_t
template __global__ void ptr_param<char>(char*);                              // neither
template __global__ void ptr_param<__half>(__half*);                          // half

template <typename T, int N>
__global__ void non_type_param(T* p) { *p = T(N); }
template __global__ void non_type_param<float, 3>(float*);
template __global__ void non_type_param<float, -2>(float*);

template <unsigned N> __global__ void unsigned_param(int* p) { *p = N; }
template __global__ void unsigned_param<3>(int*);
template <size_t N> __global__ void size_param(int* p) { *p = N; }
template __global__ void size_param<16>(int*);
template <long long N> __global__ void long_long_param(int* p) { *p = N; }
template __global__ void long_long_param<-3>(int*);
template <char C> __global__ void char_param(int* p) { *p = C; }
template __global__ void char_param<'A'>(int*);
template <bool B> __global__ void bool_param(int* p) { *p = B; }
template __global__ void bool_param<true>(int*);
template <short S> __global__ void short_param(int* p) { *p = S; }
template __global__ void short_param<-5>(int*);
template <unsigned char C> __global__ void byte_param(int* p) { *p = C; }
template __global__ void byte_param<200>(int*);

// Two templates one canonical spelling names: "overload<3>" is both, "overload<3u>" one.
template <int N> __global__ void overload(int* p) { *p = N; }
template <unsigned N> __global__ void overload(unsigned* p) { *p = N + 1; }
template __global__ void overload<3>(int*);
template __global__ void overload<3u>(unsigned*);

template <mylib::Tag T> __global__ void enum_param(int* p) { *p = int(T); }
template __global__ void enum_param<mylib::Tag::B>(int*);

template <typename T, typename = void> __global__ void shift(T* p) { *p = T(); }
template __global__ void shift<int>(int*);
template <typename T, int N = 4> __global__ void twice(T* p) { *p = T(N); }
template __global__ void twice<float>(float*);
template __global__ void twice<float, 8>(float*);
template <typename... Ts> __global__ void pack(int* p) { *p = sizeof...(Ts); }
template __global__ void pack<int, float>(int*);

template <typename T> __global__ void scale(T* p) { *p = *p * T(2); }
template __global__ void scale<thrust::complex<float>>(thrust::complex<float>*);
template __global__ void scale<thrust::complex<double>>(thrust::complex<double>*);
template __global__ void scale<float>(float*);

template <typename T>
__global__ void fill_2d(cuda::std::mdspan<T, cuda::std::dextents<int, 2>> m) { m(0, 0) = T(); }
template __global__ void fill_2d<thrust::complex<float>>(cuda::std::mdspan<thrust::complex<float>, cuda::std::dextents<int, 2>>);
template __global__ void fill_2d<__half>(cuda::std::mdspan<__half, cuda::std::dextents<int, 2>>);
template __global__ void fill_2d<float>(cuda::std::mdspan<float, cuda::std::dextents<int, 2>>);

template <typename M> __global__ void fill_view(M m) { m(0, 0) = 0; }
template __global__ void fill_view<cuda::std::mdspan<float, cuda::std::extents<int, 4, 4>>>(cuda::std::mdspan<float, cuda::std::extents<int, 4, 4>>);
}  // namespace names
