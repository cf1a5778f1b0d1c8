// GPU test (issue 39): kernels as CuPy users write them, fetched by the names those users write and
// run on the device (exits 77 without a GPU). The archive is tests/data/user_names.cu's two
// modules as `sdm import --source --name-expression` makes it (tests/meson.build): module
// user_names and user_names_second (-DSECOND), each defining test_sum (10 and 20), the first's
// name expressions lowered by NVRTC. Each kernel writes its own mark, so the test sees which ran:
// - templates fetched by typedefs (ptr_param<size_t>), a literal cast (non_type_param<float, (int)3>),
//   an enumerator (enum_param<mylib::Tag::B>), a default argument (shift<int>, recorded), and
//   thrust::complex<float> (cplx_param<thrust::complex<float>>: the symbol names thrust's versioned
//   inline namespace);
// - test_sum: the plain name is SDM_ERROR_AMBIGUOUS naming both modules; each module's own by
//   MODULE!NAME, and each writes its own mark;
// - complex scalars by value (cuda::std::complex<float>, thrust::complex<float>): both parts arrive;
// - every attribute sdm_kernel_attributes_get gives equals cuFuncGetAttribute's.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::memory_calls;
using sdm::gpu_test::skipped;
using sdm::gpu_test::failures;

namespace {

std::string message(sdm_error* e) { return e != nullptr ? std::string(": ") + sdm_error_message(e) : std::string(); }

}  // namespace

int main() {
    Cuda cuda;
    if (!cuda.open_device0()) return skipped();
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    const auto get_attribute = cuda.get<decltype(&cuFuncGetAttribute)>("cuFuncGetAttribute");

    sdm_runtime_params params{};
    params.struct_size = sizeof params;
    params.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    sdm_runtime* rt = nullptr;
    sdm_error* e = nullptr;
    if (sdm_runtime_create(&params, &rt, &e) != SDM_OK || sdm_archive_mount_file(rt, SDM_TEST_USER_NAMES_ARCHIVE, &e) != SDM_OK) {
        std::printf("FAIL: runtime or mount%s\n", message(e).c_str());
        return 1;
    }
    CUdeviceptr out = 0;
    if (alloc(&out, 64) != CUDA_SUCCESS) {
        std::printf("FAIL: cuMemAlloc\n");
        return 1;
    }
    // Runs kernel `name` (one thread) with `args`, out[0..15] first filled with `init`; returns the 64 bytes of out.
    const auto run = [&](const std::string& name, std::vector<void*> args, const std::vector<uint8_t>& init = std::vector<uint8_t>(64, 0)) {
        std::vector<uint8_t> host(64, 0xEE);
        sdm_kernel* k = nullptr;
        if (sdm_kernel_get(rt, 0, name.c_str(), nullptr, &k, &e) != SDM_OK) {
            check(false, "fetch " + name + message(e));
            sdm_error_destroy(e), e = nullptr;
            return host;
        }
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        plan.grid = 1;
        plan.block = 1;
        const bool ok = htod(out, init.data(), 64) == CUDA_SUCCESS &&
                        sdm_launch(k, &plan, nullptr, args.data(), static_cast<uint32_t>(args.size()), &e) == SDM_OK && sync() == CUDA_SUCCESS &&
                        dtoh(host.data(), out, 64) == CUDA_SUCCESS;
        check(ok, "launch " + name + message(e));
        sdm_error_destroy(e), e = nullptr;
        return host;
    };
    const auto as = [](const std::vector<uint8_t>& bytes, auto value) {
        decltype(value) v{};
        std::memcpy(&v, bytes.data(), sizeof v);
        return v;
    };

    // Templates by the names their authors write.
    check(as(run("ptr_param<size_t>", {&out}), uint64_t{}) == 101, "ptr_param<size_t> (a typedef, recorded) ran");
    check(as(run("ptr_param<unsigned int>", {&out}), uint32_t{}) == 102, "ptr_param<unsigned int> ran");
    check(as(run("non_type_param<float, (int)3>", {&out}), float{}) == 3.0f, "non_type_param<float, (int)3> (a literal cast) ran");
    check(as(run("enum_param<mylib::Tag::B>", {&out}), int32_t{}) == 201, "enum_param<mylib::Tag::B> (an enumerator, recorded) ran");
    int32_t by = 5;
    std::vector<uint8_t> ten(64, 0);
    ten[0] = 10;
    check(as(run("shift<int>", {&out, &by}, ten), int32_t{}) == 15, "shift<int> (a default argument) ran: 10 + 5");

    // Complex scalars by value: both parts arrive (2+3j).
    const float complex_value[2] = {2.0f, 3.0f};
    std::vector<uint8_t> c = run("complex_scale", {const_cast<float*>(complex_value), &out});
    check(as(c, float{}) == 2.0f && as(std::vector<uint8_t>(c.begin() + 4, c.end()), float{}) == 3.0f,
          "complex_scale(cuda::std::complex<float> 2+3j): real and imaginary parts arrive");
    c = run("cplx_param<thrust::complex<float>>", {const_cast<float*>(complex_value), &out});
    check(as(c, float{}) == 20.0f && as(std::vector<uint8_t>(c.begin() + 4, c.end()), float{}) == 30.0f,
          "cplx_param<thrust::complex<float>> (thrust's inline namespace) ran with 2+3j");

    // Two modules, one name.
    sdm_kernel* k = nullptr;
    const sdm_status ambiguous = sdm_kernel_get(rt, 0, "test_sum", nullptr, &k, &e);
    const std::string why = e != nullptr ? sdm_error_message(e) : "";
    check(ambiguous == SDM_ERROR_AMBIGUOUS && why.find("user_names, user_names_second") != std::string::npos,
          "test_sum unqualified is AMBIGUOUS naming both modules: " + why);
    sdm_error_destroy(e), e = nullptr;
    check(as(run("user_names!test_sum", {&out}), int32_t{}) == 10, "user_names!test_sum ran its own kernel (10)");
    check(as(run("user_names_second!test_sum", {&out}), int32_t{}) == 20, "user_names_second!test_sum ran its own kernel (20)");

    // Attributes against the driver's, for each kernel fetched.
    for (const char* name : {"complex_scale", "user_names!test_sum", "user_names_second!test_sum", "shift<int>"}) {
        if (sdm_kernel_get(rt, 0, name, nullptr, &k, &e) != SDM_OK) {
            check(false, std::string("fetch ") + name + message(e));
            sdm_error_destroy(e), e = nullptr;
            continue;
        }
        sdm_kernel_attributes a{};
        a.struct_size = sizeof a;
        void* raw = nullptr;
        check(sdm_kernel_attributes_get(k, &a, &e) == SDM_OK && sdm_kernel_function(k, &raw, &e) == SDM_OK, std::string(name) + ": attributes" + message(e));
        const auto driver = [&](CUfunction_attribute attribute) {
            int value = -12345;
            return get_attribute(&value, attribute, static_cast<CUfunction>(raw)) == CUDA_SUCCESS ? value : -12345;
        };
        const std::vector<std::pair<int32_t, CUfunction_attribute>> fields = {
            {a.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}, {a.shared_size_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
            {a.const_size_bytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES},           {a.local_size_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES},
            {a.num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS},                           {a.ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION},
            {a.binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION},               {a.cache_mode_ca, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA},
            {a.max_dynamic_shared_size_bytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES},
            {a.preferred_shared_memory_carveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT},
        };
        int same = 0;
        for (const auto& [mine, attribute] : fields) same += mine == driver(attribute);
        check(same == static_cast<int>(fields.size()), std::string(name) + ": " + std::to_string(same) + " of " + std::to_string(fields.size()) +
                                                           " attributes equal cuFuncGetAttribute's (num_regs " + std::to_string(a.num_regs) + ")");
    }
    mfree(out);
    sdm_runtime_destroy(rt);
    std::printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
    return failures == 0 ? 0 : 1;
}
