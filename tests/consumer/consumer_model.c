/* Uses the model component and the Vulkan API through the installed libraries: the contract
 * hash of a 1x1 v1 container (computed independently: sha256 of 2056 bytes, checked against
 * a constant written by `printf ... | sha256sum` in run.sh), and a Vulkan context, which may
 * be unavailable (no device, or a build without Vulkan) but must link. */
#include <stdio.h>
#include <string.h>

#include <sgfp4_model.h>
#include <sgfp4_vulkan.h>

int main(int argc, char **argv)
{
    unsigned char c[2056] = {0};
    c[0] = 0x00, c[1] = 0x38, c[2] = 0x00, c[3] = 0x3C;
    c[8] = 0x03;
    sgfp4_tensor *t = NULL;
    if (sgfp4_tensor_open(c, sizeof c, SGFP4_PROFILE_V1, 1, 1, &t, NULL, NULL) != SGFP4_OK)
        return 1;
    char hex[65];
    sgfp4_tensor_container_sha256(t, hex);
    sgfp4_tensor_close(t);
    sgfp4_vk_context *ctx = NULL;
    const sgfp4_status vk = sgfp4_vk_context_create(&ctx, NULL, NULL);
    sgfp4_vk_context_free(ctx);
    printf("libsgfp4 %s: sha256 %s, Vulkan: %s\n", sgfp4_version_string(), hex,
           sgfp4_status_name(vk));
    return argc > 1 && strcmp(hex, argv[1]) == 0 ? 0 : 1;
}
