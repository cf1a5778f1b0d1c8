// What file_map.hpp is on every operating system: the names of file types, the read of a whole
// file into memory (the OS files, file_map_posix.cpp and file_map_windows.cpp, open and map).
#include "file_map.hpp"

namespace sdm::archive {

std::string file_type_name(uint32_t mode_bits) {
    switch (mode_bits & 0170000) {  // the type bits as POSIX numbers them (Windows' status says the same)
    case 0100000: return "a regular file";
    case 0040000: return "a directory";
    case 0010000: return "a FIFO (named pipe)";
    case 0020000: return "a character device";
    case 0060000: return "a block device";
    case 0140000: return "a socket";
    case 0120000: return "a symbolic link";
    default: return "not a regular file";
    }
}

Result<void> FileMap::read_whole(uint64_t size, const std::function<Result<size_t>(std::byte* into, size_t want)>& read) {
    // Exactly the size the OS gave at open, and one more byte to see the end: a file that grows
    // meanwhile is refused, so the cost stays bounded by what the file held when it was opened.
    try {
        owned_.resize(static_cast<size_t>(size) + 1);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(size) + " bytes to read " + path_);
    }
    size_t used = 0;
    while (used < owned_.size()) {
        SDM_TRY_GET(n, read(owned_.data() + used, owned_.size() - used));
        if (*n == 0) break;
        used += *n;
    }
    if (used > size) return make_error(ErrorCode::io, path_ + " grew while it was read; read it again once its writer is done");
    owned_.resize(used);
    data_ = owned_.data();
    size_ = owned_.size();
    return {};
}

Result<ByteVector> read_file(const std::string& path) {
    SDM_TRY_GET(map, FileMap::open(path));
    const Bytes b = (*map)->bytes();
    return ByteVector(b.begin(), b.end());
}

}  // namespace sdm::archive
