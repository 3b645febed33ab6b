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
    sh_exit(main());
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
