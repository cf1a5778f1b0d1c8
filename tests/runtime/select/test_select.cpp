// Image selection over the hardware matrix, the a/f variants and the modern-class exclusion.
#include <catch2/catch.hpp>

#include "runtime/select/image_fit.hpp"
#include "runtime/select/image_selection.hpp"

using namespace sdm;
using namespace sdm::runtime;
using archive::Kind;
using archive::Variant;

namespace {

std::vector<ImageCandidate> images(std::initializer_list<const char*> targets) {
    std::vector<ImageCandidate> out;
    for (const char* t : targets) {
        if (std::string(t) == "fatbin") {
            out.push_back({out.size(), Kind::fatbin, 0, Variant::base});
            continue;
        }
        const auto parsed = archive::parse_target(t);
        REQUIRE(parsed);
        out.push_back({out.size(), parsed->kind, parsed->sm, parsed->variant});
    }
    return out;
}

SelectionDevice device(int major, int minor) {
    const Capability cc{major, minor};
    const int sm = cc.sm();
    const DeviceClass c = (sm == 90 || sm == 100 || sm == 103) ? DeviceClass::modern : sm == 80 ? DeviceClass::a100 : DeviceClass::rtx;
    return {cc, c, "device 0 (test, compute capability " + std::to_string(major) + "." + std::to_string(minor) + ")"};
}

// The target chosen, as text ("sm_90a", "compute_90 -> sm_100", "fatbin"), or the error.
std::string chosen(const std::vector<ImageCandidate>& held, int major, int minor) {
    auto s = select_image(held, device(major, minor), "gather", "kernels.sdma");
    if (!s) return "error: " + s.error().message;
    const std::string image = s->image.kind == Kind::fatbin ? "fatbin" : archive::target_name(s->image.kind, s->image.sm, s->image.variant);
    if (s->path == SelectionPath::jit) return image + " -> " + archive::target_name(Kind::cubin, s->target_sm, s->target_variant);
    return image;
}



}  // namespace

TEST_CASE("the full default archive: every row gets its own cubin", "[select]") {
    const auto kFull = images({"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100f", "sm_103", "sm_120", "compute_80", "compute_90"});
    CHECK(chosen(kFull, 9, 0) == "sm_90a");   // a before base on exactly 9.0
    CHECK(chosen(kFull, 10, 0) == "sm_100");  // exact beats the family cubin
    CHECK(chosen(kFull, 10, 3) == "sm_103");
    CHECK(chosen(kFull, 8, 0) == "sm_80");
    CHECK(chosen(kFull, 8, 6) == "sm_86");
    CHECK(chosen(kFull, 8, 9) == "sm_89");
    CHECK(chosen(kFull, 12, 0) == "sm_120");
}

TEST_CASE("cubins of an older minor and family cubins", "[select]") {
    CHECK(chosen(images({"sm_80", "sm_86"}), 8, 9) == "sm_86");  // highest minor <= 9
    CHECK(chosen(images({"sm_80"}), 8, 6) == "sm_80");
    CHECK(chosen(images({"sm_100f", "sm_100"}), 10, 3) == "sm_100f");  // the family cubin before a base one
    CHECK(chosen(images({"sm_100"}), 10, 3) == "sm_100");
    CHECK(chosen(images({"sm_103f"}), 10, 0).rfind("error", 0) == 0);  // f needs minor <= the device's
    CHECK(chosen(images({"sm_90a"}), 9, 0) == "sm_90a");
    CHECK(chosen(images({"sm_100a"}), 10, 3).rfind("error", 0) == 0);  // a only on exactly 10.0
    CHECK(chosen(images({"sm_86"}), 8, 0).rfind("error", 0) == 0);     // a newer minor never runs
    CHECK(chosen(images({"sm_90"}), 10, 0).rfind("error", 0) == 0);    // another major never runs
}

TEST_CASE("PTX: the highest virtual arch that fits, linked for the device", "[select]") {
    CHECK(chosen(images({"compute_80", "compute_90"}), 10, 0) == "compute_90 -> sm_100");
    CHECK(chosen(images({"compute_80", "compute_90"}), 12, 0) == "compute_90 -> sm_120");
    CHECK(chosen(images({"compute_80", "compute_90"}), 8, 6) == "compute_80 -> sm_86");
    CHECK(chosen(images({"compute_80", "compute_90"}), 8, 0) == "compute_80 -> sm_80");
    CHECK(chosen(images({"compute_90a", "compute_90"}), 9, 0) == "compute_90a -> sm_90a");
    CHECK(chosen(images({"compute_90a"}), 10, 0).rfind("error", 0) == 0);
    CHECK(chosen(images({"compute_100f"}), 10, 3) == "compute_100f -> sm_103");
    CHECK(chosen(images({"lto_90", "compute_80"}), 9, 0) == "lto_90 -> sm_90");
    CHECK(chosen(images({"lto_90", "compute_90"}), 9, 0) == "compute_90 -> sm_90");  // PTX before LTO-IR
    CHECK(chosen(images({"sm_80", "compute_90"}), 9, 0) == "compute_90 -> sm_90");  // a fitting cubin is first, sm_80 does not run
    CHECK(chosen(images({"sm_86", "compute_80"}), 8, 9) == "sm_86");                 // a cubin before any JIT
}

TEST_CASE("modern devices do not take images older than the class", "[select]") {
    // compute_80 PTX would JIT on an H200, but compiles the portable path: refused.
    const std::string h200 = chosen(images({"sm_80", "sm_86", "compute_80"}), 9, 0);
    CHECK_THAT(h200, Catch::StartsWith("error:") && Catch::Contains("module gather of kernels.sdma has no image for device 0") &&
                         Catch::Contains("it holds sm_80, sm_86, compute_80") && Catch::Contains("compute_80 older than compute_90") &&
                         Catch::Contains("Add a cubin for sm_90 or PTX for compute_90"));
    CHECK(chosen(images({"compute_80"}), 10, 0).rfind("error", 0) == 0);
    CHECK(chosen(images({"compute_80"}), 8, 0) == "compute_80 -> sm_80");    // fine on a100
    CHECK(chosen(images({"compute_80"}), 12, 0) == "compute_80 -> sm_120");  // and on rtx
    CHECK(chosen(images({"compute_90"}), 10, 3) == "compute_90 -> sm_103");   // compute_90 is modern
}

TEST_CASE("a fatbin is the last resort; nothing at all is a clear error", "[select]") {
    CHECK(chosen(images({"compute_90", "fatbin"}), 8, 0) == "fatbin");
    CHECK(chosen(images({"sm_80", "fatbin"}), 8, 0) == "sm_80");
    auto none = select_image({}, device(9, 0), "gather", "kernels.sdma");
    REQUIRE_FALSE(none);
    CHECK(none.error().code == ErrorCode::no_image);
    CHECK_THAT(none.error().message, Catch::Contains("holds no images"));
    CHECK(runs_on(86, Variant::base, {8, 9}));
    CHECK_FALSE(runs_on(89, Variant::base, {8, 6}));
    CHECK_FALSE(runs_on(90, Variant::a, {10, 0}));
}

TEST_CASE("can_serve: every image select_image could choose for a capability, whatever the class", "[select]") {
    CHECK(can_serve(Kind::cubin, 80, Variant::base, {8, 6}));
    CHECK_FALSE(can_serve(Kind::cubin, 86, Variant::base, {8, 0}));
    CHECK_FALSE(can_serve(Kind::cubin, 80, Variant::base, {9, 0}));
    CHECK(can_serve(Kind::cubin, 90, Variant::a, {9, 0}));
    CHECK_FALSE(can_serve(Kind::cubin, 90, Variant::a, {10, 0}));
    CHECK(can_serve(Kind::cubin, 100, Variant::f, {10, 3}));
    CHECK_FALSE(can_serve(Kind::cubin, 103, Variant::f, {10, 0}));
    CHECK(can_serve(Kind::ptx, 80, Variant::base, {9, 0}));  // the modern class would not choose it; the device could use it
    CHECK_FALSE(can_serve(Kind::ptx, 100, Variant::base, {9, 0}));
    CHECK_FALSE(can_serve(Kind::ptx, 90, Variant::a, {10, 0}));
    CHECK(can_serve(Kind::ltoir, 100, Variant::f, {10, 3}));
    CHECK_FALSE(can_serve(Kind::ltoir, 100, Variant::f, {12, 0}));
    CHECK(can_serve(Kind::fatbin, 0, Variant::base, {7, 5}));
    CHECK_FALSE(can_serve(Kind::manifest, 0, Variant::base, {9, 0}));
    CHECK_FALSE(can_serve(Kind::dictionary, 0, Variant::base, {9, 0}));
}
