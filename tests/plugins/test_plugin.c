/* The test plan-provider plugins (tests/runtime/select/test_plugins.cpp), one source built once per variant:
 *   SDM_TEST_PLUGIN_CURRENT  plugin ABI 1.1: plans of 128 threads for every kernel; refuses images
 *                            of module "forbidden"; on destroy, creates the file $SDM_TEST_PLUGIN_MARKER
 *   SDM_TEST_PLUGIN_OLDER    implements 1.0: plans of 64 threads; it also writes a validate_image
 *                            that aborts, past the 1.0 table, which the host must never call
 *   SDM_TEST_PLUGIN_NEWER    implements 1.2 (a member the host does not know): lowers to the
 *                            host's minor; plans of 32 threads
 *   SDM_TEST_PLUGIN_NULLS    1.1 with every member NULL
 *   SDM_TEST_PLUGIN_BAD      plans no class can run, chosen by the problem N: 1 zero threads,
 *                            2 too much shared memory, 3 clusters, 4 PDL, 5 an error return
 *   SDM_TEST_PLUGIN_REFUSE   negotiation fails (returns 1)
 *   SDM_TEST_PLUGIN_RAISE    negotiation raises the minor above the host's
 *   SDM_TEST_PLUGIN_RENDEZVOUS  select_plan waits (at most 5 s) until two callers are inside it at
 *                            once, then plans 96 threads; alone all that time, it plans nothing:
 *                            only a host that calls plugins outside its locks gets 96 on both.
 *                            Its validate_image does the same for modules named "meet_*": it
 *                            accepts one only if another load was inside it at the same time
 *                            (two loads overlapping), else refuses it after 5 s */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sdm/sdm_plugin.h"

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

#if !defined(SDM_TEST_PLUGIN_NULLS) && !defined(SDM_TEST_PLUGIN_REFUSE) && !defined(SDM_TEST_PLUGIN_RAISE)
static int32_t plan_of(uint32_t block, const sdm_plugin_plan_request* r, sdm_plan* plan) {
    const int64_t n = r->problem_count > 0 ? r->problem[0] : 1;
    plan->block = block;
    plan->grid = (uint32_t)((n + block - 1) / block);
    plan->smem_bytes = 0;
    plan->cluster[0] = plan->cluster[1] = plan->cluster[2] = 1;
    plan->flags = 0;
    plan->blocks_per_sm = 1;
    return 1;
}
#endif

#if defined(SDM_TEST_PLUGIN_CURRENT)
static int32_t select_plan(void* user, const sdm_plugin_plan_request* r, sdm_plan* plan) {
    (void)user;
    return plan_of(128, r, plan);
}
static int32_t validate_image(void* user, const sdm_plugin_image* image, char* reason, size_t size) {
    (void)user;
    if (strcmp(image->module, "forbidden") != 0) return 0;
    snprintf(reason, size, "module forbidden is not allowed on %d.%d (ptxVersion %d)", image->device->capability_major,
             image->device->capability_minor, image->ptx_version);
    return 1;
}
static void destroy(void* user) {
    (void)user;
    const char* marker = getenv("SDM_TEST_PLUGIN_MARKER");
    if (marker != NULL) {
        FILE* f = fopen(marker, "w");
        if (f != NULL) fclose(f);
    }
}
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != 1 || table->struct_size < sizeof(sdm_plugin_table)) return 1;
    if (*minor > 1) *minor = 1;
    table->name = "test-current";
    table->select_plan = select_plan;
    table->validate_image = validate_image;
    table->destroy = destroy;
    return 0;
}
#elif defined(SDM_TEST_PLUGIN_OLDER)
static int32_t select_plan(void* user, const sdm_plugin_plan_request* r, sdm_plan* plan) {
    (void)user;
    return plan_of(64, r, plan);
}
static int32_t never(void* user, const sdm_plugin_image* image, char* reason, size_t size) {
    (void)user, (void)image, (void)reason, (void)size;
    abort(); /* a 1.0 plugin's table ends before validate_image: the host must not call this */
}
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != 1) return 1;
    *minor = 0;
    table->name = "test-older";
    table->select_plan = select_plan;
    table->validate_image = never; /* past what 1.0 declares: garbage as far as the host knows */
    return 0;
}
#elif defined(SDM_TEST_PLUGIN_NEWER)
static int32_t select_plan(void* user, const sdm_plugin_plan_request* r, sdm_plan* plan) {
    (void)user;
    return plan_of(32, r, plan);
}
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != 1) return 1;
    if (*minor > 2) *minor = 2; /* it implements 1.2; the host offered less: keep the host's */
    table->name = "test-newer";
    table->select_plan = select_plan;
    return 0; /* a 1.2 member would go past table->struct_size: it is not written */
}
#elif defined(SDM_TEST_PLUGIN_NULLS)
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    (void)table;
    if (major != 1) return 1;
    if (*minor > 1) *minor = 1;
    return 0;
}
#elif defined(SDM_TEST_PLUGIN_BAD)
static int32_t select_plan(void* user, const sdm_plugin_plan_request* r, sdm_plan* plan) {
    (void)user;
    plan_of(128, r, plan);
    switch (r->problem[0]) {
    case 1: plan->block = 0; return 1;
    case 2: plan->smem_bytes = (uint32_t)r->device->smem_cap_bytes + 1; return 1;
    case 3: plan->cluster[0] = 2; plan->grid = 2; return 1;
    case 4: plan->flags = SDM_PLAN_PDL; return 1;
    case 5: return -7;
    default: return 0;
    }
}
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != 1) return 1;
    if (*minor > 1) *minor = 1;
    table->name = "test-bad";
    table->select_plan = select_plan;
    return 0;
}
#elif defined(SDM_TEST_PLUGIN_REFUSE)
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    (void)major, (void)minor, (void)table;
    return 1;
}
#elif defined(SDM_TEST_PLUGIN_RAISE)
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    (void)major, (void)table;
    *minor = 5;
    return 0;
}
#elif defined(SDM_TEST_PLUGIN_RENDEZVOUS)
/* Whether another caller arrives at `*inside` within 5 s of this one. */
static int meet(int* inside) {
    __atomic_add_fetch(inside, 1, __ATOMIC_SEQ_CST);
    int met = 0;
    for (int waited = 0; waited < 5000 && !met; ++waited) {
        met = __atomic_load_n(inside, __ATOMIC_SEQ_CST) >= 2;
        if (!met) {
            const struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    if (met) {
        const struct timespec ms = {0, 20000000}; /* let the other one see the rendezvous too */
        nanosleep(&ms, NULL);
    }
    __atomic_sub_fetch(inside, 1, __ATOMIC_SEQ_CST);
    return met;
}
static int loading; /* through the __atomic builtins */
static int32_t validate_meeting(void* user, const sdm_plugin_image* image, char* reason, size_t size) {
    (void)user;
    if (strncmp(image->module, "meet_", 5) != 0 || meet(&loading)) return 0;
    snprintf(reason, size, "module %s was loaded alone: no other load overlapped it", image->module);
    return 1;
}
static int inside; /* through the __atomic builtins */
static int32_t select_plan(void* user, const sdm_plugin_plan_request* r, sdm_plan* plan) {
    (void)user;
    return meet(&inside) ? plan_of(96, r, plan) : 0;
}
EXPORT int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != 1) return 1;
    if (*minor > 1) *minor = 1;
    table->name = "test-rendezvous";
    table->select_plan = select_plan;
    table->validate_image = validate_meeting;
    return 0;
}
#else
#error "define one SDM_TEST_PLUGIN_* variant"
#endif
