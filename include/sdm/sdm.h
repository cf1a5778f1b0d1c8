/* sdm: the stable C ABI of the Sparse Delta Memory kernel runtime.
 *
 * Conventions (docs/ABI.md has the full list):
 * - Plain C99; opaque handles; fixed-width types; no struct passed or returned by value.
 * - Every fallible call returns an sdm_status (SDM_OK = 0). Its last parameter, `error`, may be
 *   NULL; otherwise on failure *error receives a new sdm_error (code, message, native CUresult,
 *   log) that the caller releases with sdm_error_destroy. On success *error is set to NULL.
 *   (Two calls have no `error` parameter: sdm_runtime_last_error, which hands out an error
 *   itself, and sdm_get_api, whose only failures are a NULL argument and an unknown major.)
 *   A failed call leaves its other out-parameters untouched. The runtime also keeps its last
 *   error (sdm_runtime_last_error), so hosts that cannot pass a pointer still get the message.
 * - Every struct that crosses the boundary starts with uint32_t struct_size: set it to
 *   sizeof(the struct) as your header declares it. sdm reads and writes only within that size;
 *   a size below the 1.0 size is SDM_ERROR_INVALID_ARGUMENT.
 * - Strings are UTF-8 and NUL-terminated. Strings sdm returns are owned by the object they come
 *   from and stay valid as long as it does, as each function says.
 * - Threads: every function is safe to call from any thread, and runtime handles may be shared
 *   between threads, unless its comment says otherwise. The log callback runs on the thread that
 *   made the call that logs, possibly several at once.
 * - No exception and no abort() crosses this boundary: out-of-memory is SDM_ERROR_OUT_OF_MEMORY.
 * - A host built against ABI minor N runs on any libsdm with the same major and minor >= N.
 *   Functions are only ever appended; enum values are never renumbered.
 */
#ifndef SDM_SDM_H
#define SDM_SDM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A Windows host imports from sdm.dll: a function's address is then its own, as sdm_get_api's
 * table gives it, not a thunk in the host. */
#if defined(SDM_BUILDING_LIBRARY) && defined(__GNUC__)
#define SDM_API __attribute__((visibility("default")))
#elif defined(_WIN32) && !defined(SDM_BUILDING_LIBRARY)
#define SDM_API __declspec(dllimport)
#else
#define SDM_API
#endif

#define SDM_ABI_VERSION_MAJOR 1
#define SDM_ABI_VERSION_MINOR 5

/* ---- statuses ------------------------------------------------------------------------------ */

typedef int32_t sdm_status;
enum {
    SDM_OK = 0,                       /* success */
    SDM_ERROR_INVALID_ARGUMENT = 1,   /* a NULL handle, a struct_size too small, a bad value */
    SDM_ERROR_OUT_OF_MEMORY = 2,      /* an allocation failed (sdm never aborts for it) */
    SDM_ERROR_NO_DRIVER = 3,          /* libcuda.so.1 (or $SDM_CUDA_DRIVER) could not be loaded; archives still mount */
    SDM_ERROR_DRIVER_TOO_OLD = 4,     /* the driver is older than CUDA 12.0 or lacks an entry point sdm needs */
    SDM_ERROR_DRIVER = 5,             /* a driver call failed: sdm_error_native has its CUresult */
    SDM_ERROR_NO_DEVICE = 6,          /* no such device ordinal, or no CUDA device at all */
    SDM_ERROR_UNSUPPORTED_DEVICE = 7, /* the device is outside the hardware matrix */
    SDM_ERROR_ARCHIVE_CORRUPT = 8,    /* an archive failed a check (checksum, range, structure) */
    SDM_ERROR_ARCHIVE_UNSUPPORTED = 9,/* an archive needs a newer sdm (format, feature, codec) */
    SDM_ERROR_IO = 10,                /* the operating system refused (open, read, mmap) */
    SDM_ERROR_NOT_FOUND = 11,         /* no such kernel or mounted archive (a missing file is SDM_ERROR_IO) */
    SDM_ERROR_UNSUPPORTED = 12,       /* this build or platform lacks the feature */
    SDM_ERROR_NO_IMAGE = 13,          /* no image of a module fits the device (the message lists the archive's) */
    SDM_ERROR_IMAGE_REFUSED = 14,     /* a loaded image failed validation (the image policy, a plugin) */
    SDM_ERROR_JIT = 15,               /* a JIT backend failed: sdm_error_log has its log */
    SDM_ERROR_MISMATCH = 16,          /* declared metadata disagrees (arch, ABI version, signature) */
    SDM_ERROR_GRAPH_CAPTURE = 17,     /* the work would JIT while a stream is capturing a graph */
    SDM_ERROR_INTERNAL = 18,          /* a broken invariant inside sdm: please report it */
    SDM_ERROR_UNTRUSTED = 19,         /* ABI 1.2: the signature policy refused an archive (unsigned, an
                                         unknown key, a bad signature); the message names the archive,
                                         the key ids it carries and the ones the host trusts (docs/SIGNING.md) */
    SDM_ERROR_AMBIGUOUS = 20,         /* ABI 1.3: a kernel name (a C++ spelling, a name expression)
                                         matches several kernels; the message lists them */
    SDM_ERROR_TIMEOUT = 21,           /* ABI 1.5: the deadline passed before the work finished (it goes on) */
    SDM_ERROR_CANCELLED = 22          /* ABI 1.5: the work was cancelled before it finished */
};

/* The name of a status ("SDM_ERROR_NO_DRIVER"); "SDM_ERROR_UNKNOWN" for values this library does
 * not know. The string is static. */
SDM_API const char* sdm_status_string(sdm_status status);

/* ---- versions ------------------------------------------------------------------------------ */

/* (major << 16) | minor of the ABI this library implements. */
SDM_API uint32_t sdm_abi_version(void);
/* The library's release, "MAJOR.MINOR.PATCH" (the project version of the build); static. */
SDM_API const char* sdm_version_string(void);

/* ---- errors -------------------------------------------------------------------------------- */

typedef struct sdm_error sdm_error;

/* For a NULL error: SDM_OK, "", 0 and "" respectively. */
SDM_API sdm_status sdm_error_code(const sdm_error* error);
/* The message: names the thing (archive, device, kernel) and, where there is one, the fix.
 * Owned by the error. Never NULL (an empty string for a NULL error). */
SDM_API const char* sdm_error_message(const sdm_error* error);
/* The native code behind the error: a CUresult for SDM_ERROR_DRIVER, an nvJitLink result for
 * SDM_ERROR_JIT; 0 when there is none. */
SDM_API int32_t sdm_error_native(const sdm_error* error);
/* A backend's log (JIT error log), or "". Owned by the error. */
SDM_API const char* sdm_error_log(const sdm_error* error);
/* Accepts NULL. */
SDM_API void sdm_error_destroy(sdm_error* error);

/* ---- logging ------------------------------------------------------------------------------- */

typedef int32_t sdm_log_level;
enum {
    SDM_LOG_OFF = -1,    /* nothing, whatever $SDM_LOG says */
    SDM_LOG_DEFAULT = 0, /* $SDM_LOG (error, warn, info, debug, off), else SDM_LOG_WARN */
    SDM_LOG_ERROR = 1,
    SDM_LOG_WARN = 2,
    SDM_LOG_INFO = 3,
    SDM_LOG_DEBUG = 4
};

/* `level` is SDM_LOG_ERROR..SDM_LOG_DEBUG. `message` is NUL-terminated, `length` bytes long, valid
 * during the call only. Called on the thread that logs; it must not destroy the runtime. */
typedef void (*sdm_log_fn)(void* user_data, sdm_log_level level, const char* message, size_t length);

/* ---- runtime ------------------------------------------------------------------------------- */

typedef struct sdm_runtime sdm_runtime;

/* The head of every extension struct hung on a `next` chain: a later minor adds a `type` and a
 * struct beginning with this header; a library that does not know a type skips it. */
typedef struct sdm_chain {
    uint32_t struct_size;
    uint32_t type;
    const struct sdm_chain* next;
} sdm_chain;

enum {
    /* Do not mount the archive embedded in libsdm (only the ones the host mounts). */
    SDM_RUNTIME_NO_EMBEDDED_ARCHIVE = 1u << 0,
    /* ABI 1.2: use the CUDA context current on the calling thread (a cuCtxCreate context, a green
     * context made current through cuCtxFromGreenCtx, any context an engine switches to) instead of
     * the device's primary context. sdm_kernel_get, sdm_kernel_get_checked and sdm_preload load
     * into the current context, which must belong to the device named (else SDM_ERROR_MISMATCH);
     * none current is SDM_ERROR_INVALID_ARGUMENT. A kernel handle belongs to the context it was
     * fetched in: sdm_launch with another context current is SDM_ERROR_MISMATCH (fetch the kernel
     * again in that context; the image itself is loaded once per process and shared). Excludes
     * cuda_context and device_contexts. */
    SDM_RUNTIME_CURRENT_CONTEXT = 1u << 1,
    /* ABI 1.4: a hot reload may change what the host was promised. By default (1.4) a new version
     * of an archive file replaces the old only when its kernel ABI keeps the old one's major and no
     * lower minor, and every kernel the host has fetched from the old version keeps its parameter
     * signature; otherwise the reload of that file fails (SDM_ERROR_MISMATCH naming the kernel and
     * both signatures, or both versions) and the old version keeps serving. */
    SDM_RUNTIME_RELOAD_ANY_CONTRACT = 1u << 2
};

typedef struct sdm_runtime_params {
    uint32_t struct_size;      /* sizeof(sdm_runtime_params) */
    uint32_t flags;            /* SDM_RUNTIME_* */
    sdm_log_fn log_fn;         /* NULL: warnings and errors go to stderr */
    void* log_user_data;
    sdm_log_level log_level;   /* SDM_LOG_DEFAULT (0), SDM_LOG_OFF, or a level */
    int32_t reserved0;         /* zero */
    const char* cuda_driver;   /* path of libcuda to load; NULL: $SDM_CUDA_DRIVER, else libcuda.so.1 */
    void* cuda_context;        /* a CUcontext the host owns, used for every device operation of the
                                  device it belongs to (other devices use their primary contexts);
                                  NULL: each device's primary context */
    const sdm_chain* next;     /* extensions (none are defined in 1.0; unknown types are skipped) */
    const char* cache_dir;     /* NULL: $SDM_CACHE_DIR, else $XDG_CACHE_HOME/sdm, else ~/.cache/sdm */
    uint64_t cache_max_bytes;  /* 0: $SDM_CACHE_MAX_BYTES, else 1 GiB */
    uint32_t cache_flags;      /* SDM_CACHE_* */
    uint32_t jit_flags;        /* SDM_JIT_*: backends the host forbids */
    /* ABI 1.1 (a 1.0-sized struct reads as zero here): */
    uint32_t kernel_abi_major; /* the kernel ABI major the host was built for: an archive declaring
                                  another is refused (SDM_ERROR_MISMATCH, both versions named);
                                  0: any */
    uint32_t reserved1;        /* zero */
    /* ABI 1.2 (a 1.1-sized struct reads as zero here; a 1.1 library ignores these members, so a
       host that needs them checks sdm_abi_version() >= 1.2): */
    void* const* device_contexts; /* device_contexts[i]: a CUcontext the host owns for device i,
                                  or NULL for its primary context (devices past the count too). A
                                  context of another device is SDM_ERROR_MISMATCH at first use;
                                  sdm never destroys one. The array is copied. Excludes cuda_context. */
    uint32_t device_context_count; /* at most 1024 */
    uint32_t signature_policy; /* SDM_SIGNATURES_*: which archives may mount (docs/SIGNING.md);
                                  SDM_SIGNATURES_DEFAULT: $SDM_REQUIRE_SIGNED decides */
    const uint8_t* trusted_keys; /* trusted_key_count Ed25519 public keys, 32 bytes each, back to
                                  back (the key of a .pub file from sdm keygen); copied. Given, it
                                  replaces $SDM_TRUSTED_KEYS. NULL with a count of 0: the environment's */
    uint32_t trusted_key_count; /* at most 256 */
    uint32_t reserved2;        /* zero */
    uint32_t jit_isolation;    /* SDM_ISOLATION_*: where PTX and LTO-IR links run (docs/LOADING.md,
                                  "A compiler that crashes"); DEFAULT: $SDM_JIT_ISOLATION, else AUTO */
    uint32_t jit_time_limit_ms; /* every link's wall-clock limit; 0: $SDM_JIT_TIME_LIMIT (seconds),
                                  else 120 s. Past it an isolated link is killed, one in this process
                                  abandoned; the fetch gets SDM_ERROR_JIT */
    uint64_t jit_memory_limit_bytes; /* an isolated link's address space, at least 64 MiB; 0:
                                  $SDM_JIT_MEMORY_LIMIT, else 8 GiB */
    /* ABI 1.3 (a 1.2-sized struct reads as zero here): no rollback (docs/SIGNING.md, "Rollback"). */
    const char* state_dir;     /* where the rollback marks are kept: per signing key, the highest
                                  archive version admitted under SDM_SIGNATURES_REQUIRE; NULL:
                                  $SDM_STATE_DIR, else $XDG_STATE_HOME/sdm, else ~/.local/state/sdm */
    uint64_t min_archive_version; /* an archive (but the embedded one) whose version (sdm pack
                                  --archive-version; none reads as 0) is below this is refused at
                                  mount, SDM_ERROR_UNTRUSTED, under any signature policy; 0: none */
    /* ABI 1.5 (a 1.3-sized struct reads as zero here): */
    uint64_t device_memory_budget; /* bytes of device memory this runtime's loaded modules may take
                                  on each device, as the device shows what its loads took
                                  (cuMemGetInfo around each; what the images declare when it cannot
                                  say): a load past it evicts the least recently used idle modules,
                                  which reload at their next use (docs/LOADING.md, "A device-memory
                                  budget"); 0: $SDM_DEVICE_MEMORY_BUDGET, else none */
} sdm_runtime_params;

/* sdm_runtime_params.jit_isolation (ABI 1.2). An isolated link runs in sdm-jit-helper, a program
 * installed beside libsdm (in its sdm/ folder; $SDM_JIT_HELPER names another), under the time and
 * memory limits: a compiler that crashes, hangs or runs out of memory there is SDM_ERROR_JIT naming
 * the signal or the limit, and the host lives. The driver's JIT always compiles inside the host,
 * so it is not used for a link that is isolated. */
enum {
    SDM_ISOLATION_DEFAULT = 0u, /* $SDM_JIT_ISOLATION (auto, always, never), else AUTO */
    SDM_ISOLATION_AUTO = 1u,    /* isolate what sdm cannot fully check: LTO-IR, and PTX from an
                                       archive no trusted key signed (the embedded archive is trusted) */
    SDM_ISOLATION_ALWAYS = 2u,  /* isolate every link */
    SDM_ISOLATION_NEVER = 3u    /* link inside this process (a watchdog bounds the fetch's wait, not
                                       the link's memory, and cannot stop a link that hangs) */
};

/* sdm_runtime_params.signature_policy (ABI 1.2). A host that sets a policy cannot be weakened by
 * the environment: $SDM_REQUIRE_SIGNED then changes nothing, and trusted keys the host gives
 * replace $SDM_TRUSTED_KEYS. Without libsodium in this build, WARN and REQUIRE are
 * SDM_ERROR_UNSUPPORTED at sdm_runtime_create. */
enum {
    SDM_SIGNATURES_DEFAULT = 0u, /* $SDM_REQUIRE_SIGNED=1: REQUIRE, =warn: WARN; unset: OFF */
    SDM_SIGNATURES_OFF = 1u,     /* signatures are not looked at (the behaviour before 1.2) */
    SDM_SIGNATURES_WARN = 2u,    /* an archive without a valid signature by a trusted key mounts,
                                    and the log says why once per archive */
    SDM_SIGNATURES_REQUIRE = 3u  /* such an archive is refused at mount (SDM_ERROR_UNTRUSTED), a
                                    layer of $SDM_ARCHIVE_PATH skipped, a reload keeps the old
                                    version; every payload is checked against its signed digest
                                    before use, and the cache serves only entries it authenticated */
};
enum {
    SDM_CACHE_DISABLED = 1u << 0,  /* read and write nothing (also $SDM_CACHE_DISABLE=1) */
    SDM_CACHE_READ_ONLY = 1u << 1  /* read, never write */
};
enum {
    SDM_JIT_NO_NVJITLINK = 1u << 0,  /* never link with nvJitLink */
    SDM_JIT_NO_DRIVER = 1u << 1,     /* never hand PTX to the driver's own JIT */
    SDM_JIT_NO_PTX_COMPILER = 1u << 2 /* never compile with nvPTXCompiler (ABI 1.1) */
};

/* Creates a runtime. Cheap: the driver is loaded on first need, and a machine without one still
 * opens, lists and verifies archives. `params` may be NULL for the defaults. */
SDM_API sdm_status sdm_runtime_create(const sdm_runtime_params* params, sdm_runtime** runtime, sdm_error** error);
/* Accepts NULL. Not thread-safe with other calls on the same runtime. Waits for the work launched
 * through sdm_launch on modules it unloads, then unloads them. What outlives it (docs/ABI.md,
 * "Lifetimes"): errors and kernel lists stay valid (a list needs nothing of its runtime); kernel
 * handles, and the strings sdm_archive_info_get and sdm_kernel_info_get handed out, are freed
 * with it and must not be used after. A module that a live CUDA graph captured a launch of (and
 * its image's bytes) is not unloaded: it stays loaded until its context is destroyed, so the graph
 * keeps replaying (logged as a warning: destroy the graphs first to have sdm unload it). */
SDM_API void sdm_runtime_destroy(sdm_runtime* runtime);
/* A copy of the last error any call on this runtime reported, for hosts that cannot pass an
 * `error` pointer: SDM_OK with *last set to a new error the caller destroys; SDM_ERROR_NOT_FOUND
 * when no call has failed yet; SDM_ERROR_INVALID_ARGUMENT for NULL arguments. */
SDM_API sdm_status sdm_runtime_last_error(sdm_runtime* runtime, sdm_error** last);

/* ---- archives ------------------------------------------------------------------------------ */

/* Mounts an archive file (mapped read-only). Later mounts take precedence over earlier ones. A
 * missing or unreadable file is SDM_ERROR_IO, a damaged one SDM_ERROR_ARCHIVE_CORRUPT, one that
 * needs a newer sdm SDM_ERROR_ARCHIVE_UNSUPPORTED; each message names the file. */
SDM_API sdm_status sdm_archive_mount_file(sdm_runtime* runtime, const char* path, sdm_error** error);
/* Mounts an archive from memory. The bytes are copied; `label` names it in messages (may be NULL). */
SDM_API sdm_status sdm_archive_mount_memory(sdm_runtime* runtime, const void* data, size_t size, const char* label,
                                            sdm_error** error);

/* Hot reload (ABI 1.1). Remounts every mounted archive file from disk (one whose content did not
 * change is kept as it is). A new version takes the old one's place in the layer order: new
 * fetches get its images, while kernels fetched before keep working until released with
 * sdm_kernel_release (the old modules unload then). A file that fails to mount (damaged,
 * incompatible, missing) leaves the version mounted before serving: the first such failure is
 * returned, naming the file and saying so, after every file was tried; each is also logged.
 * `reloaded` (may be NULL) receives how many archives were replaced. Thread-safe with fetches. */
SDM_API sdm_status sdm_runtime_reload(sdm_runtime* runtime, uint32_t* reloaded, sdm_error** error);
/* The opt-in change check, cheap enough to poll once a frame: one stat() per mounted archive
 * file; only files that changed (device, inode, size or modification time) are remounted, as
 * sdm_runtime_reload does. */
SDM_API sdm_status sdm_runtime_poll_archives(sdm_runtime* runtime, uint32_t* reloaded, sdm_error** error);
/* Unmount (ABI 1.5). The archive mounted as `label` (sdm_archive_info's label: its path as
 * mounted, the label given to sdm_archive_mount_memory, or "embedded") leaves the layer order, with
 * every overlay that stood on it (logged): new fetches no longer see it, and a name only it listed
 * is SDM_ERROR_NOT_FOUND from now on. As after a reload, kernels fetched from it keep working until
 * released with sdm_kernel_release; its modules unload then, once the work queued with them has
 * finished (and once no CUDA graph that captured a launch of them exists). An archive of
 * SDM_ARCHIVE_PATH may be unmounted too. SDM_ERROR_NOT_FOUND when no archive is mounted as
 * `label` (the message lists what is), SDM_ERROR_AMBIGUOUS when several are (nothing is
 * unmounted). `unmounted` (may be NULL) receives how many archives went. Thread-safe with fetches,
 * launches and reloads. */
SDM_API sdm_status sdm_archive_unmount(sdm_runtime* runtime, const char* label, uint32_t* unmounted, sdm_error** error);

typedef struct sdm_archive_info {
    uint32_t struct_size;      /* sizeof(sdm_archive_info) */
    uint32_t entry_count;
    uint32_t kernel_count;
    uint16_t kernel_abi_major;
    uint16_t kernel_abi_minor;
    uint16_t format_major;
    uint16_t format_minor;
    uint32_t embedded;         /* 1 for the archive embedded in libsdm */
    uint64_t size_bytes;
    const char* label;         /* path, or the label given; owned by the runtime */
    const char* content_version; /* from the manifest, "" without one; owned by the runtime */
} sdm_archive_info;

SDM_API sdm_status sdm_archive_count(sdm_runtime* runtime, uint32_t* count, sdm_error** error);
/* Mounted archives in mount order; strings valid until the runtime is destroyed (an archive
 * unmounted or replaced by a reload included). */
SDM_API sdm_status sdm_archive_info_get(sdm_runtime* runtime, uint32_t index, sdm_archive_info* info, sdm_error** error);

/* ---- devices ------------------------------------------------------------------------------- */

typedef int32_t sdm_device_class;
enum {
    SDM_DEVICE_CLASS_UNSUPPORTED = 0,
    SDM_DEVICE_CLASS_MODERN = 1, /* 9.0 / 10.0 / 10.3 with >= 232,448 B opt-in shared memory */
    SDM_DEVICE_CLASS_A100 = 2,   /* 8.0 with 166,912 B */
    SDM_DEVICE_CLASS_RTX = 3     /* 8.6 / 8.9 / 12.0 with 101,376 B */
};

/* The CUDA driver's version (12080 for 12.8); loads the driver if needed. */
SDM_API sdm_status sdm_driver_version(sdm_runtime* runtime, int32_t* version, sdm_error** error);
/* Visible CUDA devices; 0 is a success. Without a driver: SDM_ERROR_NO_DRIVER (and likewise for
 * every device call), while archives still mount and list. */
SDM_API sdm_status sdm_device_count(sdm_runtime* runtime, int32_t* count, sdm_error** error);

typedef struct sdm_device_info {
    uint32_t struct_size;          /* sizeof(sdm_device_info) */
    int32_t ordinal;
    int32_t capability_major;
    int32_t capability_minor;
    sdm_device_class device_class; /* SDM_DEVICE_CLASS_UNSUPPORTED outside the hardware matrix */
    int32_t sm_count;
    uint64_t l2_bytes;
    int32_t smem_optin_bytes;      /* the device's own opt-in shared memory per block */
    int32_t smem_cap_bytes;        /* what the class's plans assume (0 when unsupported) */
    int32_t smem_per_sm_bytes;     /* smem_cap_bytes + 1,024 reserved per block (0 when unsupported) */
    int32_t pdl_allowed;           /* programmatic dependent launch: modern only */
    int32_t clusters_allowed;      /* thread-block clusters: modern only */
    int32_t untested;              /* 1: a class this release has not tested (rtx): results are
                                      unverified, and the log warns once per device (ABI 1.1;
                                      zero before) */
    char name[256];                /* the driver's name for the device, NUL-terminated */
} sdm_device_info;

/* Fills `info` for any device, supported or not; forced test rows apply. */
SDM_API sdm_status sdm_device_info_get(sdm_runtime* runtime, int32_t ordinal, sdm_device_info* info, sdm_error** error);
/* The device's class, or SDM_ERROR_UNSUPPORTED_DEVICE with a message naming the supported GPUs
 * and the device's name, capability and opt-in shared memory. */
SDM_API sdm_status sdm_device_class_get(sdm_runtime* runtime, int32_t ordinal, sdm_device_class* device_class, sdm_error** error);
/* "modern", "a100", "rtx", "unsupported"; static. */
SDM_API const char* sdm_device_class_name(sdm_device_class device_class);

/* ---- kernels ------------------------------------------------------------------------------- */

typedef struct sdm_kernel sdm_kernel;

/* The kernel `name` on device `ordinal`, loading its module on first use (once per device and
 * module, however many threads ask at once): the newest mounted archive listing the kernel serves
 * it. ABI 1.3: `name` is the name an archive lists (a C++ kernel's mangled symbol), or, when no
 * archive lists it, a C++ spelling of it, matched on every mounted archive's demangled names in a
 * canonical form (whitespace; the toolkit's inline namespaces, the LP64 integer typedefs, literal
 * casts and suffixes; trailing template arguments left to defaults where one kernel answers):
 * the whole declaration as c++filt prints it
 * ("ns::reduce<int>(int const*, int*, int)"), or a name expression as CuPy takes it, without the
 * parameter list ("ns::reduce<int>", "fill<float, 256>", or "fill" when one instantiation has that
 * name). Several kernels matching is SDM_ERROR_AMBIGUOUS listing them; none, SDM_ERROR_NOT_FOUND
 * naming the closest kernels and sdm_kernel_list_create (docs/LOADING.md, "Kernel names"). ABI
 * 1.4: a name expression recorded when the archive was built (`sdm import --name-expression`) is
 * found before the C++ spellings; any of these names may be qualified by its module as
 * "MODULE!NAME" ('!' is never part of a C++ name), and a name that several modules of the serving
 * archive define is SDM_ERROR_AMBIGUOUS naming the modules unless qualified: never one module's
 * kernel for another's. The image is chosen for the device (a cubin, else PTX linked with nvJitLink and cached,
 * else the driver's JIT); every kernel the manifest lists for the module must resolve. `stream`
 * (a CUstream, may be NULL) is checked before any JIT: a load that would JIT while it captures a
 * CUDA graph is SDM_ERROR_GRAPH_CAPTURE. The handle stays valid until the runtime is destroyed, or,
 * after a reload replaced its archive, until sdm_kernel_release drops the reference it holds; a
 * released handle of an unloaded module is reported as such (SDM_ERROR_INVALID_ARGUMENT) for a while,
 * but a handle used after sdm_runtime_destroy is a use of freed memory. */
SDM_API sdm_status sdm_kernel_get(sdm_runtime* runtime, int32_t ordinal, const char* name, void* stream, sdm_kernel** kernel,
                                  sdm_error** error);
/* sdm_kernel_get that also checks the kernel's parameter signature against `signature`, what the
 * host was compiled for ("ptr,f32,i32"; spaces ignored): a kernel declaring another is
 * SDM_ERROR_MISMATCH, with both signatures in the message. NULL `signature`: no check. ABI 1.1.
 * ABI 1.3: a signature derived from an image (b8..b64, opaque: what `sdm import` writes; see
 * docs/FORMAT.md, "Derived signatures") agrees with every typed one of its layout, as `sdm pack`
 * checks it: b32 with i32, u32 or f32, b64 with ptr, i64, u64 or f64, b16 with f16 or bf16,
 * opaque:SIZE:ALIGN (and b8) with any parameter of that size and alignment. The message of a
 * mismatch names the first parameter that differs. */
SDM_API sdm_status sdm_kernel_get_checked(sdm_runtime* runtime, int32_t ordinal, const char* name, const char* signature, void* stream,
                                          sdm_kernel** kernel, sdm_error** error);
/* Drops the reference a successful sdm_kernel_get took (ABI 1.1). Only matters across a reload:
 * a module of a replaced archive unloads when its last reference goes, once the work sdm_launch
 * queued with it has finished (an event on each stream it used; after sdm_kernel_function, a
 * synchronize of its context); current modules stay loaded until the runtime is destroyed.
 * Releasing more often than fetched is SDM_ERROR_INVALID_ARGUMENT. Hosts that never reload may
 * ignore it. */
SDM_API sdm_status sdm_kernel_release(sdm_runtime* runtime, const sdm_kernel* kernel, sdm_error** error);
/* The kernel's CUfunction, for hosts that launch it themselves. */
SDM_API sdm_status sdm_kernel_function(const sdm_kernel* kernel, void** function, sdm_error** error);

/* sdm_kernel_info.image_kind: the archive's image kinds. The values are those of every ABI; the
 * names are ABI 1.3 (before, sdm.h gave the numbers in a comment). */
enum {
    SDM_IMAGE_KIND_CUBIN = 1u,  /* a cubin (ELF) for one SM */
    SDM_IMAGE_KIND_PTX = 2u,    /* PTX for one virtual arch, compiled for the device */
    SDM_IMAGE_KIND_LTO_IR = 3u, /* NVVM LTO-IR for one virtual arch, linked by nvJitLink */
    SDM_IMAGE_KIND_FATBIN = 4u  /* an nvcc fatbinary; the driver picks its member */
};

/* sdm_kernel_info.source: what produced the image the driver loaded. The values are those of every
 * ABI; the names are ABI 1.3. */
enum {
    SDM_IMAGE_SOURCE_ARCHIVE_CUBIN = 1u, /* the archive's cubin (decoded when compressed) */
    SDM_IMAGE_SOURCE_CACHE = 2u,         /* the kernel cache: what an earlier load built or decoded */
    SDM_IMAGE_SOURCE_NVJITLINK = 3u,     /* linked by nvJitLink */
    SDM_IMAGE_SOURCE_DRIVER_JIT = 4u,    /* the driver's own JIT, given PTX */
    SDM_IMAGE_SOURCE_FATBIN = 5u,        /* a cubin sdm chose inside the archive's fatbinary */
    SDM_IMAGE_SOURCE_PTX_COMPILER = 6u   /* compiled by nvPTXCompiler (ABI 1.1) */
};

typedef struct sdm_kernel_info {
    uint32_t struct_size;      /* sizeof(sdm_kernel_info) */
    int32_t ordinal;
    uint32_t image_kind;       /* SDM_IMAGE_KIND_* */
    uint32_t image_sm;         /* the chosen image's arch (90 for sm_90 / compute_90) */
    uint32_t loaded_sm;        /* what was loaded: the cubin's or the JIT target's SM */
    uint32_t source;           /* SDM_IMAGE_SOURCE_* */
    const char* name;          /* owned by the runtime */
    const char* module;
    const char* archive;       /* the archive's label */
    const char* signature;     /* "ptr,ptr,i32" */
} sdm_kernel_info;

SDM_API sdm_status sdm_kernel_info_get(const sdm_kernel* kernel, sdm_kernel_info* info, sdm_error** error);

/* Loads eagerly the modules of `names` (count of them), or of every kernel every mounted archive
 * lists when count is 0, on device `ordinal`; JIT links run in parallel across cores. The first
 * failure is returned; the other modules still load. */
SDM_API sdm_status sdm_preload(sdm_runtime* runtime, int32_t ordinal, const char* const* names, uint32_t count, sdm_error** error);

typedef struct sdm_cache_stats {
    uint32_t struct_size;      /* sizeof(sdm_cache_stats) */
    uint32_t reserved0;
    uint64_t hits;
    uint64_t misses;
    uint64_t builds;           /* images built on a miss: links, compiles, and compressed cubins decompressed */
    uint64_t evictions;
    uint64_t bad_entries;      /* damaged entries found and removed */
    uint64_t bytes_written;
    double build_milliseconds;
} sdm_cache_stats;

/* This runtime's cache counters (since its creation). */
SDM_API sdm_status sdm_cache_stats_get(sdm_runtime* runtime, sdm_cache_stats* stats, sdm_error** error);

/* ---- background warm-up (ABI 1.5) ------------------------------------------------------------ */

/* A warm-up: sdm_preload's work done in the background, on a few threads of the runtime's (started
 * at its first warm-up, at most $SDM_WARMUP_THREADS, by default the cores up to 8), module by
 * module. Owned by the caller until sdm_warmup_destroy; it may outlive its runtime (destroying the
 * runtime cancels it first), and its calls then still answer. */
typedef struct sdm_warmup sdm_warmup;

/* Called once per warm-up, on one of sdm's threads, when it has finished: `status` is what
 * sdm_warmup_wait returns (SDM_OK, the first failure, or SDM_ERROR_CANCELLED). It may call sdm
 * (sdm_kernel_get, sdm_warmup_progress, sdm_warmup_destroy of this warm-up, which then frees it
 * after the callback returns) but must not destroy the runtime, nor wait for another warm-up
 * (sdm_warmup_wait with a deadline, sdm_warmup_destroy of another running one: with one thread,
 * that one could never run); when sdm_runtime_destroy cancelled the warm-up, it runs within that
 * call and must not call into that runtime. No lock of sdm's is held while it runs. */
typedef void (*sdm_warmup_done_fn)(void* user_data, sdm_status status, const sdm_warmup* warmup);

/* Starts warming up what sdm_preload would load (the modules of `names`, count of them, or of
 * every kernel every mounted archive lists when count is 0, on device `ordinal`, each module's
 * kernels resolved) and returns at once with *warmup; the names are copied. The modules are listed
 * and loaded on sdm's threads: across pending warm-ups, a module of the one of highest `priority`
 * starts first (then the earliest started). A fetch of a kernel whose module a warm-up is loading
 * waits for that load instead of loading it again. A name that selects nothing, a module that
 * fails, a bad ordinal are the warm-up's outcome (the first failure, naming every kernel that did
 * not load, as sdm_preload's), not this call's: it fails only for NULL arguments (runtime, warmup,
 * names when count > 0, an entry of names) and when no thread can be started. `done` (may be
 * NULL) is called once when it finishes, with `user_data`. Warm-up threads hold no CUDA context
 * but the device's (or, with SDM_RUNTIME_CURRENT_CONTEXT, the calling thread's, taken now). After
 * fork() the child has none of sdm's threads: a child must not use its parent's runtime, nor any
 * warm-up of it. */
SDM_API sdm_status sdm_preload_async(sdm_runtime* runtime, int32_t ordinal, const char* const* names, uint32_t count, int32_t priority,
                                     sdm_warmup_done_fn done, void* user_data, sdm_warmup** warmup, sdm_error** error);
/* How far it got: modules finished (loaded or failed) and modules to load. *modules_total is 0
 * until the warm-up has listed its modules; once it finished, *modules_done below *modules_total
 * says it was cancelled. Either out-parameter may be NULL, not both. */
SDM_API sdm_status sdm_warmup_progress(const sdm_warmup* warmup, uint32_t* modules_done, uint32_t* modules_total, sdm_error** error);
/* Waits at most `timeout_ms` milliseconds (0: only looks) for the warm-up to finish. Finished: its
 * outcome, each time it is asked: SDM_OK, its first failure (the error names every kernel that did
 * not load), or SDM_ERROR_CANCELLED; the done callback may still be running. Not finished by the
 * deadline: SDM_ERROR_TIMEOUT, and it goes on. A NULL warmup is SDM_ERROR_INVALID_ARGUMENT. */
SDM_API sdm_status sdm_warmup_wait(sdm_warmup* warmup, uint32_t timeout_ms, sdm_error** error);
/* Cancels the warm-up and returns at once: modules it has not started are skipped; those loading
 * finish (they stay loaded). Its outcome becomes SDM_ERROR_CANCELLED unless it had finished (then
 * nothing changes) and is known once its loads under way end. A NULL warmup is
 * SDM_ERROR_INVALID_ARGUMENT. */
SDM_API sdm_status sdm_warmup_cancel(sdm_warmup* warmup, sdm_error** error);
/* Cancels the warm-up if it is still running, waits for the loads it started and for its done
 * callback to return, and frees it. Called from its own done callback, it frees it once the
 * callback returns. Accepts NULL. */
SDM_API void sdm_warmup_destroy(sdm_warmup* warmup);

/* ---- plans and launches (ABI 1.1) ----------------------------------------------------------- */

enum {
    SDM_PLAN_PDL = 1u << 0,        /* launch with programmatic dependent launch (modern class only) */
    SDM_PLAN_COOPERATIVE = 1u << 1 /* ABI 1.3: a cooperative launch (grid-wide sync, cudaLaunchCooperativeKernel):
                                      refused unless the device supports it and the whole grid can be
                                      resident at once (the message gives the figures) */
};

/* A launch shape. Zero-initialised fields mean the defaults (ABI 1.3; a 1.1-sized struct reads as
 * zero past its size): a cluster dimension of 0 is 1, grid_y, grid_z, block_y and block_z of 0 are
 * 1, priority 0 is the stream's own, no `next`. grid and block (x) have no default: 0 is refused. */
typedef struct sdm_plan {
    uint32_t struct_size;      /* sizeof(sdm_plan) */
    uint32_t flags;            /* SDM_PLAN_PDL, SDM_PLAN_COOPERATIVE */
    uint32_t grid;             /* blocks in x (1 .. 2^31-1) */
    uint32_t block;            /* threads per block in x (x*y*z: 1 .. 1024) */
    uint32_t smem_bytes;       /* dynamic shared memory per block */
    uint32_t cluster[3];       /* blocks per cluster in x, y, z; each grid dimension a multiple of its
                                  cluster's; 1,1,1 (or 0,0,0): no clusters (modern class only) */
    int32_t blocks_per_sm;     /* what the plan aims for */
    int32_t occupancy;         /* blocks per SM the driver says fit (its occupancy calculator) */
    int32_t rule;              /* the manifest's plan rule that chose it (0-based); -1: a plugin or
                                  sdm_plan_for_elements */
    uint32_t reserved0;
    /* ABI 1.3 (a 1.1-sized struct reads as zero here: y and z of 1, priority 0, no chain): */
    uint32_t grid_y;           /* blocks in y (0 or 1 .. 65535) */
    uint32_t grid_z;           /* blocks in z (0 or 1 .. 65535) */
    uint32_t block_y;          /* threads in y (0 or 1 .. 1024) */
    uint32_t block_z;          /* threads in z (0 or 1 .. 64) */
    int32_t priority;          /* the launch's priority (CU_LAUNCH_ATTRIBUTE_PRIORITY), within the
                                  context's stream priority range; 0: the stream's */
    uint32_t reserved1;        /* zero */
    const sdm_chain* next;     /* extensions: sdm_launch_attributes; unknown types are skipped */
} sdm_plan;

/* sdm_chain types (ABI 1.3). */
enum { SDM_CHAIN_LAUNCH_ATTRIBUTES = 1u };

/* Launch attributes sdm has no field for (an access policy window, a memory sync domain, ...),
 * handed to cuLaunchKernelEx as they are, after sdm's own (cluster, PDL, cooperative, priority),
 * which they may not repeat. */
typedef struct sdm_launch_attributes {
    uint32_t struct_size;      /* sizeof(sdm_launch_attributes) */
    uint32_t type;             /* SDM_CHAIN_LAUNCH_ATTRIBUTES */
    const sdm_chain* next;
    const void* attributes;    /* `count` CUlaunchAttribute values (cuda.h), read during the call */
    uint32_t count;            /* at most 16 */
    uint32_t reserved0;        /* zero */
} sdm_launch_attributes;

/* The plan for launching `kernel` on its device for `problem` (the kernel's problem parameters,
 * in manifest order): a plugin's, else the first matching rule of the manifest's table for the
 * device's class, checked against the class (threads, shared memory, clusters, PDL) and the
 * driver's occupancy calculator. Memoized per problem (a hit is a lock and a hash lookup). No
 * rule for the device: SDM_ERROR_NOT_FOUND; a plan that cannot run: SDM_ERROR_INVALID_ARGUMENT. */
SDM_API sdm_status sdm_plan_select(const sdm_kernel* kernel, const int64_t* problem, uint32_t problem_count, sdm_plan* plan, sdm_error** error);
/* Launches `kernel` with `plan` on `stream` (a CUstream of the kernel's device, or NULL for that
 * device's context current on this thread) through cuLaunchKernelEx, with the plan's cluster dims
 * and PDL. `arg_count` must equal the kernel's signature's length (args as for cuLaunchKernel).
 * The function's dynamic shared memory limit is raised once per size the plans need. ABI 1.3: in
 * three dimensions, cooperative, with a priority and the attributes of `plan->next`; a dimension
 * out of range is SDM_ERROR_INVALID_ARGUMENT naming it and its limit. A launch into a stream that
 * is capturing a CUDA graph (cuStreamGetCaptureInfo, asked at every launch) ties the module to the
 * graph: a reload's retirement does not unload it, nor does sdm_runtime_destroy, while the graph,
 * a graph cloned from it or an executable graph instantiated from it exists (a CUDA user object
 * the graph holds; docs/LOADING.md, "CUDA graphs"). A capture query or user object that fails is
 * the launch's error (SDM_ERROR_DRIVER) and the launch is not made; a driver older than CUDA 12.3
 * refuses a launch into a capture (SDM_ERROR_GRAPH_CAPTURE). */
SDM_API sdm_status sdm_launch(const sdm_kernel* kernel, const sdm_plan* plan, void* stream, void* const* args, uint32_t arg_count,
                              sdm_error** error);
/* Loads a plan-provider plugin (sdm_plugin.h); also $SDM_PLUGIN_PATH at sdm_runtime_create. A
 * plugin whose negotiation fails is not loaded: the error says why. */
SDM_API sdm_status sdm_plugin_load(sdm_runtime* runtime, const char* path, sdm_error** error);

/* A plan for a kernel without plan rules (ABI 1.3): one thread per element of `elements`, in blocks
 * of the size the driver's occupancy calculator suggests for the kernel with `smem_bytes` of dynamic
 * shared memory (cuOccupancyMaxPotentialBlockSize, within the kernel's own block limit), and as many
 * blocks as cover the elements. Fills `plan` (rule -1, occupancy the driver's blocks per SM); the
 * host may change it before sdm_launch. elements 0, or more than 2^31-1 blocks, is
 * SDM_ERROR_INVALID_ARGUMENT. */
SDM_API sdm_status sdm_plan_for_elements(const sdm_kernel* kernel, uint64_t elements, uint32_t smem_bytes, sdm_plan* plan, sdm_error** error);

/* ---- module globals (ABI 1.3) ---------------------------------------------------------------- */

/* The `__device__` or `__constant__` variable `name` (its symbol: mangled for a C++ variable in a
 * namespace) of `kernel`'s module as loaded for the kernel's device and context: its device address
 * and size in bytes. A global belongs to the image the handle's module loaded: after a reload
 * replaced the archive, a kernel fetched again has the new image's globals (with their initial
 * values), while the old handle keeps the old ones until it is released. No such variable is
 * SDM_ERROR_NOT_FOUND naming the module; a name the module lists as a kernel is
 * SDM_ERROR_INVALID_ARGUMENT. */
SDM_API sdm_status sdm_global_get(const sdm_kernel* kernel, const char* name, uint64_t* device_ptr, uint64_t* bytes, sdm_error** error);
/* Copies `bytes` from host memory `data` to the global `name` at `offset`, on `stream` (NULL: the
 * context's default stream), as cuMemcpyHtoDAsync does: `data` must stay valid until the stream
 * has done the copy. A range past the global's size is SDM_ERROR_INVALID_ARGUMENT naming both. A
 * copy captured into a CUDA graph keeps the module loaded while the graph exists, as sdm_launch does. */
SDM_API sdm_status sdm_global_write(const sdm_kernel* kernel, const char* name, uint64_t offset, const void* data, uint64_t bytes, void* stream,
                                    sdm_error** error);
/* Copies `bytes` of the global `name` from `offset` to host memory `data` on `stream`, as
 * cuMemcpyDtoHAsync does: synchronize the stream before reading `data`. */
SDM_API sdm_status sdm_global_read(const sdm_kernel* kernel, const char* name, uint64_t offset, void* data, uint64_t bytes, void* stream,
                                   sdm_error** error);

/* ---- kernel listing (ABI 1.3) ---------------------------------------------------------------- */

typedef struct sdm_kernel_list sdm_kernel_list;

/* sdm_kernel_list_create's archive_index (UINT32_MAX): every kernel the runtime serves (each name
 * once, from the newest archive listing it), instead of one archive's. */
#define SDM_LIST_SERVED 4294967295

typedef struct sdm_kernel_entry {
    uint32_t struct_size;      /* sizeof(sdm_kernel_entry) */
    uint32_t archive_index;    /* the archive listing it (mount order: sdm_archive_info_get) */
    const char* name;          /* what the archive lists: a C++ kernel's mangled symbol */
    const char* demangled;     /* as c++filt prints it; "" when the name is not a C++ symbol (extern
                                  "C") or does not demangle */
    const char* module;
    const char* signature;     /* "ptr,f32,i32", or derived: "b64,b32,b32" (docs/FORMAT.md) */
    const char* targets;       /* the module's images: "sm_90,sm_80,compute_90" */
    uint32_t shadowed;         /* listing one archive: 1 when a newer mounted archive lists the same
                                  name (and serves it instead); listing SDM_LIST_SERVED: 0 */
    uint32_t reserved0;
} sdm_kernel_entry;

/* A snapshot of the kernels of mounted archive `archive_index` (mount order), or of every kernel
 * the runtime serves (SDM_LIST_SERVED), sorted by name. Later mounts and reloads do not change it.
 * An index past the mounted archives is SDM_ERROR_NOT_FOUND. The list needs nothing of its runtime:
 * it stays valid, and its calls' errors are reported, after sdm_runtime_destroy (until
 * sdm_kernel_list_destroy). */
SDM_API sdm_status sdm_kernel_list_create(sdm_runtime* runtime, uint32_t archive_index, sdm_kernel_list** list, sdm_error** error);
SDM_API sdm_status sdm_kernel_list_count(const sdm_kernel_list* list, uint32_t* count, sdm_error** error);
/* Entry `index` (0 .. count-1); its strings are owned by the list and live as long as it does. */
SDM_API sdm_status sdm_kernel_list_get(const sdm_kernel_list* list, uint32_t index, sdm_kernel_entry* entry, sdm_error** error);
/* Accepts NULL. */
SDM_API void sdm_kernel_list_destroy(sdm_kernel_list* list);

/* ---- footprint (ABI 1.5) --------------------------------------------------------------------- */

/* What a runtime holds now, summed over every device (docs/LOADING.md, "Footprint"). Device bytes
 * are what each loaded module's image declares for device memory: its code, module constants and
 * globals (ELF sections the driver places there; not shared, local or parameter memory), before the
 * driver rounds its allocations. A module the driver's JIT loaded from PTX declares none: it counts
 * 0 and in unknown_device_modules. */
typedef struct sdm_footprint {
    uint32_t struct_size;          /* sizeof(sdm_footprint) */
    uint32_t module_count;         /* modules loaded, those of replaced or unmounted archives still held or draining included */
    uint64_t device_bytes;         /* the modules' device bytes, summed */
    uint64_t host_bytes;           /* image bytes kept for the driver's library path (each library once) */
    uint64_t readahead_bytes;      /* images decoded (or queued) ahead of their first fetch */
    uint64_t reference_bytes;      /* decoded references the archives keep for their compressed images */
    uint64_t archive_memory_bytes; /* sdm's copies of archives mounted from memory, and decoded manifests */
    uint64_t archive_mapped_bytes; /* archive files mapped read-only (the kernel pages them in and out) */
    uint64_t cache_bytes;          /* the kernel cache's entries on disk; 0 when this runtime has not opened it */
    uint32_t unknown_device_modules; /* modules whose device bytes are unknown (the driver's JIT loaded them) */
    uint32_t reserved0;
} sdm_footprint;

/* The runtime's footprint now. Walks every loaded module and mounted archive (a report, not a call
 * for every frame); it never opens the kernel cache. */
SDM_API sdm_status sdm_footprint_get(sdm_runtime* runtime, sdm_footprint* footprint, sdm_error** error);

typedef struct sdm_module_list sdm_module_list;

/* sdm_module_entry.state */
typedef uint32_t sdm_module_state;
enum {
    SDM_MODULE_SERVING = 0u,  /* serves fetches */
    SDM_MODULE_RETIRED = 1u,  /* its archive was replaced or unmounted: unloaded when its kernels are released */
    SDM_MODULE_DRAINING = 2u, /* unloaded by sdm once the work (or the CUDA graphs) that used it finishes */
    SDM_MODULE_EVICTED = 3u   /* unloaded under the device-memory budget; reloaded at its next use (0 device bytes) */
};

typedef struct sdm_module_entry {
    uint32_t struct_size;      /* sizeof(sdm_module_entry) */
    int32_t ordinal;           /* the device it is loaded on */
    const char* module;
    const char* archive;       /* the label of the archive it came from */
    uint64_t device_bytes;     /* as sdm_footprint counts them; 0 when unknown */
    uint64_t host_bytes;       /* image bytes its library keeps (shared with the contexts that load the same image) */
    uint64_t references;       /* kernels fetched from it and not released */
    uint32_t kernels;          /* kernels resolved in it so far */
    sdm_module_state state;
} sdm_module_entry;

/* A snapshot of the loaded modules, in load order, then those draining. Later loads do not change
 * it; it stays valid, and its calls' errors are reported, after sdm_runtime_destroy (until
 * sdm_module_list_destroy). */
SDM_API sdm_status sdm_module_list_create(sdm_runtime* runtime, sdm_module_list** list, sdm_error** error);
SDM_API sdm_status sdm_module_list_count(const sdm_module_list* list, uint32_t* count, sdm_error** error);
/* Entry `index` (0 .. count-1); its strings are owned by the list and live as long as it does. */
SDM_API sdm_status sdm_module_list_get(const sdm_module_list* list, uint32_t index, sdm_module_entry* entry, sdm_error** error);
/* Accepts NULL. */
SDM_API void sdm_module_list_destroy(sdm_module_list* list);

/* ---- kernel attributes and settings (ABI 1.4) ------------------------------------------------- */

/* What the driver says of a kernel's function (cuFuncGetAttribute), all of it in one struct filled
 * by one call. A struct rather than an attribute enum and a getter: every binding already maps
 * sdm's structs (ctypes, cgo, Rust, Julia and C++ take them from the generated declarations), one
 * call reads a consistent set, and a later minor appends fields behind struct_size, where an enum
 * getter would need a call per attribute and a per-language switch. Sizes are bytes; versions are
 * major * 10 + minor (90 for 9.0), as the driver gives them. */
typedef struct sdm_kernel_attributes {
    uint32_t struct_size;      /* sizeof(sdm_kernel_attributes) */
    uint32_t flags;            /* SDM_KERNEL_ATTRIBUTES_*: which optional groups were read */
    int32_t max_threads_per_block; /* the most threads a block of it may have (registers bound it) */
    int32_t shared_size_bytes; /* static shared memory per block */
    int32_t const_size_bytes;  /* constant memory it uses */
    int32_t local_size_bytes;  /* local memory per thread */
    int32_t num_regs;          /* registers per thread */
    int32_t ptx_version;       /* the PTX virtual arch it was compiled from (90: compute_90) */
    int32_t binary_version;    /* the SM its binary is for (90: sm_90) */
    int32_t cache_mode_ca;     /* 1: compiled with -Xptxas --dlcm=ca (global loads cached in L1) */
    int32_t max_dynamic_shared_size_bytes; /* the dynamic shared memory a launch may ask for, as set now
                                  (48 KiB unless sdm_kernel_set or a launch needing more raised it) */
    int32_t preferred_shared_memory_carveout; /* percent of L1 preferred as shared memory; -1: none */
    int32_t cluster_size_must_be_set;     /* the cluster fields below: 0 without SDM_KERNEL_ATTRIBUTES_CLUSTER */
    int32_t required_cluster_width;       /* __cluster_dims__ x, y, z; 0 when it declares none */
    int32_t required_cluster_height;
    int32_t required_cluster_depth;
    int32_t non_portable_cluster_size_allowed; /* 1: clusters of more than 8 blocks may launch */
    int32_t cluster_scheduling_policy_preference; /* a CUclusterSchedulingPolicy */
} sdm_kernel_attributes;

/* sdm_kernel_attributes.flags. */
enum {
    SDM_KERNEL_ATTRIBUTES_CLUSTER = 1u << 0 /* the cluster fields were read: a device of capability 9.0
                                               or later, whose driver answers for them */
};

/* What sdm_kernel_set sets. */
typedef int32_t sdm_kernel_setting;
enum {
    SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES = 1, /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
                                                        0 .. the device's opt-in shared memory per block
                                                        less the kernel's static shared memory */
    SDM_KERNEL_SETTING_PREFERRED_CARVEOUT = 2        /* CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
                                                        0 .. 100 percent of L1 as shared memory, or -1
                                                        for no preference */
};

/* Fills `attributes` for `kernel`'s function on its device. Unlike sdm_kernel_function, it does
 * not hand the function out, so a reload's retirement of the module still waits only for the
 * streams sdm launched on. A struct_size below the 1.4 size (72 bytes) is
 * SDM_ERROR_INVALID_ARGUMENT; only the 72 bytes this library knows are written. The cluster fields
 * are read on devices of capability 9.0 and later (flags say so). */
SDM_API sdm_status sdm_kernel_attributes_get(const sdm_kernel* kernel, sdm_kernel_attributes* attributes, sdm_error** error);
/* Sets `setting` to `value` on `kernel`'s function (cuFuncSetAttribute) and records it for the
 * kernel's name on its device: every function of that name sdm resolves on that device afterwards
 * gets it too (a fetch after sdm_runtime_reload, a fetch in another context), before the fetch
 * returns. A value past the limit is SDM_ERROR_INVALID_ARGUMENT naming the value and the limit
 * (the device's opt-in shared memory, the kernel's static shared memory) and records nothing; a
 * recorded value that a newer image cannot take (more static shared memory) fails that fetch the
 * same way. sdm_launch still raises the dynamic shared memory limit when a plan needs more than is
 * set. Handles fetched before in other contexts keep what they had. */
SDM_API sdm_status sdm_kernel_set(const sdm_kernel* kernel, sdm_kernel_setting setting, int32_t value, sdm_error** error);
/* How many blocks of `block_threads` threads with `smem_bytes` of dynamic shared memory can be
 * resident on one multiprocessor (cuOccupancyMaxActiveBlocksPerMultiprocessor), with the kernel's
 * settings. The dynamic shared memory limit is first raised to smem_bytes when it is lower, as
 * sdm_launch would; 0 means no such block fits. block_threads 0 is SDM_ERROR_INVALID_ARGUMENT. */
SDM_API sdm_status sdm_kernel_max_active_blocks(const sdm_kernel* kernel, uint32_t block_threads, uint32_t smem_bytes, int32_t* blocks_per_sm,
                                                sdm_error** error);
/* The block size of the highest occupancy for `smem_bytes` of dynamic shared memory per block,
 * with at most `block_threads_limit` threads (0: the kernel's own limit), and the fewest blocks
 * that reach it on the whole device (cuOccupancyMaxPotentialBlockSize, as sdm_plan_for_elements
 * asks it). Either out-parameter may be NULL, not both. */
SDM_API sdm_status sdm_kernel_max_potential_block_size(const sdm_kernel* kernel, uint32_t smem_bytes, uint32_t block_threads_limit,
                                                       int32_t* block_threads, int32_t* min_grid_blocks, sdm_error** error);

/* ---- the function table -------------------------------------------------------------------- */

/* For hosts that dlopen libsdm: every function above, in this order, never reordered; later
 * minors append. struct_size says how many members this library filled. */
typedef struct sdm_api {
    uint32_t struct_size;
    uint32_t abi_minor;
    const char* (*status_string)(sdm_status);
    uint32_t (*abi_version)(void);
    const char* (*version_string)(void);
    sdm_status (*error_code)(const sdm_error*);
    const char* (*error_message)(const sdm_error*);
    int32_t (*error_native)(const sdm_error*);
    const char* (*error_log)(const sdm_error*);
    void (*error_destroy)(sdm_error*);
    sdm_status (*runtime_create)(const sdm_runtime_params*, sdm_runtime**, sdm_error**);
    void (*runtime_destroy)(sdm_runtime*);
    sdm_status (*runtime_last_error)(sdm_runtime*, sdm_error**);
    sdm_status (*archive_mount_file)(sdm_runtime*, const char*, sdm_error**);
    sdm_status (*archive_mount_memory)(sdm_runtime*, const void*, size_t, const char*, sdm_error**);
    sdm_status (*archive_count)(sdm_runtime*, uint32_t*, sdm_error**);
    sdm_status (*archive_info_get)(sdm_runtime*, uint32_t, sdm_archive_info*, sdm_error**);
    sdm_status (*driver_version)(sdm_runtime*, int32_t*, sdm_error**);
    sdm_status (*device_count)(sdm_runtime*, int32_t*, sdm_error**);
    sdm_status (*device_info_get)(sdm_runtime*, int32_t, sdm_device_info*, sdm_error**);
    sdm_status (*device_class_get)(sdm_runtime*, int32_t, sdm_device_class*, sdm_error**);
    const char* (*device_class_name)(sdm_device_class);
    sdm_status (*kernel_get)(sdm_runtime*, int32_t, const char*, void*, sdm_kernel**, sdm_error**);
    sdm_status (*kernel_function)(const sdm_kernel*, void**, sdm_error**);
    sdm_status (*kernel_info_get)(const sdm_kernel*, sdm_kernel_info*, sdm_error**);
    sdm_status (*preload)(sdm_runtime*, int32_t, const char* const*, uint32_t, sdm_error**);
    sdm_status (*cache_stats_get)(sdm_runtime*, sdm_cache_stats*, sdm_error**);
    /* ABI 1.1 */
    sdm_status (*kernel_get_checked)(sdm_runtime*, int32_t, const char*, const char*, void*, sdm_kernel**, sdm_error**);
    sdm_status (*kernel_release)(sdm_runtime*, const sdm_kernel*, sdm_error**);
    sdm_status (*runtime_reload)(sdm_runtime*, uint32_t*, sdm_error**);
    sdm_status (*runtime_poll_archives)(sdm_runtime*, uint32_t*, sdm_error**);
    sdm_status (*plan_select)(const sdm_kernel*, const int64_t*, uint32_t, sdm_plan*, sdm_error**);
    sdm_status (*launch)(const sdm_kernel*, const sdm_plan*, void*, void* const*, uint32_t, sdm_error**);
    sdm_status (*plugin_load)(sdm_runtime*, const char*, sdm_error**);
    /* ABI 1.3 */
    sdm_status (*plan_for_elements)(const sdm_kernel*, uint64_t, uint32_t, sdm_plan*, sdm_error**);
    sdm_status (*global_get)(const sdm_kernel*, const char*, uint64_t*, uint64_t*, sdm_error**);
    sdm_status (*global_write)(const sdm_kernel*, const char*, uint64_t, const void*, uint64_t, void*, sdm_error**);
    sdm_status (*global_read)(const sdm_kernel*, const char*, uint64_t, void*, uint64_t, void*, sdm_error**);
    sdm_status (*kernel_list_create)(sdm_runtime*, uint32_t, sdm_kernel_list**, sdm_error**);
    sdm_status (*kernel_list_count)(const sdm_kernel_list*, uint32_t*, sdm_error**);
    sdm_status (*kernel_list_get)(const sdm_kernel_list*, uint32_t, sdm_kernel_entry*, sdm_error**);
    void (*kernel_list_destroy)(sdm_kernel_list*);
    /* ABI 1.4 */
    sdm_status (*kernel_attributes_get)(const sdm_kernel*, sdm_kernel_attributes*, sdm_error**);
    sdm_status (*kernel_set)(const sdm_kernel*, sdm_kernel_setting, int32_t, sdm_error**);
    sdm_status (*kernel_max_active_blocks)(const sdm_kernel*, uint32_t, uint32_t, int32_t*, sdm_error**);
    sdm_status (*kernel_max_potential_block_size)(const sdm_kernel*, uint32_t, uint32_t, int32_t*, int32_t*, sdm_error**);
    /* ABI 1.5 */
    sdm_status (*archive_unmount)(sdm_runtime*, const char*, uint32_t*, sdm_error**);
    sdm_status (*footprint_get)(sdm_runtime*, sdm_footprint*, sdm_error**);
    sdm_status (*module_list_create)(sdm_runtime*, sdm_module_list**, sdm_error**);
    sdm_status (*module_list_count)(const sdm_module_list*, uint32_t*, sdm_error**);
    sdm_status (*module_list_get)(const sdm_module_list*, uint32_t, sdm_module_entry*, sdm_error**);
    void (*module_list_destroy)(sdm_module_list*);
    sdm_status (*preload_async)(sdm_runtime*, int32_t, const char* const*, uint32_t, int32_t, sdm_warmup_done_fn, void*, sdm_warmup**, sdm_error**);
    sdm_status (*warmup_progress)(const sdm_warmup*, uint32_t*, uint32_t*, sdm_error**);
    sdm_status (*warmup_wait)(sdm_warmup*, uint32_t, sdm_error**);
    sdm_status (*warmup_cancel)(sdm_warmup*, sdm_error**);
    void (*warmup_destroy)(sdm_warmup*);
} sdm_api;

/* The function table for ABI `major`. *minor: in, the highest minor the host knows; out, the
 * minor this library implements (the table holds at least the host's functions when out >= in).
 * A major this library does not implement is SDM_ERROR_UNSUPPORTED. The table is static. */
SDM_API sdm_status sdm_get_api(uint32_t major, uint32_t* minor, const sdm_api** api);

#ifdef __cplusplus
}
#endif

#endif /* SDM_SDM_H */
