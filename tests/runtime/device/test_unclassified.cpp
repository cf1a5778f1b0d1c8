// Devices outside the SDM hardware matrix (T4 7.5, V100 7.0, Jetson Orin 8.7): the SDM kernels'
// archive, which declares the matrix, is still refused there with the seed's message, while a
// user's archive (no matrix declared) is served by compute capability, planned by capability-range
// rules or launched with the host's own shape. And names of 16 KiB, module and kernel, end to end
// on the fake driver: packed (format 1.1), mounted, fetched, described, launched.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "archive/format.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"
#include "support.hpp"
#include "archive/writer.hpp"

using namespace sdm;
using namespace sdm::test;

namespace {

const FakeDevice kT4{"Tesla T4", 7, 5, 65536, 40, 4194304};
const FakeDevice kV100{"Tesla V100-SXM2-32GB", 7, 0, 98304, 80, 6291456};
const FakeDevice kOrin{"Orin", 8, 7, 166912, 16, 4194304};

// CUDA 13.0's nvcc no longer compiles for Volta: the V100's cubin is tests/data's sm_75 cubin with
// its ELF header saying sm_70 (what an older toolkit writes there), which is all sdm and the fake
// driver read of it.
ByteVector cubin_for(uint16_t sm) {
    if (sm != 70) return test::data_file("kernels.sm_" + std::to_string(sm) + ".cubin");
    ByteVector b = test::data_file("kernels.sm_75.cubin");
    uint32_t flags = load_u32(b, 48);
    flags = (flags & ~0xff00u) | (70u << 8);
    store_u32(b, 48, flags);
    return b;
}

archive::KernelSpec scale_spec(const std::string& module) {
    using archive::ParamType;
    return {"scale", module, {ParamType::ptr, ParamType::f32, ParamType::i32}, {}, {}};
}

// A user's archive: module "user", the scale kernel for `sm` (a cubin, or PTX when ptx), no matrix.
ByteVector user_archive(uint16_t sm, bool ptx = false, std::vector<archive::PlanRule> plans = {}) {
    archive::ArchiveWriter writer;
    if (ptx)
        REQUIRE(writer.add({"user", archive::Kind::ptx, sm, archive::Variant::base, test::data_file("kernels.compute_" + std::to_string(sm) + ".ptx")}));
    else
        REQUIRE(writer.add({"user", archive::Kind::cubin, sm, archive::Variant::base, cubin_for(sm)}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    archive::KernelSpec k = scale_spec("user");
    if (!plans.empty()) k.problem = {"N"};
    k.plans = std::move(plans);
    m.kernels.push_back(std::move(k));
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

sdm_device_info device_info(sdm_runtime* rt) {
    sdm_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(sdm_device_info_get(rt, 0, &info, nullptr) == SDM_OK);
    return info;
}

struct Args {
    void* p{nullptr};
    float factor{2.f};
    int n{1024};
    void* values[3]{&p, &factor, &n};
};

}  // namespace

TEST_CASE("T4, V100 and Orin: a user's kernel is served, the SDM kernels are refused with the seed's message", "[unclassified]") {
    const std::pair<FakeDevice, uint16_t> rows[] = {{kT4, 75}, {kV100, 70}, {kOrin, 87}};
    for (const auto& [device, sm] : rows) {
        DYNAMIC_SECTION(device.name) {
            FakeRuntime f({.devices = {device}});
            mount(f.rt.get(), make_archive("kernels", {"sm_90", "compute_90"}, {"axpy"}, 1, Matrix::follows), "sdm.sdma");
            mount(f.rt.get(), user_archive(sm), "user.sdma");
            CHECK(device_info(f.rt.get()).device_class == SDM_DEVICE_CLASS_UNSUPPORTED);

            // The matrix's archive: the seed's refusal, before any image goes to the driver.
            std::string message;
            (void)info_of(f.rt.get(), 0, "axpy", SDM_ERROR_UNSUPPORTED_DEVICE, &message);
            CHECK_THAT(message, Catch::Contains("sparse_delta_memory supports NVIDIA H100") && Catch::Contains(device.name));
            CHECK(fake_image_loads() == 0);

            // The user's archive: its cubin for this device.
            const sdm_kernel_info info = info_of(f.rt.get(), 0, "scale");
            CHECK(info.image_sm == sm);
            CHECK(info.image_kind == 1);  // cubin
            CHECK(std::string(info.archive) == "user.sdma");

            // No plans in its manifest: sdm_plan_select says so, and the host's own shape launches.
            sdm_kernel* k = kernel_of(f.rt.get(), "scale");
            int64_t n = 1024;
            sdm_plan plan{};
            plan.struct_size = sizeof plan;
            sdm_error* e = nullptr;
            CHECK(sdm_plan_select(k, &n, 1, &plan, &e) == SDM_ERROR_NOT_FOUND);
            CHECK_THAT(sdm_error_message(e), Catch::Contains("kernel scale has no launch plans") &&
                                                 Catch::Contains("pass it to sdm_launch"));
            sdm_error_destroy(e);
            sdm_plan own{};
            own.struct_size = sizeof own;
            own.grid = 4;
            own.block = 256;
            own.cluster[0] = own.cluster[1] = own.cluster[2] = 1;
            Args a;
            CHECK(sdm_launch(k, &own, nullptr, a.values, 3, nullptr) == SDM_OK);
            CHECK(fake_calls("cuLaunchKernelEx") == 1);
        }
    }
}

TEST_CASE("an unclassified device gets PTX the driver can compile for it, never a newer arch's", "[unclassified]") {
    FakeRuntime f({.devices = {kT4}, .jit_flags = kDriverJitOnly});
    mount(f.rt.get(), user_archive(75, true), "ptx75.sdma");
    const sdm_kernel_info info = info_of(f.rt.get(), 0, "scale");
    CHECK(info.image_kind == 2);  // PTX, through the driver's JIT
    CHECK(info.image_sm == 75);

    FakeRuntime g({.devices = {kT4}, .jit_flags = kDriverJitOnly});
    mount(g.rt.get(), user_archive(80, true), "ptx80.sdma");
    std::string message;
    (void)info_of(g.rt.get(), 0, "scale", SDM_ERROR_NO_IMAGE, &message);
    CHECK_THAT(message, Catch::Contains("Tesla T4") && Catch::Contains("compute_80"));
}

TEST_CASE("plan rules keyed by capability range: the T4 and the Orin get theirs, the H200 the class's", "[unclassified][plan]") {
    archive::PlanRule turing_ampere;  // 7.0 .. 8.9, no class
    turing_ampere.capability_min = 70;
    turing_ampere.capability_max = 89;
    turing_ampere.block = "128";
    turing_ampere.grid = "sms * 2";
    archive::PlanRule modern;
    modern.device_class = "modern";
    modern.block = "256";
    modern.grid = "sms";
    const auto plan_on = [&](const FakeDevice& d, uint16_t sm, sdm_status expect) {
        FakeRuntime f({.devices = {d}});
        mount(f.rt.get(), user_archive(sm, false, {turing_ampere, modern}), "planned.sdma");
        int64_t n = 1 << 20;
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        CHECK(sdm_plan_select(kernel_of(f.rt.get(), "scale"), &n, 1, &plan, nullptr) == expect);
        return plan;
    };
    const sdm_plan t4 = plan_on(kT4, 75, SDM_OK);
    CHECK(t4.block == 128);
    CHECK(t4.grid == 80);
    CHECK(t4.rule == 0);
    const sdm_plan orin = plan_on(kOrin, 87, SDM_OK);
    CHECK(orin.grid == 32);
    const sdm_plan h200 = plan_on(kH200, 90, SDM_OK);
    CHECK(h200.block == 256);
    CHECK(h200.grid == 132);
    CHECK(h200.rule == 1);
}

TEST_CASE("16 KiB names, module and kernel: packed as format 1.1, mounted, fetched, described and launched", "[unclassified][names]") {
    const ByteVector cubin = test::data_file("kernels_long.sm_90.cubin");
    const std::string kernel = "long_" + std::string(16384 - 5, 'x');
    const std::string module = "module_" + std::string(16384 - 7, 'm');
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({module, archive::Kind::cubin, 90, archive::Variant::base, cubin}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.kernels.push_back({kernel, module, {archive::ParamType::ptr, archive::ParamType::i32}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    const ByteVector bytes = writer.finish().value();
    CHECK(load_u16(bytes, archive::header::format_minor) == 1);

    FakeRuntime f;
    mount(f.rt.get(), bytes, "long.sdma");
    const sdm_kernel_info info = info_of(f.rt.get(), 0, kernel.c_str());
    CHECK(std::string(info.name) == kernel);
    CHECK(std::string(info.module) == module);
    CHECK(std::string(info.signature) == "ptr,i32");
    sdm_kernel* k = kernel_of(f.rt.get(), kernel.c_str());
    void* p = nullptr;
    int n = 16;
    void* args[2]{&p, &n};
    sdm_plan own{};
    own.struct_size = sizeof own;
    own.grid = 1;
    own.block = 32;
    own.cluster[0] = own.cluster[1] = own.cluster[2] = 1;
    CHECK(sdm_launch(k, &own, nullptr, args, 2, nullptr) == SDM_OK);
    // One byte short or long of the name is another kernel.
    (void)info_of(f.rt.get(), 0, kernel.substr(1).c_str(), SDM_ERROR_NOT_FOUND);
    (void)info_of(f.rt.get(), 0, (kernel + "x").c_str(), SDM_ERROR_NOT_FOUND);
}
