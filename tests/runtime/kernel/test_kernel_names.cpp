// Kernels fetched by the C++ spellings their users write (docs/LOADING.md, "Kernel names"), through
// the C ABI and the fake driver, on tests/data/names.sm_90.cubin (names.cu) as `sdm import`
// archives it: the standard integer typedefs, literal casts and suffixes, character literals,
// thrust's and libcu++'s inline namespaces, default template arguments; AMBIGUOUS exactly where
// several kernels answer, NOT_FOUND exactly where none is the one asked for (an enumerator, a pack,
// a typedef of another type), never another kernel; the hint ranked by template arguments; and
// crafted requests and archive names that cost their size.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "archive/cxx_names.hpp"
#include "archive/kernel_params.hpp"
#include "archive/manifest.hpp"
#include "archive/writer.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;
using sdm::archive::canonical_cxx;

namespace {

// names.cu's archive as `sdm import` makes it: every kernel of the cubin, signatures derived.
sdm::ByteVector names_archive() {
    const sdm::ByteVector cubin = data_file("names.sm_90.cubin");
    sdm::archive::ArchiveWriter writer;
    REQUIRE(writer.add({"names", sdm::archive::Kind::cubin, 90, sdm::archive::Variant::base, cubin}));
    sdm::archive::Manifest m;
    m.kernel_abi_major = 1;
    m.hardware_matrix = false;
    auto params = sdm::archive::cubin_kernel_params(cubin);
    REQUIRE(params);
    for (const auto& k : *params) m.kernels.push_back({k.name, "names", k.signature, {}, {}});
    REQUIRE(writer.add({"manifest", sdm::archive::Kind::manifest, 0, sdm::archive::Variant::base, sdm::archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

struct NamedKernels : FakeRuntime {
    NamedKernels() { mount(rt.get(), names_archive(), "names.sdma"); }
    // The listed name `asked` resolves to, or "" with the status and message.
    std::string resolve(const std::string& asked, sdm_status* status = nullptr, std::string* message = nullptr) {
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_kernel_get(rt.get(), 0, asked.c_str(), nullptr, &k, &e);
        if (status != nullptr) *status = s;
        if (message != nullptr) *message = sdm_error_message(e);
        sdm_error_destroy(e);
        if (s != SDM_OK) return "";
        sdm_kernel_info info{};
        info.struct_size = sizeof info;
        REQUIRE(sdm_kernel_info_get(k, &info, nullptr) == SDM_OK);
        return info.name;
    }
    sdm_status status_of(const std::string& asked, std::string* message = nullptr) {
        sdm_status s = SDM_OK;
        (void)resolve(asked, &s, message);
        return s;
    }
};

}  // namespace

TEST_CASE("canonical spellings: inline namespaces, typedefs, builtin words, literals; idempotent", "[names][canonical]") {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"ptr_param<size_t>", "ptr_param<unsigned long>"},
        {"ptr_param< std::size_t >", "ptr_param<unsigned long>"},
        {"ptr_param<::cuda::std::int64_t>", "ptr_param<long>"},
        {"ptr_param<cuda::std::__4::uint8_t>", "ptr_param<unsigned char>"},
        {"ptr_param<mylib::size_t>", "ptr_param<mylib::size_t>"},  // a user's, not the standard one
        {"ptr_param<X<int>::size_t>", "ptr_param<X<int>::size_t>"},
        {"ptr_param<long unsigned int>", "ptr_param<unsigned long>"},
        {"ptr_param<unsigned>", "ptr_param<unsigned int>"},
        {"ptr_param<long long int>", "ptr_param<long long>"},  // never long
        {"ptr_param<int8_t, uint16_t, intptr_t>", "ptr_param<signed char,unsigned short,long>"},
        {"ptr_param<half, nv_bfloat16>", "ptr_param<__half,__nv_bfloat16>"},
        {"non_type_param<float, (int)3>", "non_type_param<float,3>"},
        {"non_type_param<float, 0x3UL>", "non_type_param<float,3>"},
        {"f<(unsigned long)18446744073709551615>", "f<18446744073709551615>"},
        {"f<3u, 3ul, 3ll, -3ll, 010, 0b11, 1'000>", "f<3,3,3,-3,8,3,1000>"},
        {"f<(short)-5, (char)65, 'A', '\\n', (bool)1, (bool)0>", "f<-5,65,65,10,true,false>"},
        {"f<(mylib::Tag)1>", "f<(mylib::Tag)1>"},  // an enumerator: kept
        {"f<1.5f, '\\xff'>", "f<1.5f,'\\xff'>"},   // not integers below 128: kept
        {"thrust::THRUST_300001_SM_900_NS::complex<float>", "thrust::complex<float>"},
        {"cub::CUB_300001_SM_800_900::Kernel<int>", "cub::Kernel<int>"},
        {"cuda::std::__4::extents<int, 4ul>", "cuda::std::extents<int,4>"},
        {"cuda::std::extents<int, cuda::std::dynamic_extent>", "cuda::std::extents<int,18446744073709551615>"},
        {"std::__cxx11::basic_string<char>", "std::basic_string<char>"},
        {"(anonymous namespace)::k(int*)", "(anonymous namespace)::k(int*)"},
    };
    for (const auto& [in, out] : cases) {
        INFO(in);
        CHECK(canonical_cxx(in) == out);
        CHECK(canonical_cxx(canonical_cxx(in)) == canonical_cxx(in));
    }
    // Hostile text: unclosed quotes, casts with nothing after them, a 3x growth at most.
    for (const std::string& in : std::vector<std::string>{"'", "u8'", "(int)", "(int)-", "'\\", "f<'>", std::string(4096, 'L') + "'", "uint,uint,uint"}) {
        INFO(in);
        const std::string c = canonical_cxx(in);
        CHECK(c.size() <= 3 * in.size() + 16);
        CHECK(canonical_cxx(c) == c);
    }
}

TEST_CASE("every spelling class resolves to its own symbol", "[names]") {
    NamedKernels f;
    const std::vector<std::pair<std::string, std::string>> cases{
        // the standard integer typedefs of LP64 Linux
        {"names::ptr_param<size_t>", "_ZN5names9ptr_paramImEEvPT_"},
        {"ptr_param<std::uint64_t>", "_ZN5names9ptr_paramImEEvPT_"},
        {"ptr_param<ptrdiff_t>", "_ZN5names9ptr_paramIlEEvPT_"},
        {"ptr_param<int64_t>", "_ZN5names9ptr_paramIlEEvPT_"},
        {"ptr_param<long long>", "_ZN5names9ptr_paramIxEEvPT_"},
        {"ptr_param<int32_t>", "_ZN5names9ptr_paramIiEEvPT_"},
        {"ptr_param<uint32_t>", "_ZN5names9ptr_paramIjEEvPT_"},
        {"ptr_param<unsigned>", "_ZN5names9ptr_paramIjEEvPT_"},
        {"ptr_param<int16_t>", "_ZN5names9ptr_paramIsEEvPT_"},
        {"ptr_param<int8_t>", "_ZN5names9ptr_paramIaEEvPT_"},
        {"ptr_param<::uint8_t>", "_ZN5names9ptr_paramIhEEvPT_"},
        {"ptr_param<char>", "_ZN5names9ptr_paramIcEEvPT_"},
        {"ptr_param<half>", "_ZN5names9ptr_paramI6__halfEEvPT_"},
        {"ptr_param<size_t>(size_t*)", "_ZN5names9ptr_paramImEEvPT_"},  // in a signature too
        // literal casts and suffixes, as users write them and as the demangler prints them
        {"non_type_param<float, (int)3>", "_ZN5names14non_type_paramIfLi3EEEvPT_"},
        {"non_type_param<float, 3>", "_ZN5names14non_type_paramIfLi3EEEvPT_"},
        {"non_type_param<float, -2>", "_ZN5names14non_type_paramIfLin2EEEvPT_"},
        {"non_type_param<float, (int)-2>", "_ZN5names14non_type_paramIfLin2EEEvPT_"},
        {"unsigned_param<3>", "_ZN5names14unsigned_paramILj3EEEvPi"},
        {"unsigned_param<3u>", "_ZN5names14unsigned_paramILj3EEEvPi"},
        {"unsigned_param<(unsigned)3>", "_ZN5names14unsigned_paramILj3EEEvPi"},
        {"size_param<16>", "_ZN5names10size_paramILm16EEEvPi"},
        {"size_param<16ul>", "_ZN5names10size_paramILm16EEEvPi"},
        {"size_param<(size_t)16>", "_ZN5names10size_paramILm16EEEvPi"},
        {"size_param<0x10>", "_ZN5names10size_paramILm16EEEvPi"},
        {"long_long_param<-3>", "_ZN5names15long_long_paramILxn3EEEvPi"},
        {"long_long_param<-3LL>", "_ZN5names15long_long_paramILxn3EEEvPi"},
        {"char_param<'A'>", "_ZN5names10char_paramILc65EEEvPi"},
        {"char_param<(char)65>", "_ZN5names10char_paramILc65EEEvPi"},
        {"char_param<65>", "_ZN5names10char_paramILc65EEEvPi"},
        {"bool_param<true>", "_ZN5names10bool_paramILb1EEEvPi"},
        {"bool_param<(bool)1>", "_ZN5names10bool_paramILb1EEEvPi"},
        {"short_param<-5>", "_ZN5names11short_paramILsn5EEEvPi"},
        {"byte_param<200>", "_ZN5names10byte_paramILh200EEEvPi"},
        {"byte_param<(uint8_t)200>", "_ZN5names10byte_paramILh200EEEvPi"},
        // two templates one canonical spelling names: the one spelled as asked
        {"overload<3>", "_ZN5names8overloadILi3EEEvPi"},
        {"overload<3u>", "_ZN5names8overloadILj3EEEvPj"},
        // an enumerator as the symbol spells it
        {"enum_param<(mylib::Tag)1>", "_ZN5names10enum_paramILN5mylib3TagE1EEEvPi"},
        // default template arguments, one kernel answering
        {"shift<int>", "_ZN5names5shiftIivEEvPT_"},
        {"names::shift<int32_t>", "_ZN5names5shiftIivEEvPT_"},
        {"shift<>", "_ZN5names5shiftIivEEvPT_"},
        {"shift<int, void>", "_ZN5names5shiftIivEEvPT_"},
        {"twice<float, 8>", "_ZN5names5twiceIfLi8EEEvPT_"},
        {"pack<int, float>", "_ZN5names4packIJifEEEvPi"},
        // thrust's versioned inline namespace, libcu++'s ABI namespace
        {"scale<thrust::complex<float>>", "_ZN5names5scaleIN6thrust23THRUST_300001_SM_900_NS7complexIfEEEEvPT_"},
        {"names::scale< thrust::complex<double> >", "_ZN5names5scaleIN6thrust23THRUST_300001_SM_900_NS7complexIdEEEEvPT_"},
        {"scale<thrust::THRUST_300001_SM_900_NS::complex<float>>", "_ZN5names5scaleIN6thrust23THRUST_300001_SM_900_NS7complexIfEEEEvPT_"},
        {"scale<float>", "_ZN5names5scaleIfEEvPT_"},
        {"fill_2d<thrust::complex<float>>",
         "_ZN5names7fill_2dIN6thrust23THRUST_300001_SM_900_NS7complexIfEEEEvN4cuda3std3__46mdspanIT_NS7_7extentsIiJLm18446744073709551615ELm18446744073709551615EEEENS7_12layout_rightENS7_16default_accessorIS9_EEEE"},
        {"fill_2d<half>",
         "_ZN5names7fill_2dI6__halfEEvN4cuda3std3__46mdspanIT_NS4_7extentsIiJLm18446744073709551615ELm18446744073709551615EEEENS4_12layout_rightENS4_16default_accessorIS6_EEEE"},
        {"fill_view<cuda::std::mdspan<float, cuda::std::extents<int, 4, 4>, cuda::std::layout_right, cuda::std::default_accessor<float>>>",
         "_ZN5names9fill_viewIN4cuda3std3__46mdspanIfNS3_7extentsIiJLm4ELm4EEEENS3_12layout_rightENS3_16default_accessorIfEEEEEEvT_"},
        {"fill_2d<float>(cuda::std::mdspan<float, cuda::std::extents<int, cuda::std::dynamic_extent, cuda::std::dynamic_extent>, cuda::std::layout_right, "
         "cuda::std::default_accessor<float>>)",
         "_ZN5names7fill_2dIfEEvN4cuda3std3__46mdspanIT_NS3_7extentsIiJLm18446744073709551615ELm18446744073709551615EEEENS3_12layout_rightENS3_16default_accessorIS5_EEEE"},
    };
    size_t resolved = 0;
    for (const auto& [asked, symbol] : cases) {
        sdm_status s = SDM_OK;
        std::string why;
        const std::string got = f.resolve(asked, &s, &why);
        INFO(asked << ": " << sdm_status_string(s) << ": " << why);
        CHECK(got == symbol);
        resolved += got == symbol ? 1 : 0;
    }
    CHECK(resolved == cases.size());
}

TEST_CASE("every kernel's own demangled name, and its canonical form, resolve to itself: no lookup is served by another kernel", "[names]") {
    NamedKernels f;
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(f.rt.get(), 0, &list, nullptr) == SDM_OK);
    uint32_t count = 0;
    REQUIRE(sdm_kernel_list_count(list, &count, nullptr) == SDM_OK);
    CHECK(count >= 30);
    for (uint32_t i = 0; i < count; ++i) {
        sdm_kernel_entry entry{};
        entry.struct_size = sizeof entry;
        REQUIRE(sdm_kernel_list_get(list, i, &entry, nullptr) == SDM_OK);
        const std::string demangled = entry.demangled;
        if (demangled.empty()) continue;
        INFO(demangled);
        CHECK(f.resolve(demangled) == entry.name);
        CHECK(f.resolve(canonical_cxx(demangled)) == entry.name);
    }
    sdm_kernel_list_destroy(list);
}

TEST_CASE("AMBIGUOUS where several kernels answer, NOT_FOUND where none is the one asked for", "[names][hostile]") {
    NamedKernels f;
    std::string why;
    // Default template arguments: only a compiler knows twice's default is 4, so twice<float> is either.
    CHECK(f.status_of("twice<float>", &why) == SDM_ERROR_AMBIGUOUS);
    CHECK_THAT(why, Catch::Contains("matches 2 kernels whose first template arguments are these") && Catch::Contains("twice<float, 4>") &&
                        Catch::Contains("twice<float, 8>"));
    CHECK(f.status_of("overload<(long)3>", &why) == SDM_ERROR_AMBIGUOUS);  // neither is spelled so
    CHECK(f.status_of("scale", &why) == SDM_ERROR_AMBIGUOUS);
    const std::vector<std::string> missing{
        "ptr_param<uint16_t>",                        // unsigned short: not instantiated
        "ptr_param<unsigned long long>",              // not unsigned long
        "ptr_param<mylib::size_t>",                   // a user's typedef needs a compiler
        "ptr_param<intptr_t*>",                       // a pointer is another type
        "non_type_param<float, 4>",                   //
        "non_type_param<float, 3u, 1>",               // more arguments than any symbol
        "unsigned_param<4>",                          //
        "char_param<'B'>",                            //
        "char_param<'<'>", "char_param<'>'>",         // a quoted bracket is no bracket
        "bool_param<false>", "bool_param<1>",         // an int is no bool
        "pack<int>",                                  // a pack is no default: pack<int> is another kernel
        "twice<double>",                              //
        "shift<float>",                               //
        "scale<thrust::complex<half>>",               //
        "scale<cuda::std::complex<float>>",           // libcu++'s complex is not thrust's
        "fill_view<cuda::std::mdspan<float, cuda::std::extents<int, 4>>>",  // rank 1: extents is a pack
        "fill_view<cuda::std::mdspan<float, cuda::std::extents<int, 4, 4>>>",  // nested defaults: not matched
        "enum_param<mylib::Tag::B>",                  // an enumerator needs a compiler
        "enum_param<1>",                              // an int is no enumerator
        "mylib::shift<int>",                          // another namespace
    };
    for (const auto& asked : missing) {
        INFO(asked);
        CHECK(f.status_of(asked, &why) == SDM_ERROR_NOT_FOUND);
        CHECK_THAT(why, Catch::Contains("is in no mounted archive"));
    }
    (void)f.status_of("enum_param<mylib::Tag::B>", &why);
    CHECK_THAT(why, Catch::Contains("the closest: void names::enum_param<(mylib::Tag)1>(int*)") && Catch::Contains("its value cast to its type"));
}

TEST_CASE("the not-found hint ranks the nearest base names by their template arguments", "[names]") {
    NamedKernels f;
    std::string why;
    CHECK(f.status_of("fill_2d<thrust::complex<double>>", &why) == SDM_ERROR_NOT_FOUND);
    // The complex<float> kernel first, not the __half one found before it.
    CHECK_THAT(why, Catch::Contains("the closest: void names::fill_2d<thrust::THRUST_300001_SM_900_NS::complex<float> >"));
    CHECK(f.status_of("names::fill_2d<thrust::complex<double>>(int)", &why) == SDM_ERROR_NOT_FOUND);  // a signature: its name's arguments
    CHECK_THAT(why, Catch::Contains("the closest: void names::fill_2d<thrust::THRUST_300001_SM_900_NS::complex<float> >"));
    CHECK(f.status_of("ptr_param<unsigned short>", &why) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(why, Catch::Contains("the closest: void names::ptr_param<unsigned"));
    CHECK(f.status_of("scal<float>", &why) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(why, Catch::Contains("the closest: void names::scale<float>(float*)"));
}

TEST_CASE("crafted requests and archive names cost their size", "[names][hostile]") {
    NamedKernels f;
    std::string why;
    // 64 Ki typedefs, casts, quotes, inline namespaces: one pass each, bounded messages.
    std::string request = "ptr_param<";
    for (int i = 0; i < 16384; ++i) request += "size_t,(int)3,'a',__4::";
    request += "int>";
    CHECK(f.status_of(request, &why) == SDM_ERROR_NOT_FOUND);
    CHECK(why.size() < 4096);
    CHECK(f.status_of("shift<" + std::string(65536, '\'') + ">", &why) != SDM_OK);
    std::string escaped = "shift<";  // a quote nothing closes, then 32 Ki more: one pass, not one per quote
    for (int i = 0; i < 32768; ++i) escaped += "'\\";
    CHECK(f.status_of(escaped + ">", &why) == SDM_ERROR_NOT_FOUND);
    // An archive of 1,000 kernels of one template whose argument lists are prefixes of each other
    // (f<int>, f<int, int>, ...): a lookup by defaults compares each once, and lists 10.
    std::vector<std::string> names;
    std::string arguments;
    for (int i = 0; i < 1000; ++i) {
        arguments += "i";
        names.push_back("_Z1fI" + arguments + "EvPv");
    }
    FakeRuntime g;
    mount(g.rt.get(), make_archive("m", {"sm_90"}, names, 1, Matrix::none), "prefixes.sdma");
    // The status of a lookup; the kernels of this archive are absent from its image, so one that
    // resolves fails its fetch with "lacks kernel(s)", not "in no mounted archive".
    const auto lookup = [&](const std::string& asked, std::string& message) {
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_kernel_get(g.rt.get(), 0, asked.c_str(), nullptr, &k, &e);
        message = sdm_error_message(e);
        sdm_error_destroy(e);
        return s;
    };
    (void)lookup("f<int, int, int>", why);
    CHECK_THAT(why, Catch::Contains("lacks kernel(s)") && Catch::Contains("_Z1fIiiiEvPv"));
    CHECK(lookup("f<>", why) == SDM_ERROR_AMBIGUOUS);
    CHECK_THAT(why, Catch::Contains("matches 1000 kernels") && Catch::Contains("and 990 more"));
    CHECK(lookup("f<long>", why) == SDM_ERROR_NOT_FOUND);
}
