// Two modules defining one kernel name, as CuPy's RawModules do (issue 39): manifest 1.2 lists the
// name once per module, an unqualified fetch is SDM_ERROR_AMBIGUOUS naming the modules, and
// "MODULE!NAME" fetches each module's own kernel. No lookup is ever served by another module's
// kernel. Also the manifest's recorded name expressions, and hostile manifests of minor 2.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sdm/sdm.h"
#include "archive/kernel_params.hpp"
#include "archive/manifest.hpp"
#include "archive/writer.hpp"
#include "fake_runtime.hpp"
#include "forge/forge.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::test;

namespace {

// Modules "a" and "b" of the same cubin (axpy and scale), "t" and "u" of templates.sm_90.cubin
// (sdm_test::fill<float, 256> and <double, 1024>); the manifest lists `kernels` where given.
struct Listed {
    std::string name, module;
};
ByteVector scoped_archive(const std::vector<Listed>& kernels, const std::vector<archive::NameExpression>& expressions = {}) {
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({"a", archive::Kind::cubin, 90, archive::Variant::base, data_file("kernels.sm_90.cubin")}));
    REQUIRE(writer.add({"b", archive::Kind::cubin, 90, archive::Variant::base, data_file("kernels.sm_90.cubin")}));
    REQUIRE(writer.add({"t", archive::Kind::cubin, 90, archive::Variant::base, data_file("templates.sm_90.cubin")}));
    REQUIRE(writer.add({"u", archive::Kind::cubin, 90, archive::Variant::base, data_file("templates.sm_90.cubin")}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    for (const auto& k : kernels) m.kernels.push_back({k.name, k.module, {archive::ParamType::ptr}, {}, {}});
    m.expressions = expressions;
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

std::string fill_float() {  // the mangled name of sdm_test::fill<float, 256>
    const auto params = archive::cubin_kernel_params(data_file("templates.sm_90.cubin"));
    REQUIRE(params);
    for (const auto& k : *params)
        if (k.name.find("IfLi256") != std::string::npos) return k.name;
    FAIL("no fill<float, 256> in templates.sm_90.cubin");
    return {};
}

void* function_of(sdm_runtime* rt, const char* name) {
    void* f = nullptr;
    REQUIRE(sdm_kernel_function(kernel_of(rt, name), &f, nullptr) == SDM_OK);
    return f;
}

}  // namespace

TEST_CASE_METHOD(FakeRuntime, "a name two modules define is AMBIGUOUS, naming both; MODULE!NAME fetches each module's own", "[names][modules]") {
    mount(rt.get(), scoped_archive({{"scale", "a"}, {"scale", "b"}, {"axpy", "a"}}), "two.sdma");
    std::string message;
    info_of(rt.get(), 0, "scale", SDM_ERROR_AMBIGUOUS, &message);
    CHECK(message.find("modules of archive two.sdma: a, b") != std::string::npos);
    CHECK(message.find("\"a!scale\" or \"b!scale\"") != std::string::npos);
    const sdm_kernel_info a = info_of(rt.get(), 0, "a!scale"), b = info_of(rt.get(), 0, "b!scale");
    CHECK(std::string(a.module) == "a");
    CHECK(std::string(b.module) == "b");
    CHECK(std::string(a.name) == "scale");
    CHECK(function_of(rt.get(), "a!scale") != function_of(rt.get(), "b!scale"));  // two modules loaded, each its own function
    CHECK(std::string(info_of(rt.get(), 0, "axpy").module) == "a");                // listed once: its plain name
    CHECK(std::string(info_of(rt.get(), 0, "a!axpy").module) == "a");
    info_of(rt.get(), 0, "b!axpy", SDM_ERROR_NOT_FOUND);  // b's image defines it, the manifest does not list it there
    info_of(rt.get(), 0, "c!scale", SDM_ERROR_NOT_FOUND);
    // Still ambiguous after both were fetched qualified (never the first one served).
    info_of(rt.get(), 0, "scale", SDM_ERROR_AMBIGUOUS);
    // sdm_kernel_get_checked and preload take the qualified name too; preload of everything loads both.
    sdm_kernel* k = nullptr;
    CHECK(sdm_kernel_get_checked(rt.get(), 0, "b!scale", "ptr", nullptr, &k, nullptr) == SDM_OK);
    const char* names[] = {"scale"};
    CHECK(sdm_preload(rt.get(), 0, names, 1, nullptr) == SDM_ERROR_AMBIGUOUS);
    CHECK(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
}

TEST_CASE_METHOD(FakeRuntime, "the listing shows one entry per module; the layering rule across archives is unchanged", "[names][modules]") {
    mount(rt.get(), scoped_archive({{"scale", "a"}, {"scale", "b"}, {"axpy", "a"}}), "old.sdma");
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(rt.get(), SDM_LIST_SERVED, &list, nullptr) == SDM_OK);
    uint32_t count = 0;
    REQUIRE(sdm_kernel_list_count(list, &count, nullptr) == SDM_OK);
    std::vector<std::string> seen;
    for (uint32_t i = 0; i < count; ++i) {
        sdm_kernel_entry e{};
        e.struct_size = sizeof e;
        REQUIRE(sdm_kernel_list_get(list, i, &e, nullptr) == SDM_OK);
        seen.push_back(std::string(e.module) + "!" + e.name);
    }
    sdm_kernel_list_destroy(list);
    CHECK(seen == std::vector<std::string>{"a!axpy", "a!scale", "b!scale"});
    // A newer archive listing scale once serves the plain name; a!scale is still the old one's.
    mount(rt.get(), make_archive("n", {"sm_90"}, {"scale"}, 1, Matrix::none), "new.sdma");
    CHECK(std::string(info_of(rt.get(), 0, "scale").module) == "n");
    CHECK(std::string(info_of(rt.get(), 0, "scale").archive) == "new.sdma");
    CHECK(std::string(info_of(rt.get(), 0, "a!scale").archive) == "old.sdma");
    CHECK(std::string(info_of(rt.get(), 0, "n!scale").archive) == "new.sdma");
}

TEST_CASE_METHOD(FakeRuntime, "a C++ spelling qualified by its module; unqualified, one symbol in two modules is AMBIGUOUS", "[names][modules]") {
    const std::string fill = fill_float();
    mount(rt.get(), scoped_archive({{fill, "t"}, {fill, "u"}, {"scale", "a"}}), "cxx.sdma");
    std::string message;
    info_of(rt.get(), 0, "sdm_test::fill<float, 256>", SDM_ERROR_AMBIGUOUS, &message);
    CHECK(message.find("t, u") != std::string::npos);
    CHECK(std::string(info_of(rt.get(), 0, "t!sdm_test::fill<float, 256>").module) == "t");
    CHECK(std::string(info_of(rt.get(), 0, "u!sdm_test::fill<float, 256>").module) == "u");
    CHECK(std::string(info_of(rt.get(), 0, ("u!" + fill).c_str()).module) == "u");
    info_of(rt.get(), 0, "a!sdm_test::fill<float, 256>", SDM_ERROR_NOT_FOUND);  // module a has no such kernel
    // '!' inside a template argument is C++, not a module: the name is not qualified.
    info_of(rt.get(), 0, "sdm_test::fill<!x>", SDM_ERROR_NOT_FOUND);
}

TEST_CASE("split_module: MODULE!NAME only where the part before '!' is a module name", "[names]") {
    CHECK(archive::split_module("a!scale").module == "a");
    CHECK(archive::split_module("a!scale").name == "scale");
    CHECK(archive::split_module("kernels.cu!ns::f<int>").module == "kernels.cu");
    CHECK(archive::split_module("ns::f<!b>").module.empty());
    CHECK(archive::split_module("f<a!b>").module.empty());
    CHECK(archive::split_module("scale").module.empty());
    CHECK(archive::split_module("a!").module.empty());
    CHECK(archive::split_module("!scale").module.empty());
    CHECK(archive::qualified_name("m", "k") == "m!k");
}

TEST_CASE("manifest 1.2: repeated names and name expressions round-trip; older minors stay as they were", "[names][manifest]") {
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.kernels = {{"k", "b", {archive::ParamType::ptr}, {}, {}}, {"k", "a", {archive::ParamType::ptr}, {}, {}}, {"j", "a", {}, {}, {}}};
    m.expressions = {{"f<size_t>", "a", "k"}, {"f<size_t>", "b", "k"}, {"g", "a", "j"}};
    const ByteVector bytes = archive::encode_manifest(m).value();
    CHECK(load_u16(bytes, 6) == archive::kManifestMinor12);
    const auto back = archive::decode_manifest(bytes).value();
    REQUIRE(back.kernels.size() == 3);
    CHECK(back.kernels[1].module == "a");  // sorted by (name, module)
    CHECK(back.kernels[2].module == "b");
    CHECK(back.expressions.size() == 3);
    const auto index = archive::ManifestIndex::build(bytes).value();
    CHECK(index.find_all("k").size() == 2);
    CHECK(index.find("k") == nullptr);  // several modules: never silently one
    CHECK(index.find("k", "b")->module == "b");
    CHECK(index.find("j")->module == "a");
    // Without repeated names or expressions, the bytes are those of minor 0 as before.
    archive::Manifest plain;
    plain.kernel_abi_major = 1;
    plain.kernels = {{"k", "a", {archive::ParamType::ptr}, {}, {}}};
    CHECK(load_u16(archive::encode_manifest(plain).value(), 6) == 0);
    // Refused when written: a kernel twice in one module, an expression naming no listed kernel,
    // one recorded twice for a module, one too long or not printable.
    auto twice = m;
    twice.kernels.push_back({"k", "a", {}, {}, {}});
    CHECK(!archive::encode_manifest(twice));
    for (const archive::NameExpression& bad :
         {archive::NameExpression{"h", "a", "nope"}, archive::NameExpression{"g", "a", "j"}, archive::NameExpression{std::string(4097, 'x'), "a", "j"},
          archive::NameExpression{"g\n", "b", "k"}, archive::NameExpression{"", "a", "j"}}) {
        auto with = m;
        with.expressions.push_back(bad);
        CHECK(!archive::encode_manifest(with));
    }
}

TEST_CASE("hostile manifests of minor 2 are refused by name, without a crash", "[names][manifest][hostile]") {
    using forge::item;
    const auto kernel = [](const std::string& name, const std::string& module) { return forge::kernel(name, module, "ptr"); };
    const auto expression = [](const std::vector<std::pair<uint16_t, std::string>>& fields, uint16_t flags = 0) {
        std::vector<forge::Bytes> parts;
        for (const auto& [tag, text] : fields) parts.push_back(item(tag, text));
        return item(6, forge::concat(parts), flags);
    };
    const auto refusal = [](const forge::Bytes& body) -> std::string {
        const forge::Bytes m = forge::manifest(body, 1, 2);
        auto index = archive::ManifestIndex::build(Bytes(reinterpret_cast<const std::byte*>(m.data()), m.size()));
        return index ? std::string() : index.error().message;
    };
    const forge::Bytes abi = forge::kernel_abi(1, 0);
    // A name in two modules without tag 5: a reader that took names as unique would serve one for both.
    CHECK(refusal(forge::concat({abi, kernel("k", "a"), kernel("k", "b")})).find("does not declare module-scoped names") != std::string::npos);
    CHECK(refusal(forge::concat({abi, item(5, std::string("module")), kernel("k", "a"), kernel("k", "b")})).empty());
    CHECK(refusal(forge::concat({abi, item(5, std::string("module")), kernel("k", "a"), kernel("k", "a")})).find("listed twice in module a") != std::string::npos);
    CHECK(refusal(forge::concat({abi, item(5, std::string("file")), kernel("k", "a")})).find("scoped names") != std::string::npos);
    // Expressions: each field once, all three, names valid, naming a listed kernel, once per module.
    const forge::Bytes base = forge::concat({abi, kernel("k", "a")});
    CHECK(refusal(forge::concat({base, expression({{1, "f<int>"}, {2, "a"}, {3, "k"}})})).empty());
    CHECK(refusal(forge::concat({base, expression({{1, "f<int>"}, {2, "a"}})})).find("needs its expression, module and symbol") != std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, "f<int>"}, {1, "g"}, {2, "a"}, {3, "k"}})})).find("appears twice") != std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, "f<int>"}, {2, "a"}, {3, "nope"}})})).find("does not list") != std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, "f<int>"}, {2, "a/b"}, {3, "k"}})})).find("module name") != std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, std::string(5000, 'x')}, {2, "a"}, {3, "k"}})})).find("1 to 4096 bytes") != std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, std::string("f\x1b[2J")}, {2, "a"}, {3, "k"}})})).find("not printable") != std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, "f"}, {2, "a"}, {3, "k"}}), expression({{1, "f"}, {2, "a"}, {3, "k"}})})).find("recorded twice") !=
          std::string::npos);
    CHECK(refusal(forge::concat({base, expression({{1, "f"}, {2, "a"}, {3, "k"}, {9, "x"}})})).find("update sdm") != std::string::npos);
    forge::Bytes truncated = expression({{1, "f"}, {2, "a"}, {3, "k"}});
    truncated[4] = 0xff;  // the container's length runs past the manifest
    CHECK(!refusal(forge::concat({base, truncated})).empty());
    // A million empty expression items cost one pass, refused at the first.
    forge::Bytes many;
    for (int i = 0; i < 100000; ++i) {
        const forge::Bytes e = item(6, forge::Bytes{}, 0);
        many.insert(many.end(), e.begin(), e.end());
    }
    CHECK(refusal(forge::concat({base, many})).find("needs its expression") != std::string::npos);
}

namespace {

// tests/data/user_names.cu as `sdm import --source ... --name-expression ...` makes it: module
// "first" (user_names.sm_90.cubin) and "second" (-DSECOND: test_sum alone), every kernel with its
// derived signature, and the expressions NVRTC lowered (the symbols nvcc gave).
ByteVector user_archive() {
    archive::ArchiveWriter writer;
    archive::Manifest m;
    m.kernel_abi_major = 1;
    for (const char* module : {"first", "second"}) {
        const ByteVector cubin = data_file(std::string(module) == "first" ? "user_names.sm_90.cubin" : "user_names_second.sm_90.cubin");
        REQUIRE(writer.add({module, archive::Kind::cubin, 90, archive::Variant::base, cubin}));
        const auto params = archive::cubin_kernel_params(cubin);
        REQUIRE(params);
        for (const auto& k : *params) m.kernels.push_back({k.name, module, k.signature, {}, {}});
    }
    m.expressions = {{"ptr_param<size_t>", "first", "_Z9ptr_paramImEvPT_"},
                     {"ptr_param<unsigned int>", "first", "_Z9ptr_paramIjEvPT_"},
                     {"non_type_param<float, (int)3>", "first", "_Z14non_type_paramIfLi3EEvPT_"},
                     {"enum_param<mylib::Tag::B>", "first", "_Z10enum_paramILN5mylib3TagE1EEvPi"},
                     {"shift<int>", "first", "_Z5shiftIivEvPT_S0_"},
                     {"sum_kernel", "first", "test_sum"},
                     {"sum_kernel", "second", "test_sum"}};
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

}  // namespace

TEST_CASE_METHOD(FakeRuntime, "recorded name expressions: typedefs, literal casts, enumerators, default arguments as their authors wrote them", "[names][expressions]") {
    mount(rt.get(), user_archive(), "user.sdma");
    const auto symbol = [&](const char* name) { return std::string(info_of(rt.get(), 0, name).name); };
    CHECK(symbol("ptr_param<size_t>") == "_Z9ptr_paramImEvPT_");
    CHECK(symbol("ptr_param< size_t >") == "_Z9ptr_paramImEvPT_");  // whitespace is not part of the key
    CHECK(symbol("ptr_param<unsigned int>") == "_Z9ptr_paramIjEvPT_");
    CHECK(symbol("ptr_param<unsigned  int>") == "_Z9ptr_paramIjEvPT_");
    CHECK(symbol("non_type_param<float,(int)3>") == "_Z14non_type_paramIfLi3EEvPT_");
    CHECK(symbol("enum_param<mylib::Tag::B>") == "_Z10enum_paramILN5mylib3TagE1EEvPi");
    CHECK(symbol("shift<int>") == "_Z5shiftIivEvPT_S0_");
    CHECK(std::string(info_of(rt.get(), 0, "first!shift<int>").module) == "first");
    info_of(rt.get(), 0, "second!shift<int>", SDM_ERROR_NOT_FOUND);  // module second has no shift
    CHECK(std::string(info_of(rt.get(), 0, "second!sum_kernel").module) == "second");
    std::string message;
    info_of(rt.get(), 0, "sum_kernel", SDM_ERROR_AMBIGUOUS, &message);  // recorded for both modules
    CHECK(message.find("first, second") != std::string::npos);
    // An enumerator nobody recorded: never a wrong match.
    info_of(rt.get(), 0, "enum_param<mylib::Tag::A>", SDM_ERROR_NOT_FOUND);
    // The extern "C" kernel both modules define.
    info_of(rt.get(), 0, "test_sum", SDM_ERROR_AMBIGUOUS, &message);
    CHECK(message.find("first, second") != std::string::npos);
    CHECK(std::string(info_of(rt.get(), 0, "second!test_sum").module) == "second");
}

TEST_CASE("expression_key: whitespace out, but between two identifier characters", "[names][expressions]") {
    CHECK(archive::expression_key("fill< float , 256 >") == "fill<float,256>");
    CHECK(archive::expression_key(" unsigned \t long ") == "unsigned long");
    CHECK(archive::expression_key("f<a::b< c > >") == "f<a::b<c>>");
    CHECK(archive::expression_key("f<(int) 3>") == "f<(int)3>");
}
