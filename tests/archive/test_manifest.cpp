// The manifest: binary round trip, forward compatibility of its TLV tree, validation, and the
// TOML source the packer reads.
#include <catch2/catch.hpp>

#include "archive/manifest.hpp"
#include "tools/manifest_source.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {
std::string source_error(const std::string& toml) {
    auto m = tools::parse_manifest_source(toml, "m.toml");
    return m ? std::string() : m.error().message;
}
const std::string kHeader = "[archive]\nkernel_abi = \"1.0\"\n";
}  // namespace

TEST_CASE("manifest round trip: TOML -> binary -> manifest -> TOML", "[manifest]") {
    const Manifest m = test::test_manifest();
    CHECK(m.kernel_abi_major == 1);
    CHECK(m.kernel_abi_minor == 2);
    CHECK(m.content_version == "tests.1");
    REQUIRE(m.kernels.size() == 2);
    auto bytes = encode_manifest(m);
    REQUIRE(bytes);
    auto back = decode_manifest(*bytes);
    REQUIRE(back);
    REQUIRE(back->kernels.size() == 2);
    const KernelSpec* scale = back->find_kernel("scale");
    REQUIRE(scale);
    CHECK(scale->module == "kernels");
    CHECK(signature_text(scale->signature) == "ptr,f32,i32");
    CHECK(scale->problem == std::vector<std::string>{"N"});
    REQUIRE(scale->plans.size() == 5);
    CHECK(scale->plans[0].capability == 90);
    CHECK(scale->plans[0].pdl == "1");
    CHECK(scale->plans[1].cluster[0] == "2");
    CHECK(scale->plans[1].when == "N > l2_bytes / 4");
    CHECK(scale->plans == m.find_kernel("scale")->plans);
    CHECK(back->find_kernel("missing") == nullptr);
    // The TOML the tool writes back parses to the same manifest.
    auto again = tools::parse_manifest_source(tools::format_manifest_source(*back), "extracted.toml");
    REQUIRE(again);
    CHECK(encode_manifest(*again).value() == *bytes);
}

TEST_CASE("a later minor's optional fields are skipped, its required ones refused", "[manifest]") {
    auto bytes = encode_manifest(test::test_manifest()).value();
    // Append a top-level item with an unknown tag (99): optional first, then required.
    ByteVector optional = bytes;
    const std::byte item[12] = {std::byte{99}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{4}, std::byte{0},
                                std::byte{0},  std::byte{0}, std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    optional.insert(optional.end(), std::begin(item), std::end(item));
    store_u32(optional, 8, static_cast<uint32_t>(optional.size() - 12));  // the body size in the preamble
    auto decoded = decode_manifest(optional);
    REQUIRE(decoded);
    CHECK(decoded->kernels.size() == 2);

    ByteVector required = optional;
    required[bytes.size() + 2] = std::byte{1};  // flags: required
    auto refused = decode_manifest(required);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::archive_unsupported);
    CHECK_THAT(refused.error().message, Catch::Contains("required field 99") && Catch::Contains("update sdm"));

    ByteVector newer = bytes;
    store_u16(newer, 4, 2);
    CHECK(decode_manifest(newer).error().code == ErrorCode::archive_unsupported);

    ByteVector truncated(bytes.begin(), bytes.end() - 3);
    CHECK_THAT(decode_manifest(truncated).error().message, Catch::Contains("truncated or extended"));
    store_u32(truncated, 8, static_cast<uint32_t>(truncated.size() - 12));
    CHECK_THAT(decode_manifest(truncated).error().message, Catch::Contains("runs past its container"));
    CHECK_THAT(decode_manifest(as_bytes("not a manifest")).error().message, Catch::Contains("no manifest magic"));
    // Every truncation fails cleanly.
    for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_manifest(Bytes(bytes).first(n)));
}

TEST_CASE("manifest validation names the kernel and the rule", "[manifest]") {
    const auto scale = [](Manifest& m) -> KernelSpec& { return m.kernels.at(m.kernels[0].name == "scale" ? 0 : 1); };
    Manifest m = test::test_manifest();
    scale(m).plans[0].device_class = "volta";
    CHECK_THAT(validate_manifest(m).error().message, Catch::Contains("kernel scale plan rule 0") && Catch::Contains("class must be modern, a100 or rtx"));
    m = test::test_manifest();
    scale(m).plans[2].device_class = "rtx";
    scale(m).plans[2].capability = 90;
    CHECK_THAT(validate_manifest(m).error().message, Catch::Contains("capability 9.0 is not in class rtx"));
    m = test::test_manifest();
    scale(m).plans[0].block = "smem * 2";  // smem is computed after block
    CHECK_THAT(validate_manifest(m).error().message, Catch::Contains("unknown name 'smem'"));
    m = test::test_manifest();
    m.kernels.push_back(m.kernels[0]);
    CHECK_THAT(validate_manifest(m).error().message, Catch::Contains("listed twice"));
    m = test::test_manifest();
    scale(m).problem.push_back("sms");
    CHECK_THAT(validate_manifest(m).error().message, Catch::Contains("problem parameter 'sms'"));
    CHECK_THAT(parse_signature("ptr,float").error().message, Catch::Contains("unknown type 'float'"));
    CHECK(parse_signature("ptr, i32 ,f64")->size() == 3);
    CHECK(parse_signature("")->empty());
}

TEST_CASE("manifest source errors carry file, line and column", "[manifest]") {
    CHECK_THAT(source_error("[archive]\nkernel_abi = 1\n"), Catch::Contains("m.toml:2") && Catch::Contains("\"major.minor\""));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"ptr\"\nsignatur = \"x\"\n"),
               Catch::Contains("m.toml:7") && Catch::Contains("unknown key 'signatur'"));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\n"), Catch::Contains("needs 'signature'"));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"ptr\"\n[[kernel.plan]]\nclass = \"modern\"\nblock = 1\n"),
               Catch::Contains("needs block and grid"));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"ptr\"\n[[kernel.plan]]\nclass = \"modern\"\n"
                                      "block = \"2 +\"\ngrid = 1\n"),
               Catch::Contains("plan expression '2 +'"));
    CHECK_THAT(source_error("[archive\n"), Catch::Contains("m.toml:1"));
    CHECK_THAT(source_error("kernel_abi = \"1.0\"\n"), Catch::Contains("unknown key 'kernel_abi'"));
}

TEST_CASE("manifest source 1.1: hardware_matrix, capability ranges without a class, the extended types; round trip", "[manifest]") {
    const std::string source = kHeader + "hardware_matrix = \"sdm\"\n"
                               "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"ptr,f16,bf16,opaque:40:8,b32\"\nproblem = [\"N\"]\n"
                               "[[kernel.plan]]\ncapability_min = \"7.0\"\ncapability_max = \"8.9\"\nblock = 128\ngrid = \"sms\"\n";
    auto m = tools::parse_manifest_source(source, "m.toml");
    REQUIRE(m);
    CHECK(m->hardware_matrix);
    REQUIRE(m->kernels.size() == 1);
    const auto& rule = m->kernels[0].plans.at(0);
    CHECK(rule.device_class.empty());
    CHECK(rule.capability_min == 70);
    CHECK(rule.capability_max == 89);
    CHECK(signature_text(m->kernels[0].signature) == "ptr,f16,bf16,opaque:40:8,b32");
    // Binary and back: the minor-1 manifest keeps every field, and TOML again gives the same manifest.
    auto bytes = encode_manifest(*m);
    REQUIRE(bytes);
    CHECK(load_u16(*bytes, 6) == 1);  // manifest minor 1
    auto back = decode_manifest(*bytes);
    REQUIRE(back);
    CHECK(back->hardware_matrix);
    CHECK(back->kernels.at(0).plans == m->kernels[0].plans);
    CHECK(back->kernels.at(0).signature == m->kernels[0].signature);
    CHECK(encode_manifest(*back).value() == *bytes);
    auto again = tools::parse_manifest_source(tools::format_manifest_source(*back), "extracted.toml");
    REQUIRE(again);
    CHECK(encode_manifest(*again).value() == *bytes);
    // A manifest without minor-1 fields stays minor 0, the matrix tag included.
    auto plain = test::test_manifest();
    plain.hardware_matrix = true;
    CHECK(load_u16(encode_manifest(plain).value(), 6) == 0);
    CHECK(decode_manifest(encode_manifest(plain).value())->hardware_matrix);

    CHECK_THAT(source_error(kHeader + "hardware_matrix = \"cutlass\"\n"), Catch::Contains("hardware_matrix 'cutlass' is not one sdm knows"));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"ptr\"\n[[kernel.plan]]\nblock = 1\ngrid = 1\n"),
               Catch::Contains("needs 'class'"));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"opaque:40:3\"\n"),
               Catch::Contains("power of two"));
}

TEST_CASE("manifest 1.1 3-D plan rules: block and grid as arrays, tags 14-17 required and written only when used; round trip", "[manifest][plan]") {
    const std::string source = kHeader +
                               "[[kernel]]\nname = \"matmul\"\nmodule = \"m\"\nsignature = \"ptr,ptr,ptr,i32\"\nproblem = [\"N\"]\n"
                               "[[kernel.plan]]\nclass = \"modern\"\nblock = [16, 16]\ngrid = [\"(N + 15) / 16\", \"(N + 15) / 16\", 1]\n";
    auto m = tools::parse_manifest_source(source, "m.toml");
    REQUIRE(m);
    const auto& rule = m->kernels.at(0).plans.at(0);
    CHECK((rule.block == "16" && rule.block_y == "16" && rule.block_z == "1"));
    CHECK((rule.grid == "(N + 15) / 16" && rule.grid_y == "(N + 15) / 16" && rule.grid_z == "1"));
    auto bytes = encode_manifest(*m);
    REQUIRE(bytes);
    CHECK(load_u16(*bytes, 6) == 1);  // a 3-D rule needs manifest minor 1
    auto back = decode_manifest(*bytes);
    REQUIRE(back);
    CHECK(back->kernels.at(0).plans == m->kernels.at(0).plans);
    auto again = tools::parse_manifest_source(tools::format_manifest_source(*back), "extracted.toml");
    REQUIRE(again);
    CHECK(encode_manifest(*again).value() == *bytes);
    // A 1-D rule is written without the new tags: the bytes of every earlier writer.
    auto flat = *m;
    auto& r = flat.kernels[0].plans[0];
    r.block_y = r.grid_y = "1";
    const auto flat_bytes = encode_manifest(flat).value();
    CHECK(load_u16(flat_bytes, 6) == 0);
    CHECK(flat_bytes.size() < bytes->size());
    // Expressions of the new fields are checked like the others: block_y sees no outputs.
    auto wrong = *m;
    wrong.kernels[0].plans[0].block_y = "smem / 2";
    CHECK_THAT(validate_manifest(wrong).error().message, Catch::Contains("unknown name 'smem'"));
    CHECK_THAT(source_error(kHeader + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"ptr\"\n[[kernel.plan]]\nclass = \"modern\"\nblock = [1, 2, 3, 4]\ngrid = 1\n"),
               Catch::Contains("block must be an expression or an array of 1 to 3 expressions [x, y, z]"));
}
