// An NVTX tool for the tests, loaded by NVTX itself from NVTX_INJECTION64_PATH (NVTX3's
// nvtxDetail/nvtxInit.h: the library's InitializeInjectionNvtx2 is handed nvtxGetExportTable, and
// fills the core functions it implements through the callbacks table). It records every domain
// created and every range pushed and popped, with its thread, nesting and enclosing range, and
// answers through the functions below, which a test finds with dlopen(RTLD_NOLOAD) and dlsym.
#define NVTX_NO_IMPL  // a tool: the types, not NVTX's own implementation
#include <nvtx3/nvToolsExt.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Domain {
    std::string name;
};

struct Range {
    std::string domain;
    std::string message;
    std::string parent;  // the range open beneath it on its thread ("" for none)
    int thread;          // threads numbered as they first push
    size_t depth;        // how many ranges were open on its thread beneath it
    bool closed;
};

std::mutex mutex;
std::deque<Domain> domains;  // never erased: NVTX hands their addresses back
std::vector<Range> ranges;
int threads = 0;
int unbalanced = 0;  // pops with nothing open on their thread
int initializations = 0;
std::string text;  // what nvtx_test_ranges last returned

struct ThreadStack {
    int thread = -1;
    std::vector<size_t> open;  // indices into ranges
};
thread_local ThreadStack stack;

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
    std::lock_guard lock(mutex);
    domains.push_back(Domain{name != nullptr ? name : ""});
    return reinterpret_cast<nvtxDomainHandle_t>(&domains.back());
}

int NVTX_API range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
    std::lock_guard lock(mutex);
    if (stack.thread < 0) stack.thread = threads++;
    std::string message = "(no message)";
    if (attributes != nullptr && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII && attributes->message.ascii != nullptr)
        message = attributes->message.ascii;
    const std::string name = domain != nullptr ? reinterpret_cast<const Domain*>(domain)->name : "(default)";
    const std::string parent = stack.open.empty() ? "" : ranges[stack.open.back()].message;
    ranges.push_back({name, message, parent, stack.thread, stack.open.size(), false});
    stack.open.push_back(ranges.size() - 1);
    return static_cast<int>(stack.open.size() - 1);
}

int NVTX_API range_pop(nvtxDomainHandle_t) {
    std::lock_guard lock(mutex);
    if (stack.open.empty()) {
        ++unbalanced;
        return -1;
    }
    ranges[stack.open.back()].closed = true;
    stack.open.pop_back();
    return static_cast<int>(stack.open.size());
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0 || table == nullptr || size <= NVTX_CBID_CORE2_DomainCreateA) return 0;
    *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&domain_create);
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&range_push);
    *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&range_pop);
    std::lock_guard lock(mutex);
    ++initializations;
    return 1;
}

// Every range seen, one a line in push order: "DOMAIN\tTHREAD\tDEPTH\tPARENT\tMESSAGE\tCLOSED"
// (CLOSED 1 once popped). Valid until the next call.
__attribute__((visibility("default"))) const char* nvtx_test_ranges() {
    std::lock_guard lock(mutex);
    text.clear();
    for (const Range& r : ranges)
        text += r.domain + "\t" + std::to_string(r.thread) + "\t" + std::to_string(r.depth) + "\t" + r.parent + "\t" + r.message + "\t" +
                (r.closed ? "1" : "0") + "\n";
    return text.c_str();
}

// Pops that found no range open on their thread.
__attribute__((visibility("default"))) int nvtx_test_unbalanced() {
    std::lock_guard lock(mutex);
    return unbalanced;
}

// How many NVTX instances (a library's copy of NVTX3) initialized with this tool.
__attribute__((visibility("default"))) int nvtx_test_initializations() {
    std::lock_guard lock(mutex);
    return initializations;
}

}  // extern "C"
