/* The C example: decodes one source with the s2s C API (s2s-capi's include/s2s.h,
 * libs2s_capi.a) and prints "source<TAB>output" over semihosting, as `s2s run --tsv`
 * prints it. The model is embedded in the library at build time (`s2s embed`, the
 * Makefile's S2S_EMBED: no model-file parser is linked); the workspace is the RAM after
 * .bss (link.ld). */

#include <stdint.h>

#include "s2s.h"
#include "semihosting.h"

/* The workspace (link.ld). */
extern uint32_t __workspace_start[], __workspace_end[];

/* The source decoded. */
static const char INPUT[] = "namaste";

static int fail(const char *what, S2sStatus status) {
    sh_puts("error: ");
    sh_puts(what);
    sh_puts(": ");
    sh_puts(s2s_status_text(status));
    sh_puts("\n");
    return 1;
}

int main(void) {
    S2sModel model;
    S2sStatus status = s2s_model_embedded(&model);
    if (status != S2S_STATUS_OK) {
        return fail("model", status);
    }
    /* 0 positions: the model's fixed source length (netra's 25). */
    size_t needed;
    status = s2s_workspace_bytes(&model, 0, &needed);
    if (status != S2S_STATUS_OK) {
        return fail("workspace", status);
    }
    size_t available = (size_t)((uint8_t *)__workspace_end - (uint8_t *)__workspace_start);
    if (needed > available) {
        return fail("workspace", S2S_STATUS_WORKSPACE_TOO_SMALL);
    }
    char out[256];
    size_t len;
    status = s2s_translate(&model, __workspace_start, needed, 0, (const uint8_t *)INPUT,
                           sizeof INPUT - 1, (uint8_t *)out, sizeof out, &len);
    if (status != S2S_STATUS_OK) {
        return fail("translate", status);
    }
    sh_puts(INPUT);
    sh_puts("\t");
    sh_write(out, len);
    sh_puts("\n");
    return 0;
}
