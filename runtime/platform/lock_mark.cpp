// The text of a lock file's mark (platform.hpp: lock_mark_text, parse_lock_mark), the same on
// every operating system.
#include "platform.hpp"

#include <cmath>

#include "common/text.hpp"

namespace sdm::runtime::platform {

std::string lock_mark_text(const LockMark& mark, int self, int64_t now) {
    std::string text = "pid " + std::to_string(self);
    if (mark.seconds > 0) text += " until " + std::to_string(now + static_cast<int64_t>(std::ceil(mark.seconds)));
    if (!mark.what.empty()) text += ": " + mark.what.substr(0, 160);
    return text + "\n";
}

LockHolder parse_lock_mark(std::string_view text, int self, int64_t now) {
    text = text.substr(0, 255);
    if (text.size() <= 4 || !text.starts_with("pid ")) return {"another process or thread", std::nullopt};
    constexpr long kPidMax = 4194304;  // Linux's largest pid_max (2^22); Windows' ids stay below it in practice
    long pid = 0;
    size_t i = 4;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && pid <= kPidMax; ++i) pid = pid * 10 + (text[i] - '0');
    if (pid <= 0 || pid > kPidMax) return {"another process or thread", std::nullopt};
    LockHolder h;
    h.who = pid == self ? "another thread of this process" : "process " + std::to_string(pid);
    const std::string_view rest = text.substr(i);
    if (rest.starts_with(" until ")) {
        int64_t until = 0;
        size_t j = 7;
        for (; j < rest.size() && j < 7 + 12 && rest[j] >= '0' && rest[j] <= '9'; ++j) until = until * 10 + (rest[j] - '0');
        if (j > 7) h.until = until;
        if (rest.substr(j).starts_with(": ")) {
            std::string_view what = rest.substr(j + 2);
            what = what.substr(0, what.find('\n'));
            h.who += " (" + printable(what) + (h.until ? ", its limit ends in " + std::to_string(*h.until - now) + " s" : std::string()) + ")";
        }
    }
    return h;
}

}  // namespace sdm::runtime::platform
