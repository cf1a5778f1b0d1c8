#include "image_layer.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <memory>

namespace sdm::tools::oci {
namespace {

struct Output {
    BodySink& sink;
    Error error{};  // the sink's, when it refused
    bool failed{false};
};

la_ssize_t write_block(struct archive* writer, void* client, const void* buffer, size_t length) {
    auto& out = *static_cast<Output*>(client);
    auto written = out.sink.write(Bytes(static_cast<const std::byte*>(buffer), length));
    if (written) return static_cast<la_ssize_t>(length);
    out.error = std::move(written).error();
    out.failed = true;
    archive_set_error(writer, EIO, "%s", out.error.message.c_str());
    return -1;
}

// One entry's header: every field sdm does not set stays at libarchive's zero (no user, group, times).
void set_entry(archive_entry* entry, const std::string& path, mode_t type, mode_t permissions, uint64_t size) {
    archive_entry_clear(entry);
    archive_entry_set_pathname(entry, path.c_str());
    archive_entry_set_filetype(entry, type);
    archive_entry_set_perm(entry, permissions);
    archive_entry_set_size(entry, static_cast<la_int64_t>(size));
    archive_entry_set_mtime(entry, 0, 0);
    archive_entry_set_uid(entry, 0);
    archive_entry_set_gid(entry, 0);
}

}  // namespace

std::string image_archive_path(const std::string& name) { return std::string(kImageArchiveDirectory) + "/" + name + ".sdma"; }

Result<void> write_image_layer(const std::string& archive_path, Bytes archive, BodySink& out) {
    const std::unique_ptr<struct archive, decltype(&archive_write_free)> writer(archive_write_new(), archive_write_free);
    const std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
    if (!writer || !entry) return make_error(ErrorCode::out_of_memory, "the image layer of " + archive_path + ": libarchive could not allocate");
    Output output{out};
    const auto failure = [&](const char* step) {
        if (output.failed) return output.error;
        const char* reason = archive_error_string(writer.get());
        return make_error(ErrorCode::io, "the image layer of " + archive_path + ": libarchive " + step + ": " + (reason ? reason : "no reason given"));
    };
    if (archive_write_set_format_pax_restricted(writer.get()) != ARCHIVE_OK || archive_write_set_bytes_in_last_block(writer.get(), 1) != ARCHIVE_OK ||
        archive_write_open2(writer.get(), &output, nullptr, write_block, nullptr, nullptr) != ARCHIVE_OK)
        return failure("could not start a tar");
    // The directory first, then the file: the order a sorted listing gives.
    set_entry(entry.get(), std::string(kImageArchiveDirectory) + "/", AE_IFDIR, 0555, 0);
    if (archive_write_header(writer.get(), entry.get()) != ARCHIVE_OK) return failure("refused the directory's header");
    set_entry(entry.get(), archive_path, AE_IFREG, 0444, archive.size());
    if (archive_write_header(writer.get(), entry.get()) != ARCHIVE_OK) return failure("refused the archive's header");
    constexpr size_t kPiece = size_t{1} << 20;
    for (size_t at = 0; at < archive.size();) {
        const size_t piece = std::min(kPiece, archive.size() - at);
        const la_ssize_t written = archive_write_data(writer.get(), archive.data() + at, piece);
        if (written <= 0) return failure("did not take the archive's bytes");
        at += static_cast<size_t>(written);
    }
    if (archive_write_finish_entry(writer.get()) != ARCHIVE_OK || archive_write_close(writer.get()) != ARCHIVE_OK)
        return failure("could not end the tar");
    return {};
}

}  // namespace sdm::tools::oci
