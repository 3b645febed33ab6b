/* A minimal Cortex-M start-up for the C example: the vector table, the reset handler
 * (FPU on, .data copied, .bss zeroed, main called) and semihosting output and exit,
 * which QEMU (-semihosting-config enable=on) passes to the host. No C library. */

#include <stddef.h>
#include <stdint.h>

#include "semihosting.h"

/* From link.ld. */
extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern uint32_t __stack_top[];

int main(void);

/* Semihosting operations (Arm's semihosting specification). */
enum { SYS_OPEN = 0x01, SYS_WRITE = 0x05, SYS_EXIT_EXTENDED = 0x20 };

static uintptr_t semihost(uintptr_t op, const void *arg) {
    register uintptr_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_write(const char *text, size_t len) {
    static uintptr_t stdout_handle = (uintptr_t)-1;
    if (stdout_handle == (uintptr_t)-1) {
        /* ":tt" opened for writing (mode 4) is the host's standard output. */
        const uintptr_t open[3] = {(uintptr_t)":tt", 4, 3};
        stdout_handle = semihost(SYS_OPEN, open);
    }
    const uintptr_t write[3] = {stdout_handle, (uintptr_t)text, len};
    semihost(SYS_WRITE, write);
}

void sh_puts(const char *text) {
    size_t len = 0;
    while (text[len] != '\0') {
        len++;
    }
    sh_write(text, len);
}

void sh_exit(int status) {
    /* ADP_Stopped_ApplicationExit with the status: QEMU exits with it. */
    const uintptr_t block[2] = {0x20026, (uintptr_t)status};
    semihost(SYS_EXIT_EXTENDED, block);
    for (;;) {
    }
}

#ifdef S2S_STACK_REPORT
/* With -DS2S_STACK_REPORT (make STACK_REPORT=1): the stack below the reset handler's
 * frame is painted before main and the untouched words counted after it; the peak goes
 * to the host's standard error. */
#define PAINT 0x5A5A5A5Au
extern uint32_t __stack_bottom[];

static void paint_stack(void) {
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t *p = __stack_bottom; p < sp - 16;) {
        *p++ = PAINT;
    }
}

static void report_stack(void) {
    const uint32_t *p = __stack_bottom;
    while (p < __stack_top && *p == PAINT) {
        p++;
    }
    size_t peak = (size_t)((uintptr_t)__stack_top - (uintptr_t)p);
    size_t size = (size_t)((uintptr_t)__stack_top - (uintptr_t)__stack_bottom);
    char text[64] = "stack peak ";
    size_t n = 11;
    for (int pass = 0; pass < 2; pass++) {
        size_t v = pass == 0 ? peak : size;
        char digits[12];
        size_t k = 0;
        do {
            digits[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (k > 0) {
            text[n++] = digits[--k];
        }
        const char *tail = pass == 0 ? " of " : " bytes\n";
        while (*tail != '\0') {
            text[n++] = *tail++;
        }
    }
    /* ":tt" opened for appending (mode 8) is the host's standard error. */
    const uintptr_t open[3] = {(uintptr_t)":tt", 8, 3};
    const uintptr_t write[3] = {semihost(SYS_OPEN, open), (uintptr_t)text, n};
    semihost(SYS_WRITE, write);
}
#endif

void reset_handler(void) {
#if defined(__ARM_FP)
    /* CP10 and CP11 full access: the hard-float library uses the FPU. */
    *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    for (uint32_t *src = __data_load, *dst = __data_start; dst < __data_end;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = __bss_start; dst < __bss_end;) {
        *dst++ = 0;
    }
#ifdef S2S_STACK_REPORT
    paint_stack();
    int status = main();
    report_stack();
    sh_exit(status);
#else
    sh_exit(main());
#endif
}

static void fault_handler(void) {
    sh_puts("fault\n");
    sh_exit(2);
}

/* Initial stack pointer, reset, then NMI to SysTick: every exception ends the run. */
__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
    (void (*)(void))__stack_top, reset_handler, fault_handler, fault_handler,
    fault_handler, fault_handler, fault_handler, 0, 0, 0, 0, fault_handler,
    fault_handler, 0, fault_handler, fault_handler,
};
