// The one layer of sdm's image variant (sdm push --image; docs/REGISTRY.md, "Pods: the image
// variant"): an uncompressed tar (application/vnd.oci.image.layer.v1.tar) of one directory and the
// archive in it, written by libarchive (Debian: libarchive-dev) in its "pax restricted" format:
// plain ustar headers, and a pax extended header only where ustar cannot say a value (a size of
// 8 GiB or more, past ustar's 11 octal digits). Every header field is fixed (mtime 0, uid and gid
// 0, no user or group name, mode 0555 for the directory and 0444 for the file, the directory
// first), so the same archive always gives the same bytes and the same digest.
#pragma once

#include <string>

#include "common/bytes.hpp"
#include "common/result.hpp"
#include "http.hpp"

namespace sdm::tools::oci {

// The directory of the layer that holds the archive, and where the archive lies in the image's
// root: sdm/NAME.sdma (NAME the repository's last component, [a-z0-9._-] only).
inline constexpr const char* kImageArchiveDirectory = "sdm";
std::string image_archive_path(const std::string& name);

// Writes the layer holding `archive` at `archive_path` (image_archive_path's) into `out`, in
// pieces of at most libarchive's 10240-byte block; the trailer is the two zero blocks tar ends
// with, not padded to a whole block. An error names `archive_path` and libarchive's reason, or is
// `out`'s own.
Result<void> write_image_layer(const std::string& archive_path, Bytes archive, BodySink& out);

}  // namespace sdm::tools::oci
