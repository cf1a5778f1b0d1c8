// archive_bench: archive size against nvcc's compressed fatbins, and the time to open an archive
// and look up one entry. Inputs are real nvcc output named as bench/meson.build writes it:
//   MODULE.sm_XY.cubin  MODULE.compute_XY.ptx  MODULE.fatbin
// Prints markdown tables on stdout. Speed is never asserted: this is not a test.
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/bytes.hpp"
#include "archive/file_map.hpp"
#include "archive/format.hpp"
#include "archive/archive.hpp"
#include "archive/writer.hpp"

namespace {

namespace fs = std::filesystem;
using namespace sdm;
using namespace sdm::archive;
using Clock = std::chrono::steady_clock;

struct Image {
    std::string module;
    Kind kind{Kind::cubin};
    uint16_t sm{0};
    Variant variant{Variant::base};
    std::string path;
    ByteVector bytes;
};

struct Fatbin {
    std::string module;
    std::string path;
    ByteVector bytes;
};

struct Options {
    std::vector<std::string> inputs;
    std::string toolchain;
    std::string scratch;
    size_t entries{1024};
    size_t iterations{2000};
    int level{19};
    bool detail{true};
    bool size{true};
    bool open{true};
};

[[noreturn]] void die(const std::string& message) {
    fmt::print(stderr, "archive_bench: {}\n", message);
    std::exit(1);
}

void usage() {
    fmt::print(
        "usage: archive_bench [options] [--corpus] FILE|DIR...\n"
        "  FILE: MODULE.sm_XY.cubin, MODULE.compute_XY.ptx or MODULE.fatbin (nvcc -fatbin -compress-mode=size)\n"
        "  DIR:  every such file directly inside it (e.g. <builddir>/bench)\n"
        "options:\n"
        "  --entries N      entries of the synthesized open-time archive (default 1024)\n"
        "  --iterations N   timed open+lookup iterations per method (default 2000)\n"
        "  --level N        zstd level of the size tables (default 19, the writer's default)\n"
        "  --scratch DIR    where the open_file archive is written (default: the system temp dir)\n"
        "  --toolchain TEXT nvcc version, printed in the preamble\n"
        "  --no-detail      skip the per-entry table\n"
        "  --no-size        skip the size tables\n"
        "  --no-open        skip the open-time table\n");
}

Options parse_args(int argc, char** argv) {
    Options o;
    const auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc) die(std::string(argv[i]) + " needs a value");
        return argv[++i];
    };
    const auto number = [&](int& i) -> size_t {
        const std::string v = value(i);
        try {
            return static_cast<size_t>(std::stoull(v));
        } catch (const std::exception&) {
            die(std::string(argv[i - 1]) + ": '" + v + "' is not a number");
        }
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage();
            std::exit(0);
        } else if (a == "--corpus") {
            continue;  // marks where the files start; files are accepted anywhere
        } else if (a == "--entries") {
            o.entries = number(i);
        } else if (a == "--iterations") {
            o.iterations = std::max<size_t>(1, number(i));
        } else if (a == "--level") {
            o.level = static_cast<int>(number(i));
        } else if (a == "--scratch") {
            o.scratch = value(i);
        } else if (a == "--toolchain") {
            o.toolchain = value(i);
        } else if (a == "--no-detail") {
            o.detail = false;
        } else if (a == "--no-size") {
            o.size = false;
        } else if (a == "--no-open") {
            o.open = false;
        } else if (a.starts_with("-")) {
            die("unknown option " + a + " (--help)");
        } else {
            o.inputs.push_back(a);
        }
    }
    if (o.inputs.empty()) {
        usage();
        std::exit(2);
    }
    return o;
}

// MODULE.TARGET.EXT or MODULE.fatbin; anything else is not corpus and skipped (from a directory)
// or refused (named on the command line).
bool classify(const fs::path& path, std::vector<Image>& images, std::vector<Fatbin>& fatbins, bool named) {
    const std::string file = path.filename().string();
    const std::string ext = path.extension().string();
    const auto load = [&] {
        auto bytes = read_file(path.string());
        if (!bytes) die(bytes.error().message);
        return std::move(*bytes);
    };
    if (ext == ".fatbin") {
        fatbins.push_back({path.stem().string(), path.string(), load()});
        return true;
    }
    if (ext == ".cubin" || ext == ".ptx") {
        const std::string stem = path.stem().string();
        const auto dot = stem.rfind('.');
        const auto target = dot == std::string::npos ? std::nullopt : parse_target(std::string_view(stem).substr(dot + 1));
        const Kind want = ext == ".cubin" ? Kind::cubin : Kind::ptx;
        if (!target || target->kind != want) {
            if (named) die(file + ": expected MODULE.sm_XY.cubin or MODULE.compute_XY.ptx");
            return false;
        }
        images.push_back({stem.substr(0, dot), target->kind, target->sm, target->variant, path.string(), load()});
        return true;
    }
    if (named) die(file + ": not a .cubin, .ptx or .fatbin");
    return false;
}

struct Packed {
    ByteVector bytes;
    WriterReport report;
    double seconds{0};
};

Packed pack(const std::vector<const Image*>& images, const WriterOptions& options, const std::vector<std::string>* names = nullptr) {
    ArchiveWriter writer(options);
    for (size_t i = 0; i < images.size(); ++i) {
        const Image& im = *images[i];
        auto added = writer.add({names ? (*names)[i] : im.module, im.kind, im.sm, im.variant, im.bytes});
        if (!added) die(im.path + ": " + added.error().message);
    }
    Packed p;
    const auto t0 = Clock::now();
    auto bytes = writer.finish(&p.report);
    p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!bytes) die("pack: " + bytes.error().message);
    p.bytes = std::move(*bytes);
    auto check = Archive::open_memory(p.bytes, "bench");
    if (!check) die("the written archive does not open: " + check.error().message);
    if (auto v = check->verify(); !v) die("the written archive does not verify: " + v.error().message);
    return p;
}

// nvcc's fatbin container, as CUDA 13.0 writes it (observed, not documented): a 16-byte header
// (magic 0xba55ed50, u16 version 1, u16 header size, u64 payload size), then per image a header
// (u16 kind 1 PTX / 2 ELF, u32 header size at +4, u64 padded payload size at +8, u32 exact stored
// size at +16, u32 arch at +28, u64 raw size at +56, 0 when not compressed) and its payload.
struct FatbinEntry {
    Kind kind{Kind::cubin};
    uint16_t sm{0};
    uint64_t header{0}, padded{0}, stored{0}, raw{0};
};

std::vector<FatbinEntry> parse_fatbin(Bytes b) {
    std::vector<FatbinEntry> out;
    if (b.size() < 16 || load_u32(b, 0) != 0xba55ed50u) return out;
    const uint64_t header = load_u16(b, 6);
    const uint64_t end = std::min<uint64_t>(b.size(), header + load_u64(b, 8));
    for (uint64_t at = header; at + 64 <= end;) {
        const uint16_t kind = load_u16(b, at);
        const uint32_t hs = load_u32(b, at + 4);
        const uint64_t size = load_u64(b, at + 8);
        if ((kind != 1 && kind != 2) || hs < 64 || !in_bounds(at + hs, size, end)) break;
        FatbinEntry e;
        e.kind = kind == 1 ? Kind::ptx : Kind::cubin;
        e.sm = static_cast<uint16_t>(load_u32(b, at + 28));
        e.header = hs;
        e.padded = size;
        e.stored = load_u32(b, at + 16);
        e.raw = load_u64(b, at + 56) ? load_u64(b, at + 56) : size;
        out.push_back(e);
        at += hs + size;
    }
    return out;
}

std::string grouped(uint64_t v) {
    std::string s = std::to_string(v);
    // A character, not the string ",": GCC 12 -O3 warns a false -Wrestrict on insert(pos, const char*).
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), 1, ',');
    return s;
}

std::string shell_quote(const std::string& arg) {
    if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == std::string::npos)
        return arg;
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string ratio(double a, double b) { return b > 0 ? fmt::format("{:.3f}", a / b) : "-"; }

std::string coding(const WriterReport& r) {
    std::string s = fmt::format("{} prefix, {} dict", r.prefix_coded, r.dictionary_coded);
    if (r.dictionary_bytes) s += fmt::format(" ({} B dict)", grouped(r.dictionary_bytes));
    if (r.stored) s += fmt::format(", {} stored", r.stored);
    return s;
}

struct Stats {
    double median{0}, p90{0}, min{0}, mean{0};
};

Stats stats(std::vector<double> us) {
    std::sort(us.begin(), us.end());
    Stats s;
    s.min = us.front();
    s.median = us[us.size() / 2];
    s.p90 = us[std::min(us.size() - 1, us.size() * 9 / 10)];
    double sum = 0;
    for (double v : us) sum += v;
    s.mean = sum / static_cast<double>(us.size());
    return s;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("model name")) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    return "unknown CPU";
}

volatile size_t g_sink = 0;  // keeps the timed lookups from being optimized away

void size_tables(const Options& opt, const std::vector<std::string>& modules, const std::vector<Image>& images, const std::vector<Fatbin>& fatbins) {
    WriterOptions defaults;  // level 19, prefix and dictionary auto
    defaults.level = opt.level;
    WriterOptions plain = defaults;
    plain.prefix = false;
    plain.dictionary = false;

    fmt::print("### Size: sdm archive vs `nvcc -fatbin -compress-mode=size`\n\n");
    fmt::print("sdm default = WriterOptions defaults (zstd level {}, prefix + dictionary auto); sdm plain = the same level with prefix and "
               "dictionary off (each entry its own zstd frame). Per-module rows pack that module alone; the last row packs the whole "
               "corpus into one archive and compares it with the sum of the per-module fatbins.\n\n",
               opt.level);
    fmt::print("| module | images | raw bytes (cubin+PTX) | sdm default | sdm plain | nvcc fatbin | sdm default / fatbin | sdm plain / fatbin | default coding | pack s |\n");
    fmt::print("|---|--:|--:|--:|--:|--:|--:|--:|---|--:|\n");
    uint64_t sum_raw = 0, sum_default = 0, sum_plain = 0, sum_fatbin = 0;
    bool all_fatbins = true;
    for (const auto& m : modules) {
        std::vector<const Image*> mine;
        uint64_t raw = 0;
        for (const auto& im : images)
            if (im.module == m) {
                mine.push_back(&im);
                raw += im.bytes.size();
            }
        const Packed d = pack(mine, defaults), p = pack(mine, plain);
        const auto fb = std::find_if(fatbins.begin(), fatbins.end(), [&](const Fatbin& f) { return f.module == m; });
        const uint64_t fbytes = fb == fatbins.end() ? 0 : fb->bytes.size();
        all_fatbins = all_fatbins && fbytes;
        sum_raw += raw;
        sum_default += d.bytes.size();
        sum_plain += p.bytes.size();
        sum_fatbin += fbytes;
        fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} |\n", m, mine.size(), grouped(raw), grouped(d.bytes.size()),
                   grouped(p.bytes.size()), fbytes ? grouped(fbytes) : "-", ratio(double(d.bytes.size()), double(fbytes)),
                   ratio(double(p.bytes.size()), double(fbytes)), coding(d.report), d.seconds + p.seconds);
    }
    const std::string fsum = all_fatbins ? grouped(sum_fatbin) : "-";
    fmt::print("| sum of per-module archives | {} | {} | {} | {} | {} | {} | {} | | |\n", images.size(), grouped(sum_raw), grouped(sum_default),
               grouped(sum_plain), fsum, ratio(double(sum_default), all_fatbins ? double(sum_fatbin) : 0),
               ratio(double(sum_plain), all_fatbins ? double(sum_fatbin) : 0));
    std::vector<const Image*> all;
    for (const auto& im : images) all.push_back(&im);
    const Packed whole = pack(all, defaults), whole_plain = pack(all, plain);
    fmt::print("| **one archive, whole corpus** | {} | {} | **{}** | {} | **{}** | **{}** | {} | {} | {:.1f} |\n\n", images.size(), grouped(sum_raw),
               grouped(whole.bytes.size()), grouped(whole_plain.bytes.size()), fsum,
               ratio(double(whole.bytes.size()), all_fatbins ? double(sum_fatbin) : 0),
               ratio(double(whole_plain.bytes.size()), all_fatbins ? double(sum_fatbin) : 0), coding(whole.report),
               whole.seconds + whole_plain.seconds);

    // Table 1b: where the bytes go, per entry of the whole-corpus archive, beside nvcc's fatbin entry.
    if (opt.detail) {
        auto a = Archive::open_memory(whole.bytes, "whole");
        auto ap = Archive::open_memory(whole_plain.bytes, "whole-plain");
        if (!a || !ap) die("reopen failed");
        std::map<std::tuple<std::string, uint8_t, uint16_t>, FatbinEntry> nvcc;
        uint64_t fat_headers = 0, fat_padding = 0;
        size_t fat_entries = 0;
        for (const auto& f : fatbins)
            for (const auto& e : parse_fatbin(f.bytes)) {
                nvcc[{f.module, static_cast<uint8_t>(e.kind), e.sm}] = e;
                fat_headers += e.header;
                fat_padding += e.padded - e.stored;
                ++fat_entries;
            }
        fmt::print("#### Per entry, whole-corpus archive\n\n");
        fmt::print("stored = payload bytes (no record, no alignment padding); plain = the same entry as a lone zstd frame; nvcc = the "
                   "entry's payload inside the fatbin (its container header and padding not counted); nvcc raw = the entry's uncompressed size "
                   "inside the fatbin (nvcc strips comments and indentation from PTX it embeds, so its PTX is smaller than `nvcc -ptx` "
                   "output).\n\n");
        fmt::print("| entry | raw | nvcc raw | nvcc stored | sdm plain | sdm default | codec (ref) | default / nvcc |\n|---|--:|--:|--:|--:|--:|---|--:|\n");
        uint64_t payload = 0, payload_nvcc = 0, payload_nvcc_raw = 0;
        for (size_t i = 0; i < a->entries().size(); ++i) {
            const Entry& e = a->entries()[i];
            std::string ref;
            if (e.ref != kNoRef) {
                const Entry& r = a->entries()[e.ref];
                ref = r.kind == Kind::dictionary ? " (dict)" : fmt::format(" ({}{})", r.name == e.name ? "" : std::string(r.name) + " ", r.target());
            }
            const auto pi = ap->find(e.name, e.kind, e.sm, e.variant);
            const uint64_t plain_size = pi ? ap->entries()[*pi].stored_size : 0;
            const auto n = nvcc.find({std::string(e.name), static_cast<uint8_t>(e.kind), e.sm});
            const uint64_t nv = n == nvcc.end() ? 0 : n->second.stored;
            const uint64_t nv_raw = n == nvcc.end() ? 0 : n->second.raw;
            payload += e.stored_size;
            payload_nvcc += nv;
            payload_nvcc_raw += nv_raw;
            fmt::print("| {} {} | {} | {} | {} | {} | {} | {}{} | {} |\n", e.name, e.kind == Kind::dictionary ? "" : e.target(), grouped(e.raw_size),
                       nv_raw ? grouped(nv_raw) : "-", nv ? grouped(nv) : "-", plain_size ? grouped(plain_size) : "-", grouped(e.stored_size), codec_name(e.codec), ref,
                       ratio(double(e.stored_size), double(nv)));
        }
        const uint64_t sdm_meta = whole.bytes.size() - payload;
        fmt::print("| **payload total** | {} | {} | {} | | {} | | {} |\n\n", grouped(sum_raw), grouped(payload_nvcc_raw), grouped(payload_nvcc), grouped(payload),
                   ratio(double(payload), double(payload_nvcc)));
        fmt::print("Container overhead: sdm {} B (header, {} index records, names, 64-byte payload alignment); nvcc {} B over {} fatbins "
                   "({} entry headers = {} B, payload padding {} B, file headers {} B).\n\n",
                   grouped(sdm_meta), a->entries().size(), grouped(sum_fatbin - payload_nvcc), fatbins.size(), fat_entries, grouped(fat_headers),
                   grouped(fat_padding), 16 * fatbins.size());
    }
}

// Table 2: open + lookup on a synthesized archive of opt.entries+ entries.
void open_table(const Options& opt, const std::vector<std::string>& modules, const std::vector<Image>& images) {
    std::vector<const Image*> synth;
    std::vector<std::string> names;
    std::map<std::string, std::vector<const Image*>> by_module;
    for (const auto& im : images) by_module[im.module].push_back(&im);
    size_t copies = 0;  // module copies: m0000_radix_sort, m0001_gemm, ...
    for (; synth.size() < opt.entries; ++copies) {
        const std::string& m = modules[copies % modules.size()];
        for (const Image* im : by_module[m]) {
            synth.push_back(im);
            names.push_back(fmt::format("m{:04}_{}", copies, m));
        }
    }
    WriterOptions fast;
    fast.level = 1;
    fast.prefix = false;
    fast.dictionary = false;
    const Packed big = pack(synth, fast, &names);
    const std::string scratch = opt.scratch.empty() ? fs::temp_directory_path().string() : opt.scratch;
    const std::string path = (fs::path(scratch) / fmt::format("sdm-archive-bench-{}.sdma", getpid())).string();
    if (auto w = write_file_atomic(path, big.bytes); !w) die(w.error().message);

    // Lookups spread over the index; each iteration looks up the next one.
    struct Key {
        std::string name;
        Kind kind;
        uint16_t sm;
        Variant variant;
    };
    std::vector<Key> keys;
    for (size_t i = 0; i < synth.size(); i += std::max<size_t>(1, synth.size() / 61))
        keys.push_back({names[i], synth[i]->kind, synth[i]->sm, synth[i]->variant});

    const auto time_it = [&](auto&& open) {
        std::vector<double> us;
        us.reserve(opt.iterations);
        const size_t warmup = std::min<size_t>(50, opt.iterations);
        for (size_t it = 0; it < warmup + opt.iterations; ++it) {
            const Key& k = keys[it % keys.size()];
            const auto t0 = Clock::now();
            auto archive = open();
            if (!archive) die("open: " + archive.error().message);
            const auto found = archive->find(k.name, k.kind, k.sm, k.variant);
            const auto t1 = Clock::now();
            if (!found) die("lookup of " + k.name + " failed");
            g_sink = g_sink + *found;
            if (it >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        return stats(std::move(us));
    };
    const Bytes mem(big.bytes);
    uint64_t meta_bytes = 0;
    if (auto a = Archive::open_memory(mem, "big")) meta_bytes = a->header().payload_offset - a->header().header_size;
    const Stats sm = time_it([&] { return Archive::open_memory(mem, "bench"); });
    const Stats sf = time_it([&] { return Archive::open_file(path); });
    std::error_code ec;
    fs::remove(path, ec);

    fmt::print("### Open + look-up time\n\n");
    fmt::print("Archive of {} entries ({} modules x the corpus images renamed, zstd level 1, prefix/dictionary off): {} bytes, index + names "
               "{} bytes. Each iteration opens the archive (header, index and name validation, meta hash) and looks up one entry by "
               "(name, kind, sm, variant), cycling over {} entries spread through the index; closing is not timed. {} iterations after "
               "{} warm-up; the file is in the page cache. Target: under 50 us.\n\n",
               synth.size(), copies, grouped(big.bytes.size()), grouped(meta_bytes), keys.size(), opt.iterations, std::min<size_t>(50, opt.iterations));
    fmt::print("| method | median us | p90 us | min us | mean us |\n|---|--:|--:|--:|--:|\n");
    fmt::print("| Archive::open_memory (bytes already in memory) + find | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", sm.median, sm.p90, sm.min, sm.mean);
    fmt::print("| Archive::open_file (open + fstat + mmap) + find | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", sf.median, sf.p90, sf.min, sf.mean);
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse_args(argc, argv);

    std::vector<Image> images;
    std::vector<Fatbin> fatbins;
    for (const std::string& in : opt.inputs) {
        if (fs::is_directory(in)) {
            std::vector<fs::path> files;
            for (const auto& e : fs::directory_iterator(in))
                if (e.is_regular_file()) files.push_back(e.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files) classify(f, images, fatbins, false);
        } else {
            classify(in, images, fatbins, true);
        }
    }
    if (images.empty()) die("no .cubin or .ptx images among the inputs");
    // Modules in first-seen order, images of a module in index order.
    std::vector<std::string> modules;
    for (const auto& im : images)
        if (std::find(modules.begin(), modules.end(), im.module) == modules.end()) modules.push_back(im.module);
    const auto key = [](const Image& im) { return std::tuple(static_cast<uint8_t>(im.kind), im.sm, static_cast<uint8_t>(im.variant)); };
    std::stable_sort(images.begin(), images.end(), [&](const Image& a, const Image& b) {
        const auto ma = std::find(modules.begin(), modules.end(), a.module), mb = std::find(modules.begin(), modules.end(), b.module);
        return std::tuple(ma, key(a)) < std::tuple(mb, key(b));
    });

    // Preamble.
    {
        char date[64];
        const std::time_t now = std::time(nullptr);
        std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
        utsname u{};
        uname(&u);
        std::string cmd;
        for (int i = 0; i < argc; ++i) {  // two appends: GCC 12 -O3 warns a false -Wrestrict on " " + string (bug 105651)
            if (i) cmd += ' ';
            cmd += shell_quote(argv[i]);
        }
        fmt::print("sdm archive benchmark (bench/archive_bench)\n\n");
        fmt::print("- date: {}\n", date);
        fmt::print("- machine: {} {}, {} hardware threads ({}), {} {}\n", u.sysname, u.machine, std::thread::hardware_concurrency(), cpu_model(),
                   u.sysname, u.release);
        if (!opt.toolchain.empty()) fmt::print("- toolchain: {}\n", opt.toolchain);
        fmt::print("- corpus: {} modules, {} images ({} cubins, {} PTX), {} fatbins\n", modules.size(), images.size(),
                   std::count_if(images.begin(), images.end(), [](const Image& i) { return i.kind == Kind::cubin; }),
                   std::count_if(images.begin(), images.end(), [](const Image& i) { return i.kind == Kind::ptx; }), fatbins.size());
        fmt::print("- command: `{}`\n\n", cmd);
    }

    // Table 1: size; table 2: open + look-up time.
    if (opt.size) size_tables(opt, modules, images, fatbins);
    if (opt.open) open_table(opt, modules, images);
    return 0;
}
