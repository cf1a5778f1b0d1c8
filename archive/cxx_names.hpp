// C++ names of kernels: a mangled symbol demangled (the C++ runtime's demangler, as c++filt
// prints it), the spellings a user may look a kernel up by, and whitespace normalised so that
// "fill<float,256>" and "fill<float, 256>" are one name (docs/LOADING.md, "Kernel names").
// Symbols come from archives: every function is bounded by its input's length, and the demangler
// only sees symbols of at most kMaxDemangledSymbol bytes (its own limit refuses longer ones).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace sdm::archive {

inline constexpr size_t kMaxDemangledSymbol = 16 * 1024;

// `symbol` demangled (abi::__cxa_demangle: "void ns::fill<float, 256>(float*, float)"), or nullopt
// for a name that is not a mangled C++ symbol ("_Z..."), or that the demangler refuses.
std::optional<std::string> demangle(std::string_view symbol);

// Whitespace removed except one space between two characters of identifiers or numbers
// ("unsigned int", "int const*"): "fill< float , 256 >" -> "fill<float,256>".
std::string normalize_cxx(std::string_view text);

// The canonical spelling of a C++ name, in the words the demangler uses for what it means in the
// target ABI (LP64 Linux, which CUDA device code shares with its host), so that a user's spelling
// and a symbol's demangled name meet (docs/LOADING.md, "Kernel names"). normalize_cxx's whitespace,
// and, what needs no compiler:
//   - the toolkit's inline namespaces left out: libcu++'s ABI namespace ("cuda::std::__4::",
//     libc++'s "std::__1::"), "__cxx11"/"__cxx17"/"__cxx20", "__cpo", thrust's and CUB's versioned
//     ones ("thrust::THRUST_300001_SM_900_NS::", "cub::CUB_300001_SM_900::");
//   - the standard integer typedefs as the types they are (size_t -> unsigned long, int64_t ->
//     long, int8_t -> signed char, ...: unqualified, "::", "std::" or "cuda::std::"), CUDA's
//     half and bfloat16 typedefs (half -> __half), std::nullptr_t, cuda::std::dynamic_extent;
//   - builtin integer types in the demangler's words ("unsigned" -> "unsigned int", "long int" ->
//     "long", "long unsigned int" -> "unsigned long");
//   - integer literals as their decimal value, without suffix or cast to an integral type:
//     "3u", "3ul", "(int)3", "(unsigned long)3", "0x3" -> "3"; "'A'" and "(char)65" -> "65";
//     "(bool)1" -> "true". A cast to another type ("(mylib::Tag)1", an enumerator) is kept.
// Dropping a literal's type can make two symbols one spelling (f<3> and f<3u> of two templates):
// the caller tells them apart by their normalize_cxx spelling. One pass per rule; the result is
// at most 3 times the text's length (plus 16 bytes), and canonical_cxx of it is itself.
std::string canonical_cxx(std::string_view text);

// The template argument list that ends `name` ("<float,256>" of "ns::fill<float,256>"), "" when
// it has none.
std::string_view cxx_template_arguments(std::string_view name);

// Whether the template argument list `requested` ("<int>", canonical) names `symbol`'s ("<int,void>")
// with its trailing arguments left to their defaults: `requested`'s arguments are the first of
// `symbol`'s, whole ("<>": any). Whether the arguments left out are defaults a compiler would
// give, only a compiler knows: the caller accepts one such symbol only. One pass over `requested`.
bool template_arguments_prefix(std::string_view requested, std::string_view symbol);

// Whether the function template arguments of mangled `symbol` may hold an argument pack ("J...E"
// in them: "pack<int, float>" demangles as if it had two arguments, so it cannot be taken for a
// template with a default). False only where its name has template arguments, all of kinds it
// reads (types, names, literals), none a pack: anything it does not read counts as one. One pass.
bool mangled_template_pack(std::string_view symbol);

// How many qualifications of a name cxx_spellings gives at each level: the whole name and the
// shortest others ("a::b::c::f", then "c::f", "f" ...). A name of hundreds of levels (crafted, or
// generated) would otherwise add as many keys to the index, each as long as the name: its size
// squared. Real kernels are a few levels deep (cutlass::gemm::kernel::...: 4 or 5).
inline constexpr size_t kMaxQualifications = 8;

// The spellings a demangled (and normalised) declaration answers to, most specific first, each a
// view into `declaration`:
//   declaration  "void ns::fill<float,256>(float*,float)" (as printed, return type and all)
//   signature    "ns::fill<float,256>(float*,float)" and each shorter qualification "fill<float,256>(float*,float)"
//                (of a name with more than kMaxQualifications levels: the whole and the shortest)
//   expression   "ns::fill<float,256>" and "fill<float,256>" (a CuPy name expression: no parameter list)
//   base         "ns::fill" and "fill" (no template arguments)
struct CxxSpellings {
    std::string_view declaration;
    std::vector<std::string_view> signatures, expressions, bases;
};
CxxSpellings cxx_spellings(std::string_view declaration);

// Whether `text` may be a C++ name: its <>, () and [] balanced, in order. ErrorCode::invalid_argument
// naming the first bracket that is not ("an unclosed '<'", "a ')' without its '('").
Result<void> check_cxx_brackets(std::string_view text);

// The unqualified name without template arguments or parameters ("fill" of
// "void ns::fill<float,256>(float*,float)"), for "closest kernels" hints; the whole text when it
// has no such structure.
std::string_view cxx_base_name(std::string_view text);

// The base name of a mangled symbol without demangling it: the last <source-name> of its leading
// (nested) name ("fill" of "_ZN8sdm_test4fillIfLi256EEEvPT_S1_"), found in one pass over the text
// whatever its back-references; the whole symbol when it has no such name. For the hint of a
// failed lookup by a mangled name no archive lists (which is never demangled: kernel_names.hpp).
std::string_view mangled_base_name(std::string_view symbol);

}  // namespace sdm::archive
