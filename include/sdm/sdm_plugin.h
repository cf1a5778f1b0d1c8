/* sdm plan-provider plugins (ABI.md rule 11). A plugin is a shared library that exports one
 * function, `sdm_plugin_negotiate`. The host (libsdm) calls it with the plugin ABI major it speaks
 * and, in *minor, the highest minor it knows; the plugin lowers *minor to the highest minor it
 * implements (never raises it), fills `table` up to table->struct_size (which the host set), and
 * returns 0. Any other return, another major, or a table without `struct_size` set means the
 * plugin is not used; the host logs why. Optional members may be NULL: the host calls nothing the
 * plugin did not fill. Minor 0: select_plan, destroy. Minor 1 adds validate_image.
 *
 * Load a plugin with sdm_plugin_load (sdm.h) or list it in $SDM_PLUGIN_PATH (':'-separated). */
#ifndef SDM_SDM_PLUGIN_H
#define SDM_SDM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "sdm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SDM_PLUGIN_ABI_MAJOR 1
#define SDM_PLUGIN_ABI_MINOR 1
#define SDM_PLUGIN_NEGOTIATE_SYMBOL "sdm_plugin_negotiate"

/* What a plugin sees of the device a plan is for (forced test rows included). */
typedef struct sdm_plugin_device {
    uint32_t struct_size;
    int32_t ordinal;
    int32_t capability_major;
    int32_t capability_minor;
    sdm_device_class device_class;
    int32_t sm_count;
    uint64_t l2_bytes;
    int32_t smem_cap_bytes;      /* the class's opt-in shared memory per block */
    int32_t reserved0;
} sdm_plugin_device;

typedef struct sdm_plugin_plan_request {
    uint32_t struct_size;
    uint32_t problem_count;
    const char* kernel;
    const char* module;
    const char* archive;
    const sdm_plugin_device* device;
    const int64_t* problem;       /* the kernel's problem parameters, in manifest order */
    const sdm_plan* table_plan;   /* what the manifest's table chose; NULL when no rule matched */
} sdm_plugin_plan_request;

/* Minor 1: an image just loaded, after sdm's own image policy accepted it. */
typedef struct sdm_plugin_image {
    uint32_t struct_size;
    uint32_t image_kind;          /* SDM_IMAGE_KIND_* (sdm.h) */
    uint32_t image_sm;
    int32_t ptx_version;          /* what the driver reports for a kernel of it */
    const char* module;
    const char* archive;
    const sdm_plugin_device* device;
} sdm_plugin_image;

typedef struct sdm_plugin_table {
    uint32_t struct_size;         /* set by the host: how much of the table the plugin may fill */
    uint32_t reserved0;
    const char* name;             /* for the log; may be NULL */
    void* user;                   /* passed back to every call */
    /* 1: `plan` holds the plugin's plan (the host checks it; an invalid one is not used and is
     * logged); 0: no opinion, the manifest's table decides; < 0: an error, logged, table decides. */
    int32_t (*select_plan)(void* user, const sdm_plugin_plan_request* request, sdm_plan* plan);
    /* Called when the runtime goes. */
    void (*destroy)(void* user);
    /* Minor 1. 0: accept; non-zero: refuse the image (SDM_ERROR_IMAGE_REFUSED) with the
     * NUL-terminated reason written to `reason` (at most reason_size bytes). */
    int32_t (*validate_image)(void* user, const sdm_plugin_image* image, char* reason, size_t reason_size);
} sdm_plugin_table;

typedef int32_t (*sdm_plugin_negotiate_fn)(uint32_t host_major, uint32_t* minor, sdm_plugin_table* table);

#ifdef __cplusplus
}
#endif

#endif /* SDM_SDM_PLUGIN_H */
