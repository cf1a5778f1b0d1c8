// The table of environment variables (runtime/platform/settings.hpp): each type's one grammar, with
// hostile values (huge, negative, garbage, empty), and each bad-value policy through a variable
// that has it.
#include <catch2/catch.hpp>

#include <set>

#include "runtime/platform/log.hpp"
#include "runtime/platform/settings.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::runtime;
using sdm::test::EnvGuard;

namespace {

struct Told {
    std::vector<std::string> lines;
    Logger log{[this](LogLevel, std::string_view m) { lines.emplace_back(m); }, LogLevel::debug};
};

}  // namespace

TEST_CASE("the table: one row per Id, in order, every field a message needs", "[settings]") {
    std::set<std::string> names;
    for (size_t i = 0; i < settings::all().size(); ++i) {
        const settings::Setting& s = settings::all()[i];
        INFO(s.name);
        CHECK(static_cast<size_t>(s.id) == i);
        CHECK(&settings::setting(s.id) == &s);
        CHECK(names.insert(s.name).second);
        CHECK((std::string_view(s.name).starts_with("SDM_") || std::string_view(s.name).starts_with("CUDA_")));
        CHECK(*s.default_text != '\0');
        CHECK(*s.doc != '\0');
        CHECK_FALSE(settings::grammar(s).empty());
        const bool number = s.type == settings::Type::size || s.type == settings::Type::count || s.type == settings::Type::seconds;
        if (number) CHECK(s.least <= s.most);
        // A policy only where a value can be bad; a strictest choice is one of the choices.
        CHECK((s.on_bad == settings::OnBad::none) == (s.type == settings::Type::flag || s.type == settings::Type::path || s.type == settings::Type::paths));
        if (s.on_bad == settings::OnBad::strictest) CHECK(std::string(" ") .append(s.choices).append(" ").find(std::string(" ") + s.strictest + " ") != std::string::npos);
    }
}

TEST_CASE("the size grammar: bytes, or K, M, G; nothing else", "[settings]") {
    CHECK(settings::parse_size("0") == 0u);
    CHECK(settings::parse_size("4096") == 4096u);
    CHECK(settings::parse_size("64M") == uint64_t{64} << 20);
    CHECK(settings::parse_size("8g") == uint64_t{8} << 30);
    CHECK(settings::parse_size("3k") == 3072u);
    CHECK(settings::parse_size("18446744073709551615") == UINT64_MAX);
    for (const char* bad : {"", "M", "-1", "+5", " 5", "5 ", "1.5G", "12T", "0x10", "lots", "18446744073709551616", "99999999999999999999999G",
                            "17179869184G", "5MB"}) {
        INFO(bad);
        CHECK_FALSE(settings::parse_size(bad));
    }
}

TEST_CASE("the count grammar: a decimal whole number", "[settings]") {
    CHECK(settings::parse_count("0") == 0u);
    CHECK(settings::parse_count("16") == 16u);
    for (const char* bad : {"", "-1", "+1", "two", "2x", "1.0", " 1", "99999999999999999999999"}) {
        INFO(bad);
        CHECK_FALSE(settings::parse_count(bad));
    }
}

TEST_CASE("the seconds grammar: a finite decimal number without a sign", "[settings]") {
    CHECK(settings::parse_seconds("0") == 0.0);
    CHECK(settings::parse_seconds("2.5") == 2.5);
    CHECK(settings::parse_seconds(".5") == 0.5);
    for (const char* bad : {"", "-1", "+1", "inf", "nan", "1e400", "soon", "5s", " 5", "0x10"}) {
        INFO(bad);
        CHECK_FALSE(settings::parse_seconds(bad));
    }
}

TEST_CASE("a flag: unset, empty or 0 is off; any other value is on", "[settings]") {
    using settings::Id;
    unsetenv("SDM_CACHE_DISABLE");
    CHECK_FALSE(settings::flag(Id::cache_disable));
    for (const auto& [value, on] : std::vector<std::pair<std::string, bool>>{{"", false}, {"0", false}, {"1", true}, {"yes", true}, {"00", true}}) {
        INFO(value);
        EnvGuard guard("SDM_CACHE_DISABLE", value);
        CHECK(settings::flag(Id::cache_disable) == on);
    }
}

TEST_CASE("a bad value: warn logs and keeps the default; its bounds hold", "[settings]") {
    using settings::Id;
    Told told;
    {
        EnvGuard guard("SDM_READAHEAD", "16");
        CHECK(settings::value_or(settings::count(Id::readahead, told.log), 3) == 16u);
    }
    for (const char* bad : {"17", "-1", "two", "18446744073709551616"}) {
        INFO(bad);
        EnvGuard guard("SDM_READAHEAD", bad);
        told.lines.clear();
        const auto read = settings::count(Id::readahead, told.log);
        REQUIRE(read);
        CHECK_FALSE(read->has_value());
        CHECK(settings::value_or(read, 3) == 3u);
        REQUIRE(told.lines.size() == 1);
        CHECK(told.lines[0] == "SDM_READAHEAD='" + std::string(bad) + "' is not a number of modules from 0 to 16; decoding the default number ahead "
                               "for this machine, half the cores from 2 to 8 (0 turns it off)");
    }
    {  // (least excluded: 0 is no time limit)
        EnvGuard guard("SDM_JIT_TIME_LIMIT", "0");
        told.lines.clear();
        CHECK(settings::value_or(settings::seconds(Id::jit_time_limit, told.log), kDefaultJitSeconds) == kDefaultJitSeconds);
        REQUIRE(told.lines.size() == 1);
        CHECK(told.lines[0] == "SDM_JIT_TIME_LIMIT='0' is not a number of seconds in (0, 86400]; using the default, 120 s");
    }
    {
        EnvGuard guard("SDM_JIT_TIME_LIMIT", "86400");
        CHECK(settings::value_or(settings::seconds(Id::jit_time_limit, told.log), 1) == kMostJitSeconds);
    }
    {
        EnvGuard guard("SDM_JIT_MEMORY_LIMIT", "63M");
        told.lines.clear();
        CHECK(settings::value_or(settings::size(Id::jit_memory_limit, told.log), kDefaultJitMemoryBytes) == kDefaultJitMemoryBytes);
        REQUIRE(told.lines.size() == 1);
        CHECK(told.lines[0] == "SDM_JIT_MEMORY_LIMIT='63M' is not a size of at least 64M (bytes, or with K, M or G); using the default, 8 GiB");
    }
    {  // a hostile value is shown printable, and cut
        EnvGuard guard("SDM_PROGRESS_INTERVAL", "\x1b[2J" + std::string(1000, '9'));
        told.lines.clear();
        CHECK(settings::value_or(settings::seconds(Id::progress_interval, told.log), 5) == 5.0);
        REQUIRE(told.lines.size() == 1);
        CHECK(told.lines[0].starts_with("SDM_PROGRESS_INTERVAL='\\x1b[2J999"));
        CHECK(told.lines[0].find("... (1004 bytes)' is not a number of seconds from 0 to 3600") != std::string::npos);
    }
    {  // an empty value is unset, never bad
        EnvGuard guard("SDM_LOAD_PATH", "");
        told.lines.clear();
        CHECK(settings::value_or(settings::choice(Id::load_path, told.log), "none") == "none");
        CHECK(told.lines.empty());
    }
    {
        EnvGuard guard("SDM_LOAD_PATH", "sideways");
        CHECK(settings::value_or(settings::choice(Id::load_path, told.log), "none") == "none");
        CHECK(told.lines.back() == "SDM_LOAD_PATH='sideways' is not module or library; it is ignored");
    }
}

TEST_CASE("a bad value: strictest logs and reads as the strictest choice", "[settings]") {
    using settings::Id;
    Told told;
    {
        EnvGuard guard("SDM_JIT_ISOLATION", "never");
        CHECK(settings::value_or(settings::choice(Id::jit_isolation, told.log), "") == "never");
        CHECK(told.lines.empty());
    }
    for (const char* bad : {"sometimes", "NEVER", "-1", "never "}) {
        INFO(bad);
        EnvGuard guard("SDM_JIT_ISOLATION", bad);
        told.lines.clear();
        CHECK(settings::value_or(settings::choice(Id::jit_isolation, told.log), "") == "always");
        REQUIRE(told.lines.size() == 1);
        CHECK(told.lines[0] == "SDM_JIT_ISOLATION='" + std::string(bad) + "' is not auto, always or never; every JIT runs isolated (always)");
    }
    EnvGuard guard("SDM_REQUIRE_SIGNED", "yes");
    CHECK(settings::value_or(settings::choice(Id::require_signed, told.log), "") == "1");
    CHECK(told.lines.back() == "SDM_REQUIRE_SIGNED='yes' is not 1, warn or 0; read as 1 (require)");
}

TEST_CASE("a bad value: refuse is the read's error, and nothing is logged", "[settings]") {
    using settings::Id;
    Told told;
    {
        EnvGuard guard("SDM_CACHE_MAX_BYTES", "2G");
        CHECK(settings::value_or(settings::size(Id::cache_max_bytes, told.log), 1) == uint64_t{2} << 30);
    }
    for (const char* bad : {"0", "lots", "-5", "99999999999999999999", "5000000000G"}) {
        INFO(bad);
        EnvGuard guard("SDM_CACHE_MAX_BYTES", bad);
        const auto read = settings::size(Id::cache_max_bytes, told.log);
        REQUIRE_FALSE(read);
        CHECK(read.error().code == ErrorCode::invalid_argument);
        CHECK(read.error().message == "SDM_CACHE_MAX_BYTES='" + std::string(bad) + "' is not a size of at least 1 (bytes, or with K, M or G); the cache is not opened");
    }
    CHECK(told.lines.empty());
    {
        EnvGuard guard("SDM_JIT_HELPER", "bin/sdm-jit-helper");
        const auto read = settings::path(Id::jit_helper);
        REQUIRE_FALSE(read);
        CHECK(read.error().message == "SDM_JIT_HELPER='bin/sdm-jit-helper' is not an absolute path; point it at sdm-jit-helper by its absolute path or unset it");
    }
    EnvGuard guard("SDM_JIT_HELPER", "/opt/sdm-jit-helper");
    CHECK(settings::value_or(settings::path(Id::jit_helper), "") == "/opt/sdm-jit-helper");
}

TEST_CASE("paths: ':'-separated, empty entries dropped", "[settings]") {
    EnvGuard guard("SDM_ARCHIVE_PATH", "::/a.sdma::b.sdma:");
    CHECK(settings::paths(settings::Id::archive_path) == std::vector<std::string>{"/a.sdma", "b.sdma"});
}
