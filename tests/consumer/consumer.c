/* Opens and decodes a 1x1 v1 container (S = 1.0, Bias = 0.5, code +3 -> 3.5) through the
 * installed library: the public header and the exported symbols are enough. */
#include <stdio.h>
#include <string.h>

#include <sgfp4.h>

int main(void)
{
    unsigned char c[2056] = {0};
    c[0] = 0x00, c[1] = 0x38, c[2] = 0x00, c[3] = 0x3C; /* bias 0x3800 = 0.5, scale 0x3C00 */
    c[8] = 0x03;                                          /* first code: +3 */
    sgfp4_tensor *t = NULL;
    if (sgfp4_tensor_open(c, sizeof c, SGFP4_PROFILE_V1, 1, 1, &t, NULL, NULL) != SGFP4_OK)
        return 1;
    float w = 0;
    const sgfp4_status s = sgfp4_decode(t, SGFP4_DTYPE_F32, &w, 0, sizeof w, NULL);
    sgfp4_tensor_close(t);
    printf("libsgfp4 %s: decoded %g\n", sgfp4_version_string(), w);
    return s == SGFP4_OK && w == 3.5f ? 0 : 1;
}
