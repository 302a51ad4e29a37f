/* Contexts: a device of our own (instance, physical device choice, logical device, queue)
 * or one adopted from the runtime; what the device reports about exactness; teardown.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/options.h"
#include "common/results.h"
#include "common/diag.h"

static int has_extension(const VkExtensionProperties *list, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(list[i].extensionName, name) == 0)
            return 1;
    return 0;
}

static int device_has_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkExtensionProperties *list = calloc(n, sizeof *list);
    int found = 0;
    if (list && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, list) == VK_SUCCESS)
        found = has_extension(list, n, name);
    free(list);
    return found;
}

/* The API version the device is used at: min(device, instance request of 1.3). */
static uint32_t effective_api(const VkPhysicalDeviceProperties *p)
{
    return p->apiVersion < VK_API_VERSION_1_3 ? p->apiVersion : VK_API_VERSION_1_3;
}

/* Whether float controls may be queried and RTE declared on this device. */
static int float_controls_usable(VkPhysicalDevice pd, const VkPhysicalDeviceProperties *p)
{
    return effective_api(p) >= VK_API_VERSION_1_2 ||
           device_has_extension(pd, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
}

/* The shaderFloat16 feature (queried on Vulkan 1.2 devices only, where it is core). */
static int device_has_float16(VkPhysicalDevice pd, const VkPhysicalDeviceProperties *p)
{
    if (effective_api(p) < VK_API_VERSION_1_2)
        return 0;
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f16};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    return f16.shaderFloat16 == VK_TRUE;
}

/* The shaderIntegerDotProduct feature: core in Vulkan 1.3, else VK_KHR_shader_integer_dot_product
 * (*extension set when the extension must be enabled for it). */
static int device_has_integer_dot(VkPhysicalDevice pd, const VkPhysicalDeviceProperties *p,
                                  int *extension)
{
    *extension = 0;
    const int core = effective_api(p) >= VK_API_VERSION_1_3;
    if (!core) {
        if (effective_api(p) < VK_API_VERSION_1_1 ||
            !device_has_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME))
            return 0;
        *extension = 1;
    }
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &dot};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    return dot.shaderIntegerDotProduct == VK_TRUE;
}

static void describe_device(VkPhysicalDevice pd, uint32_t index, sgfp4_vk_device_info *info)
{
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p.deviceName);
    info->index = index;
    info->vendor_id = p.vendorID;
    info->device_id = p.deviceID;
    info->api_version = p.apiVersion;
    info->driver_version = p.driverVersion;
    info->discrete = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    info->max_storage_buffer_range = p.limits.maxStorageBufferRange;
    info->max_shared_memory = p.limits.maxComputeSharedMemorySize;

    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceFloatControlsProperties fc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    if (float_controls_usable(pd, &p))
        sub.pNext = &fc;
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    info->subgroup_size = sub.subgroupSize;
    info->rte_float32 = fc.shaderRoundingModeRTEFloat32 == VK_TRUE;
    info->rte_float16 = fc.shaderRoundingModeRTEFloat16 == VK_TRUE;
    info->denorm_preserve_float16 = fc.shaderDenormPreserveFloat16 == VK_TRUE;
    info->signed_zero_preserve_float32 = fc.shaderSignedZeroInfNanPreserveFloat32 == VK_TRUE;
    info->signed_zero_preserve_float16 = fc.shaderSignedZeroInfNanPreserveFloat16 == VK_TRUE;
    info->shader_float16 = device_has_float16(pd, &p);
    int extension;
    info->integer_dot_product = device_has_integer_dot(pd, &p, &extension);
    /* Products need RTE and signed zeros declared for 32-bit floats (a listed device is
     * described as a context of our own would use it). */
    info->matvec_path = !info->rte_float32 || !info->signed_zero_preserve_float32
                            ? SGFP4_VK_MATVEC_UNAVAILABLE
                        : info->integer_dot_product ? SGFP4_VK_MATVEC_DOT_PRODUCT
                                                    : SGFP4_VK_MATVEC_SHADER;
}

/* Whether DenormPreserve may be declared for 16-bit floats alone (32-bit left as is). */
static int denorm_preserve_16_alone(VkPhysicalDevice pd)
{
    VkPhysicalDeviceFloatControlsProperties fc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &fc};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    return fc.shaderDenormPreserveFloat16 == VK_TRUE &&
           fc.denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
}

static VkResult create_instance(VkInstance *out)
{
    uint32_t n = 0;
    VkExtensionProperties *list = NULL;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) == VK_SUCCESS && n > 0) {
        list = calloc(n, sizeof *list);
        if (list && vkEnumerateInstanceExtensionProperties(NULL, &n, list) != VK_SUCCESS)
            n = 0;
    }
    const char *extensions[1];
    uint32_t count = 0;
    VkInstanceCreateFlags flags = 0;
    /* MoltenVK and other non-conformant drivers enumerate only with this flag. */
    if (list && has_extension(list, n, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions[count++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    free(list);
    const VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                   .pApplicationName = "libsgfp4",
                                   .pEngineName = "libsgfp4",
                                   .apiVersion = VK_API_VERSION_1_3};
    const VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                     .flags = flags,
                                     .pApplicationInfo = &app,
                                     .enabledExtensionCount = count,
                                     .ppEnabledExtensionNames = extensions};
    return vkCreateInstance(&ci, NULL, out);
}

/* Enumerates physical devices into a malloc'ed array. */
static sgfp4_status enumerate(VkInstance instance, VkPhysicalDevice **devices, uint32_t *count,
                              sgfp4_diag *diag)
{
    *devices = NULL;
    *count = 0;
    VkResult r = vkEnumeratePhysicalDevices(instance, count, NULL);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkEnumeratePhysicalDevices");
    if (*count == 0)
        return sgfp4_fail(diag, SGFP4_ERR_VK_NO_DEVICE, -1, -1, -1,
                          "Vulkan: no physical device");
    *devices = calloc(*count, sizeof **devices);
    if (!*devices)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    r = vkEnumeratePhysicalDevices(instance, count, *devices);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(*devices);
        *devices = NULL;
        return sgfp4_vk_fail(diag, r, "vkEnumeratePhysicalDevices");
    }
    return SGFP4_OK;
}

static sgfp4_status no_loader(sgfp4_diag *diag, VkResult r)
{
    return sgfp4_fail(diag, SGFP4_ERR_VK_NO_DEVICE, -1, -1, -1,
                      "Vulkan: cannot create an instance (VkResult %d): no loader or driver",
                      (int)r);
}

sgfp4_status sgfp4_vk_list_devices(sgfp4_vk_device_info *out, size_t capacity, size_t *count,
                                   sgfp4_diag *diag)
{
    if (!count || (capacity && !out))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    /* The caller's elements are struct_size bytes apart: its sizeof of the struct. */
    const size_t stride = capacity ? out->struct_size : 0;
    for (size_t k = 0; k < capacity; k++) {
        const sgfp4_vk_device_info *e =
            (const sgfp4_vk_device_info *)((const unsigned char *)out + k * stride);
        if (!SGFP4_RESULT_KNOWN(sgfp4_vk_device_info, e) || e->struct_size != stride)
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                              "out[%zu]: struct_size %zu is no layout of sgfp4_vk_device_info "
                              "(initialise each element with sgfp4_vk_device_info_init)",
                              k, e->struct_size);
    }
    *count = 0;
    VkInstance instance;
    VkResult r = create_instance(&instance);
    if (r != VK_SUCCESS)
        return no_loader(diag, r);
    VkPhysicalDevice *devices;
    uint32_t n;
    sgfp4_status s = enumerate(instance, &devices, &n, diag);
    if (s == SGFP4_OK) {
        for (uint32_t i = 0; i < n && i < capacity; i++) {
            sgfp4_vk_device_info full;
            describe_device(devices[i], i, &full);
            sgfp4_result_store((unsigned char *)out + i * stride, &full);
        }
        *count = n;
        free(devices);
    }
    vkDestroyInstance(instance, NULL);
    return s;
}

/* The first queue family with compute, preferring one without graphics. */
static int pick_queue_family(VkPhysicalDevice pd, uint32_t *family)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    if (!q)
        return 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
    int found = 0;
    for (int pass = 0; pass < 2 && !found; pass++) {
        for (uint32_t i = 0; i < n && !found; i++) {
            const VkQueueFlags f = q[i].queueFlags;
            if ((f & VK_QUEUE_COMPUTE_BIT) && (pass == 1 || !(f & VK_QUEUE_GRAPHICS_BIT))) {
                *family = i;
                found = 1;
            }
        }
    }
    free(q);
    return found;
}

/* Everything after the device exists: properties, pipelines, commands. */
static sgfp4_status finish_context(sgfp4_vk_context *ctx, uint32_t index, sgfp4_diag *diag)
{
    describe_device(ctx->physical_device, index, &ctx->info);
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(ctx->physical_device, &p);
    ctx->limits = p.limits;
    vkGetPhysicalDeviceMemoryProperties(ctx->physical_device, &ctx->memory);
    /* RTE is declared only where the device reports it and the SPIR-V extension may be used:
     * our own device is created for it; an adopted one must run Vulkan 1.2 or later. The
     * sign of a -0.0 weight is kept by SignedZeroInfNanPreserve 32, declared with it. */
    const unsigned flags = ctx->flags;
    const int rte = ctx->info.rte_float32 && ctx->info.signed_zero_preserve_float32 &&
                    (ctx->owns_device || effective_api(&p) >= VK_API_VERSION_1_2);
    ctx->info.exact_path = (flags & SGFP4_VK_FORCE_INTEGER_PATH) || !rte ? 1 : 0;
    /* f16 outputs: the device's conversion where RTE (and signed zeros) can be declared for
     * 16-bit results and our device has shaderFloat16 (an adopted device may not have it
     * enabled: the f32 add, which needs nothing more than the f32 path); else the add; the
     * integer code in the integer pipeline. */
    const int f16_device = !ctx->info.exact_path && ctx->float16_enabled &&
                           ctx->info.rte_float16 && ctx->info.signed_zero_preserve_float16 &&
                           !(flags & SGFP4_VK_F16_NO_DEVICE_CONVERSION);
    ctx->info.f16_conversion = ctx->info.exact_path ? SGFP4_VK_F16_INTEGER_CODE
                               : f16_device         ? SGFP4_VK_F16_DEVICE_CONVERSION
                                                    : SGFP4_VK_F16_FLOAT_ADD;
    ctx->variant[0] = (uint32_t)ctx->info.f16_conversion;
    ctx->variant[1] = !f16_device || (flags & SGFP4_VK_F16_GUARD) ||
                      !denorm_preserve_16_alone(ctx->physical_device);
    /* Matrix-vector products: RTE and signed zeros for 32-bit floats declared (whatever the
     * decode pipeline), the device's dot product where our device enabled it. */
    ctx->info.integer_dot_product = ctx->dot_enabled;
    ctx->info.matvec_path = !rte                  ? SGFP4_VK_MATVEC_UNAVAILABLE
                            : ctx->dot_enabled && !(flags & SGFP4_VK_NO_INTEGER_DOT)
                                ? SGFP4_VK_MATVEC_DOT_PRODUCT
                                : SGFP4_VK_MATVEC_SHADER;

    VkResult r;
    const VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = ctx->queue_family};
    if ((r = vkCreateCommandPool(ctx->device, &pool, NULL, &ctx->command_pool)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateCommandPool");
    const VkCommandBufferAllocateInfo cb = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1};
    if ((r = vkAllocateCommandBuffers(ctx->device, &cb, &ctx->cmd)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkAllocateCommandBuffers");
    const VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vkCreateFence(ctx->device, &fence, NULL, &ctx->fence)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateFence");
    return SGFP4_OK; /* the kernels are created on first use (vk_kernel.c) */
}

/* Device index: the option, else $SGFP4_VK_DEVICE, else the first discrete GPU, else 0. */
static sgfp4_status choose_device(const VkPhysicalDevice *devices, uint32_t n, int requested,
                                  uint32_t *index, sgfp4_diag *diag)
{
    if (requested < 0) {
        const char *env = getenv("SGFP4_VK_DEVICE");
        if (env && *env) {
            char *end;
            const long v = strtol(env, &end, 10);
            if (*end != '\0' || v < 0)
                return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                                  "SGFP4_VK_DEVICE='%s' is not a device index", env);
            requested = v > 1000000 ? 1000000 : (int)v;
        }
    }
    if (requested >= 0) {
        if ((uint32_t)requested >= n)
            return sgfp4_fail(diag, SGFP4_ERR_VK_NO_DEVICE, -1, -1, -1,
                              "Vulkan: device %d requested, %u present", requested, n);
        *index = (uint32_t)requested;
        return SGFP4_OK;
    }
    *index = 0;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devices[i], &p);
        if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
            *index = i;
            break;
        }
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_context_options_init_sized(sgfp4_vk_context_options *options,
                                                 size_t size)
{
    sgfp4_vk_context_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.device_index = -1;
    return SGFP4_OPTIONS_INIT(sgfp4_vk_context_options, options, size, &defaults);
}

/* Reads the caller's context options (NULL: the defaults) into *o. */
static sgfp4_status read_options(const sgfp4_vk_context_options *given,
                                 sgfp4_vk_context_options *o, sgfp4_diag *diag)
{
    if (SGFP4_OPTIONS_READ(sgfp4_vk_context_options, given, o) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_vk_context_options_init)",
                          given->struct_size);
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_context_create(sgfp4_vk_context **out,
                                     const sgfp4_vk_context_options *given, sgfp4_diag *diag)
{
    if (!out)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    sgfp4_vk_context_options opts;
    const sgfp4_vk_context_options *options = &opts;
    const sgfp4_status os = read_options(given, &opts, diag);
    if (os != SGFP4_OK)
        return os;
    sgfp4_vk_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    ctx->owns_device = 1;
    ctx->flags = options->flags;
    VkResult r = create_instance(&ctx->instance);
    if (r != VK_SUCCESS) {
        free(ctx);
        return no_loader(diag, r);
    }
    VkPhysicalDevice *devices = NULL;
    uint32_t n = 0, index = 0;
    sgfp4_status s = enumerate(ctx->instance, &devices, &n, diag);
    if (s == SGFP4_OK)
        s = choose_device(devices, n, options->device_index, &index, diag);
    if (s != SGFP4_OK) {
        free(devices);
        sgfp4_vk_context_free(ctx);
        return s;
    }
    ctx->physical_device = devices[index];
    free(devices);
    if (!pick_queue_family(ctx->physical_device, &ctx->queue_family)) {
        sgfp4_vk_context_free(ctx);
        return sgfp4_fail(diag, SGFP4_ERR_VK_NO_DEVICE, -1, -1, -1,
                          "Vulkan: device %u has no compute queue", index);
    }

    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(ctx->physical_device, &p);
    const char *extensions[3];
    uint32_t count = 0;
    if (device_has_extension(ctx->physical_device, "VK_KHR_portability_subset"))
        extensions[count++] = "VK_KHR_portability_subset"; /* required where present */
    if (effective_api(&p) < VK_API_VERSION_1_2 &&
        device_has_extension(ctx->physical_device, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME))
        extensions[count++] = VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
    /* shaderFloat16, for f16 outputs through the device's conversion (decode_rte16). */
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = VK_TRUE};
    ctx->float16_enabled = device_has_float16(ctx->physical_device, &p);
    /* shaderIntegerDotProduct, for the Class A cell sums (matvec_dot). */
    int dot_extension;
    ctx->dot_enabled = device_has_integer_dot(ctx->physical_device, &p, &dot_extension);
    if (ctx->dot_enabled && dot_extension)
        extensions[count++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = ctx->float16_enabled ? &f16 : NULL,
        .shaderIntegerDotProduct = VK_TRUE};
    void *features = ctx->dot_enabled ? (void *)&dot : ctx->float16_enabled ? (void *)&f16 : NULL;
    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           .queueFamilyIndex = ctx->queue_family,
                                           .queueCount = 1,
                                           .pQueuePriorities = &priority};
    const VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                    .pNext = features,
                                    .queueCreateInfoCount = 1,
                                    .pQueueCreateInfos = &queue,
                                    .enabledExtensionCount = count,
                                    .ppEnabledExtensionNames = extensions};
    if ((r = vkCreateDevice(ctx->physical_device, &dci, NULL, &ctx->device)) != VK_SUCCESS) {
        sgfp4_vk_context_free(ctx);
        return sgfp4_vk_fail(diag, r, "vkCreateDevice");
    }
    vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
    if ((s = finish_context(ctx, index, diag)) != SGFP4_OK) {
        sgfp4_vk_context_free(ctx);
        return s;
    }
    *out = ctx;
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_context_import(const sgfp4_vk_handles *info, sgfp4_vk_context **out,
                                     const sgfp4_vk_context_options *given, sgfp4_diag *diag)
{
    if (!out || !info || !info->instance || !info->physical_device || !info->device ||
        !info->queue)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_context_import: NULL argument or handle");
    *out = NULL;
    sgfp4_vk_context_options options;
    const sgfp4_status os = read_options(given, &options, diag);
    if (os != SGFP4_OK)
        return os;
    sgfp4_vk_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    ctx->instance = info->instance;
    ctx->physical_device = info->physical_device;
    ctx->device = info->device;
    ctx->queue_family = info->queue_family;
    ctx->queue = info->queue;
    ctx->flags = options.flags;
    /* The runtime's device index is unknown to us: report 0. */
    const sgfp4_status s = finish_context(ctx, 0, diag);
    if (s != SGFP4_OK) {
        sgfp4_vk_context_free(ctx);
        return s;
    }
    *out = ctx;
    return SGFP4_OK;
}

void sgfp4_vk_context_free(sgfp4_vk_context *ctx)
{
    if (!ctx)
        return;
    if (ctx->device) {
        vkDeviceWaitIdle(ctx->device);
        sgfp4_vk_kernels_release(ctx);
        if (ctx->fence)
            vkDestroyFence(ctx->device, ctx->fence, NULL);
        if (ctx->command_pool)
            vkDestroyCommandPool(ctx->device, ctx->command_pool, NULL);
        if (ctx->owns_device)
            vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->owns_device && ctx->instance)
        vkDestroyInstance(ctx->instance, NULL);
    free(ctx);
}

sgfp4_status sgfp4_vk_context_get_info(const sgfp4_vk_context *ctx, sgfp4_vk_device_info *info)
{
    if (!ctx || !info || !SGFP4_RESULT_KNOWN(sgfp4_vk_device_info, info))
        return SGFP4_ERR_ARGUMENT;
    sgfp4_result_store(info, &ctx->info);
    return SGFP4_OK;
}

void sgfp4_vk_context_get_handles(const sgfp4_vk_context *ctx, sgfp4_vk_handles *handles)
{
    if (!handles)
        return;
    memset(handles, 0, sizeof *handles);
    if (!ctx)
        return;
    handles->instance = ctx->instance;
    handles->physical_device = ctx->physical_device;
    handles->device = ctx->device;
    handles->queue_family = ctx->queue_family;
    handles->queue = ctx->queue;
}
