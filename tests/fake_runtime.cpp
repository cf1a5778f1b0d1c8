#include "fake_runtime.hpp"

#include "archive/kernel_params.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "archive/format.hpp"
#include "archive/image.hpp"
#include "archive/manifest.hpp"
#include "support.hpp"
#include "archive/writer.hpp"

namespace sdm::test {

namespace {
void append_log(void* user, sdm_log_level, const char* message, size_t) { static_cast<std::vector<std::string>*>(user)->push_back(message); }
}  // namespace

RuntimePtr make_runtime(const std::string& cache_dir, uint32_t jit_flags, uint32_t cache_flags, std::vector<std::string>* log, uint32_t flags,
                        uint32_t jit_isolation) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE | flags;
    p.cuda_driver = SDM_FAKE_CUDA_PATH;
    p.cache_dir = cache_dir.c_str();
    p.jit_flags = jit_flags;
    // The driver's JIT compiles inside the host, so the default isolation policy keeps unsigned
    // PTX out of it: a test that leaves only the driver's JIT asks for links in the process.
    p.jit_isolation = jit_isolation == SDM_ISOLATION_DEFAULT && (jit_flags & SDM_JIT_NO_NVJITLINK) != 0 ? uint32_t{SDM_ISOLATION_NEVER} : jit_isolation;
    p.cache_flags = cache_flags;
    p.log_level = log != nullptr ? SDM_LOG_DEBUG : SDM_LOG_OFF;
    if (log != nullptr) {
        p.log_fn = append_log;
        p.log_user_data = log;
    }
    sdm_runtime* r = nullptr;
    REQUIRE(sdm_runtime_create(&p, &r, nullptr) == SDM_OK);
    return RuntimePtr(r);
}

ByteVector make_archive(const std::string& module, std::initializer_list<const char*> targets,
                        std::vector<std::string> kernels, uint16_t kernel_abi_major, Matrix matrix, const archive::WriterOptions& options) {
    archive::ArchiveWriter writer(options);
    for (const char* spec : targets) {
        const std::string text = spec;
        const auto eq = text.find('=');
        const std::string t = eq == std::string::npos ? text : text.substr(eq + 1);
        const auto target = archive::parse_target(t);
        REQUIRE(target);
        const std::string file =
            eq != std::string::npos ? text.substr(0, eq) : "kernels." + t + (target->kind == archive::Kind::ptx ? ".ptx" : ".cubin");
        REQUIRE(writer.add({module, target->kind, target->sm, target->variant, test::data_file(file)}));
    }
    archive::Manifest m;
    m.kernel_abi_major = kernel_abi_major;
    m.hardware_matrix = matrix == Matrix::follows;
    for (const auto& k : kernels) m.kernels.push_back({k, module, {archive::ParamType::ptr}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

ByteVector launch_archive(const std::string& content_version) {
    const ByteVector cubin = test::data_file("launch.sm_90.cubin");
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({"launch", archive::Kind::cubin, 90, archive::Variant::base, cubin}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.hardware_matrix = false;
    m.content_version = content_version;
    auto params = archive::cubin_kernel_params(cubin);
    REQUIRE(params);
    for (const auto& k : *params) m.kernels.push_back({k.name, "launch", k.signature, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

void mount(sdm_runtime* rt, const ByteVector& bytes, const char* label) {
    sdm_error* e = nullptr;
    const sdm_status s = sdm_archive_mount_memory(rt, bytes.data(), bytes.size(), label, &e);
    if (s != SDM_OK) FAIL(sdm_error_message(e));
}

sdm_kernel_info info_of(sdm_runtime* rt, int32_t ordinal, const char* name, sdm_status expect, std::string* message) {
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_kernel_get(rt, ordinal, name, nullptr, &k, &e);
    if (message != nullptr) *message = sdm_error_message(e);
    if (s != expect) FAIL(sdm_status_string(s) << ": " << sdm_error_message(e));
    sdm_error_destroy(e);
    sdm_kernel_info info{};
    info.struct_size = sizeof info;
    if (s == SDM_OK) REQUIRE(sdm_kernel_info_get(k, &info, nullptr) == SDM_OK);
    return info;
}

sdm_cache_stats stats_of(sdm_runtime* rt) {
    sdm_cache_stats s{};
    s.struct_size = sizeof s;
    REQUIRE(sdm_cache_stats_get(rt, &s, nullptr) == SDM_OK);
    return s;
}

sdm_kernel* kernel_of(sdm_runtime* rt, const char* name, int32_t ordinal) {
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    if (sdm_kernel_get(rt, ordinal, name, nullptr, &k, &e) != SDM_OK) FAIL(sdm_error_message(e));
    return k;
}

void drop(const std::string& path, const ByteVector& bytes) {
    const std::string tmp = path + ".incoming";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    // Replaced by rename, as a host drops a new version (on Windows too: MoveFileEx replacing it,
    // while sdm has the old one mapped).
    std::error_code error;
    std::filesystem::rename(tmp, path, error);
    INFO(error.message());
    REQUIRE(!error);
}

sdm_status launch_scale_quietly(const sdm_kernel* k, CUstream stream, sdm_error** error) {
    sdm_plan plan{};
    plan.struct_size = sizeof plan;
    plan.block = 128;
    plan.grid = 1;
    plan.cluster[0] = plan.cluster[1] = plan.cluster[2] = 1;
    void* y = nullptr;
    void* args[] = {&y};
    return sdm_launch(k, &plan, stream, args, 1, error);
}

sdm_status launch_scale(const sdm_kernel* k, CUstream stream, std::string* message) {
    sdm_error* e = nullptr;
    const sdm_status status = launch_scale_quietly(k, stream, &e);
    if (status != SDM_OK) UNSCOPED_INFO(sdm_error_message(e));
    if (message != nullptr) *message = sdm_error_message(e);
    sdm_error_destroy(e);
    return status;
}

std::vector<std::string> demangled_listing(sdm_runtime* rt, uint32_t archive) {
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(rt, archive, &list, nullptr) == SDM_OK);
    uint32_t n = 0;
    REQUIRE(sdm_kernel_list_count(list, &n, nullptr) == SDM_OK);
    std::vector<std::string> out;
    for (uint32_t i = 0; i < n; ++i) {
        sdm_kernel_entry entry{};
        entry.struct_size = sizeof entry;
        REQUIRE(sdm_kernel_list_get(list, i, &entry, nullptr) == SDM_OK);
        out.emplace_back(entry.demangled);
    }
    sdm_kernel_list_destroy(list);
    return out;
}

int count_containing(const std::vector<std::string>& log, const std::string& text) {
    int n = 0;
    for (const auto& line : log) n += line.find(text) != std::string::npos;
    return n;
}

FakeRuntime::FakeRuntime(FakeRuntimeOptions o) : options(std::move(o)), cache_dir(dir.path + "/cache") {
    fake(options.devices);
    rt = another();
}

RuntimePtr FakeRuntime::another() { return make_runtime(cache_dir, options.jit_flags, 0, options.log ? &log : nullptr, 0, options.jit_isolation); }

void FakeRuntime::restart() {
    rt.reset();
    rt = another();
}

}  // namespace sdm::test
