/* The model file (S2S_MODEL, a string literal given by the Makefile), linked into flash
 * 8-byte aligned: s2s_model_parse reads it in place. */
    .section .rodata.s2s_model, "a"
    .balign 8
    .global s2s_model
s2s_model:
    .incbin S2S_MODEL
    .global s2s_model_end
s2s_model_end:
