// sdm import: device code as nvcc and the linkers leave it -> archive. Each fatbin container (one
// translation unit's device code, in a .fatbin file or a host binary's fatbin sections) becomes a
// module named after the input file and the container's ordinal in it ("libkernels.3": the same
// name for the same container of a rebuild of the same library); each of its images becomes an
// entry, decompressed. A cubin, PTX or LTO-IR file is an image of the module named after its file
// ("kernels.sm_90.cubin" and "kernels.compute_90.ptx" are module "kernels"). packer.hpp writes it.
#include <fmt/format.h>

#include <map>
#include <set>

#include "commands.hpp"
#include "wording.hpp"
#include "common/text.hpp"
#include "archive/elf.hpp"
#include "archive/fatbin.hpp"
#include "archive/file_map.hpp"
#include "archive/host_binary.hpp"
#include "archive/image.hpp"
#include "packer.hpp"

namespace sdm::tools {
namespace {

using archive::elf::kEmCuda;


// A container's image kept as the container stores it (nvcc's LZ4 or zstd, or raw) in memory of
// its own, decoded each time the writer reads it: a library's images are several times their
// stored size, and the library's file is unmapped once its containers are read (a file replaced
// while sdm works cannot fault it).
class StoredImage final : public archive::RawSource {
public:
    // `size`: what the payload decodes to (PTX loses the terminator the container stores).
    StoredImage(const archive::FatbinEntry& entry, uint64_t size) : entry_(entry), stored_(entry.stored.begin(), entry.stored.end()), size_(size) {
        entry_.stored = Bytes(stored_);
        entry_.options = {};
    }
    uint64_t size() const noexcept override { return size_; }
    Result<Bytes> read(ByteVector& scratch) const override {
        SDM_TRY_GET(raw, archive::fatbin_entry_payload(entry_));
        scratch = std::move(*raw);
        return Bytes(scratch);
    }

private:
    archive::FatbinEntry entry_;
    ByteVector stored_;
    uint64_t size_;
};

// The file name up to its first '.', as a valid entry name: "libcufft.so.12" -> "libcufft".
std::string module_stem(const std::string& path) {
    std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    name = name.substr(0, name.find('.'));
    for (char& c : name)
        if (c < 0x21 || c > 0x7e || archive::kNameForbidden.find(c) != std::string_view::npos) c = '_';
    return name.empty() ? "module" : name.substr(0, 200);
}

// Which images --arch and --ptx keep: each option filters its own kinds; a kind no option names
// is kept whole.
struct TargetFilter {
    std::set<std::string> archs, ptx;  // target names as target_name writes them
    bool no_ptx{false};                // --ptx none: a cubin-only archive

    bool keeps(archive::Kind kind, uint16_t sm, archive::Variant variant) const {
        const std::string name = archive::target_name(kind, sm, variant);
        if (kind == archive::Kind::ptx) return !no_ptx && (ptx.empty() || ptx.count(name));
        return archs.empty() || archs.count(name);
    }
};

Result<TargetFilter> parse_filter(const ImportOptions& o) {
    TargetFilter filter;
    for (const auto& [list, set, option] : {std::tuple{&o.archs, &filter.archs, "--arch"}, std::tuple{&o.ptx, &filter.ptx, "--ptx"}}) {
        for (const std::string& text : *list) {
            const bool ptx = std::string_view(option) == "--ptx";
            if (ptx && text == "none") {
                filter.no_ptx = true;
                continue;
            }
            const auto target = parse_arch_option(text, ptx ? archive::Kind::ptx : archive::Kind::cubin);
            if (!target || (ptx ? target->kind != archive::Kind::ptx : target->kind == archive::Kind::ptx))
                return make_error(ErrorCode::invalid_argument, std::string(option) + " '" + text + "' must be " +
                                                                   (ptx ? "an SM or compute_XY[a|f] (90, compute_90), or none"
                                                                        : "an SM, sm_XY[a|f] or lto_XY (90, sm_90, sm_90a, lto_90)"));
            set->insert(archive::target_name(target->kind, target->sm, target->variant));
        }
    }
    return filter;
}

struct Tally {
    size_t containers{0}, images{0}, filtered{0}, skipped{0};
    uint64_t container_bytes{0}, kept_bytes{0};  // of the containers; of the images kept, as the containers store them
};

// A member's name in messages: escaped, and cut at 96 bytes. Each image keeps its label, so a
// name of kilobytes would cost kilobytes per image however small the images.
std::string short_name(std::string_view name) {
    constexpr size_t kShown = 96;
    if (name.size() <= kShown) return printable(name);
    return printable(name.substr(0, kShown)) + "... (" + std::to_string(name.size()) + " bytes)";
}

class Importer {
public:
    Importer(const TargetFilter& filter, Tally& tally) : filter_(filter), tally_(tally) {}

    Result<void> add_file(const std::string& path) {
        SDM_TRY_GET(file, archive::FileMap::open(path));
        const Bytes bytes = (*file)->bytes();
        const std::string stem = module_stem(path);
        const bool elf = bytes.size() >= 20 && load_u8(bytes, 0) == 0x7f && load_u8(bytes, 1) == 'E' && load_u8(bytes, 2) == 'L' && load_u8(bytes, 3) == 'F';
        if (elf && load_u16(bytes, 18) == kEmCuda) return add_image(path, stem, archive::Kind::cubin, bytes);
        const bool fatbin = bytes.size() >= 4 && load_u32(bytes, 0) == archive::kFatbinMagic;
        const bool ar = as_text(bytes.subspan(0, std::min<size_t>(bytes.size(), 8))) == "!<arch>\n";
        if (elf || fatbin || ar) return add_containers(path, stem, **file);
        if (archive::inspect_ltoir(bytes)) return add_image(path, stem, archive::Kind::ltoir, bytes);
        auto ptx = archive::inspect_ptx(bytes);
        if (ptx) return add_image(path, stem, archive::Kind::ptx, bytes);
        return make_error(ErrorCode::invalid_argument, path + ": not a cubin, LTO-IR, fatbin, ELF file or ar archive, and not PTX (" +
                                                           ptx.error().message + ")");
    }

    std::vector<PackInput> take() { return std::move(inputs_); }

private:
    Result<void> add_image(const std::string& path, const std::string& module, archive::Kind kind, Bytes bytes) {
        SDM_TRY_GET(info, archive::inspect_image(kind, bytes));
        if (info->sm == 0) return make_error(ErrorCode::invalid_argument, path + ": its bytes name no architecture");
        if (auto refused = archive::link_input_error(*info, path)) return *refused;
        const archive::Variant variant = info->variant.value_or(archive::Variant::base);
        ++tally_.images;
        if (!filter_.keeps(kind, info->sm, variant)) {
            ++tally_.filtered;
            return {};
        }
        raw_bytes_ += bytes.size();
        inputs_.push_back({{module, kind, info->sm, variant, ByteVector(bytes.begin(), bytes.end())}, path});
        return {};
    }

    Result<void> add_containers(const std::string& path, const std::string& stem, const archive::FileMap& file) {
        auto found = archive::find_fatbins(file.bytes());
        if (!found) return make_error(found.error().code, path + ": " + found.error().message);
        if (found->empty())
            return make_error(ErrorCode::invalid_argument, path + ": holds no fatbin container (no device code; was it built with nvcc?)");
        for (size_t ordinal = 0; ordinal < found->size(); ++ordinal) {
            const archive::EmbeddedFatbin& embedded = (*found)[ordinal];
            const std::string module = stem + "." + std::to_string(ordinal);
            std::string where = path;
            if (!embedded.member.empty()) where += " member " + std::to_string(embedded.member_index) + " (" + short_name(embedded.member) + ")";
            where += " container " + std::to_string(ordinal);
            ++tally_.containers;
            tally_.container_bytes += embedded.bytes.size();
            if (embedded.relocatable) {
                // -rdc device code: nvlink's input, which the driver does not load.
                fmt::print(stderr, "sdm import: {} (in {}) is relocatable device code (-rdc) for nvlink: skipped; import the linked binary\n",
                           where, printable(embedded.section));
                ++tally_.skipped;
                continue;
            }
            bool claimed = false;  // the module is claimed with its first image: an empty container makes none
            auto container = archive::parse_fatbin(embedded.bytes);
            if (!container) return make_error(container.error().code, where + ": " + container.error().message);
            if (auto why = link_input(*container, where)) {
                // A device link's input (cuSPARSE's SpMMOp kernels, which call the caller's
                // operators): no image of it loads alone, its PTX included.
                fmt::print(stderr, "sdm import: {}: skipped with its other images\n", *why);
                for (const archive::FatbinEntry& entry : container->entries) {
                    ++tally_.images;
                    ++(entry.image_kind && filter_.keeps(*entry.image_kind, entry.sm, entry.variant) ? tally_.skipped : tally_.filtered);
                }
                continue;
            }
            std::set<std::string> targets;
            for (const archive::FatbinEntry& entry : container->entries) {
                const std::string label = where + " " + archive::fatbin_entry_label(entry);
                if (!entry.image_kind) {
                    fmt::print(stderr, "sdm import: {}: an entry kind sdm does not know: skipped\n", label);
                    ++tally_.skipped;
                    continue;
                }
                SDM_TRY(archive::refuse_raw_ltoir(entry, label));
                ++tally_.images;
                if (!filter_.keeps(*entry.image_kind, entry.sm, entry.variant)) {
                    ++tally_.filtered;
                    continue;
                }
                if (!targets.insert(archive::target_name(*entry.image_kind, entry.sm, entry.variant)).second) {
                    fmt::print(stderr, "sdm import: {}: a second image of the same target in one container: skipped\n", label);
                    ++tally_.skipped;
                    continue;
                }
                // What the archive could hold is checked before anything is decompressed.
                if (inputs_.size() + 1 >= archive::limits::max_entries)
                    return make_error(ErrorCode::invalid_argument, label + ": more images than an archive holds (" +
                                                                       std::to_string(archive::limits::max_entries - 1) +
                                                                       " besides its manifest); import fewer inputs, or narrow them with --arch/--ptx");
                if (entry.raw_size > archive::limits::max_raw_total - raw_bytes_)
                    return make_error(ErrorCode::invalid_argument, label + ": its " + std::to_string(entry.raw_size) +
                                                                       " bytes would take the images past the " +
                                                                       std::to_string(archive::limits::max_raw_total) +
                                                                       " bytes an archive holds; import fewer inputs, or narrow them with --arch/--ptx");
                // Decoded once now, so a payload that does not decode is named here; then kept
                // as stored, and decoded again whenever the writer reads it.
                auto payload = archive::fatbin_entry_payload(entry);
                if (!payload && payload.error().code == ErrorCode::unsupported) {
                    fmt::print(stderr, "sdm import: {}: {}: skipped\n", label, payload.error().message);
                    ++tally_.skipped;
                    continue;
                }
                if (!payload) return make_error(payload.error().code, label + ": " + payload.error().message);
                if (!claimed) SDM_TRY(claim(module, path));
                claimed = true;
                tally_.kept_bytes += entry.stored.size();
                raw_bytes_ += payload->size();
                archive::WriterInput input{module, *entry.image_kind, entry.sm, entry.variant, {}, {}};
                if (entry.compression == archive::FatbinCompression::none) input.bytes = std::move(*payload);
                else input.source = std::make_shared<StoredImage>(entry, payload->size());
                inputs_.push_back({std::move(input), label});
            }
        }
        return {};
    }

    // Why `container` is a device link's input (the first relocatable cubin in it that calls
    // functions it does not define), or nullopt. Its cubins are decoded to be read.
    static std::optional<std::string> link_input(const archive::FatbinContainer& container, const std::string& where) {
        for (const archive::FatbinEntry& entry : container.entries) {
            if (entry.image_kind != archive::Kind::cubin) continue;
            auto payload = archive::fatbin_entry_payload(entry);
            if (!payload) continue;  // named when the entry itself is imported
            auto info = archive::inspect_cubin(*payload);
            if (!info) continue;
            if (auto refused = archive::link_input_error(*info, where + " " + archive::fatbin_entry_label(entry))) return refused->message;
        }
        return std::nullopt;
    }

    // A container's module is its input's alone (two libkernels.so of different directories would
    // both name libkernels.0). Image files of one stem share theirs, which never holds a '.'.
    Result<void> claim(const std::string& module, const std::string& path) {
        const auto [it, inserted] = owners_.emplace(module, path);
        if (!inserted && it->second != path)
            return make_error(ErrorCode::invalid_argument, path + " and " + it->second + " both name module " + module +
                                                               ": import them into separate archives, or rename one");
        return {};
    }

    const TargetFilter& filter_;
    Tally& tally_;
    std::vector<PackInput> inputs_;
    uint64_t raw_bytes_{0};  // of inputs_
    std::map<std::string, std::string> owners_;  // container module -> its input file
};

}  // namespace

int run_import(const ImportOptions& o) {
    auto filter = parse_filter(o);
    if (!filter) {
        fmt::print(stderr, "sdm import: {}\n", filter.error().message);
        return 2;
    }
    Tally tally;
    Importer importer(*filter, tally);
    for (const std::string& path : o.inputs) {
        auto added = importer.add_file(path);
        if (!added) {
            fmt::print(stderr, "sdm import: {}\n", added.error().message);
            return 1;
        }
    }
    std::vector<PackInput> inputs = importer.take();
    if (inputs.empty()) {
        fmt::print(stderr, "sdm import: no image to import ({} found, {} left out by --arch/--ptx, {} skipped)\n", plural(tally.images, "image"),
                   tally.filtered, tally.skipped);
        return 1;
    }
    if (!o.write.quiet)
        fmt::print("{}: {} ({}), {}: {} imported ({} as the containers store them), {} left out by --arch/--ptx; {} skipped\n",
                   o.write.output, plural(tally.containers, "fatbin container"), plural(tally.container_bytes, "byte"), plural(tally.images, "image"),
                   inputs.size(), plural(tally.kept_bytes, "byte"), tally.filtered, tally.skipped);
    return pack_inputs("import", o.write, std::move(inputs));
}

}  // namespace sdm::tools
