// The hardware matrix, row by row (common/hardware_matrix.hpp; the seed's _device.backend()), and its refusals.
#include <catch2/catch.hpp>

#include "common/hardware_matrix.hpp"

using namespace sdm;

namespace {
struct Row {
    const char* name;
    Capability cc;
    int32_t smem;
    std::optional<DeviceClass> expected;
};
const Row kRows[] = {
    {"NVIDIA H100 80GB HBM3", {9, 0}, 232448, DeviceClass::modern},
    {"NVIDIA H200", {9, 0}, 232448, DeviceClass::modern},
    {"NVIDIA B200", {10, 0}, 232448, DeviceClass::modern},
    {"NVIDIA GB300", {10, 3}, 232448, DeviceClass::modern},
    {"a modern part with more opt-in smem", {10, 0}, 240000, DeviceClass::modern},
    {"NVIDIA A100-SXM4-80GB", {8, 0}, 166912, DeviceClass::a100},
    {"NVIDIA GeForce RTX 3090", {8, 6}, 101376, DeviceClass::rtx},
    {"NVIDIA GeForce RTX 4090", {8, 9}, 101376, DeviceClass::rtx},
    {"NVIDIA GeForce RTX 5090", {12, 0}, 101376, DeviceClass::rtx},
    {"Tesla V100-SXM2-16GB", {7, 0}, 98304, std::nullopt},
    {"Tesla T4", {7, 5}, 65536, std::nullopt},
    {"NVIDIA A30 (8.0, other smem)", {8, 0}, 101376, std::nullopt},
    {"an H100 with less opt-in smem", {9, 0}, 166912, std::nullopt},
    {"NVIDIA GH200 cut down", {9, 0}, 232447, std::nullopt},
    {"NVIDIA L40 (8.9, other smem)", {8, 9}, 166912, std::nullopt},
    {"Jetson Orin (8.7)", {8, 7}, 166912, std::nullopt},
    {"DGX Spark (12.1)", {12, 1}, 101376, std::nullopt},
    {"Rubin (11.0)", {11, 0}, 232448, std::nullopt},
};
}  // namespace

TEST_CASE("every row of the hardware matrix classifies as the seed's backend() does", "[device]") {
    for (const Row& row : kRows) {
        INFO(row.name);
        auto c = classify(3, row.name, row.cc, row.smem);
        if (row.expected) {
            REQUIRE(c);
            CHECK(*c == *row.expected);
        } else {
            REQUIRE_FALSE(c);
            CHECK(c.error().code == ErrorCode::unsupported_device);
            // The whole message, the RTX clause included: the seed's UNSUPPORTED, word for word.
            const std::string cap = std::to_string(row.cc.major) + "." + std::to_string(row.cc.minor);
            CHECK(c.error().message == "sparse_delta_memory supports NVIDIA H100 / B200 / GB300 (compute capability 9.0 / 10.0 / 10.3), A100 (8.0) "
                                       "and RTX 30 / 40 / 50 (8.6 / 8.9 / 12.0); device 3 (" + std::string(row.name) + ") has compute capability " +
                                           cap + " with " + std::to_string(row.smem) + " bytes of opt-in shared memory per block");
        }
    }
}

TEST_CASE("class properties: shared memory caps, per-SM budget, PDL and clusters", "[device]") {
    CHECK(class_smem_cap(DeviceClass::modern) == 232448);
    CHECK(class_smem_cap(DeviceClass::a100) == 166912);
    CHECK(class_smem_cap(DeviceClass::rtx) == 101376);
    CHECK(class_smem_per_sm(DeviceClass::modern) == 233472);
    CHECK(class_smem_per_sm(DeviceClass::a100) == 167936);
    CHECK(class_smem_per_sm(DeviceClass::rtx) == 102400);
    CHECK(class_allows_pdl(DeviceClass::modern));
    CHECK_FALSE(class_allows_pdl(DeviceClass::a100));
    CHECK_FALSE(class_allows_pdl(DeviceClass::rtx));
    CHECK(class_allows_clusters(DeviceClass::modern));
    CHECK_FALSE(class_allows_clusters(DeviceClass::rtx));
    CHECK(parse_device_class("a100") == DeviceClass::a100);
    CHECK_FALSE(parse_device_class("volta"));
    CHECK(std::string(device_class_name(DeviceClass::rtx)) == "rtx");
}
