/* Output and exit through semihosting (startup.c). */
#ifndef SEMIHOSTING_H
#define SEMIHOSTING_H

#include <stddef.h>

/* Writes len bytes of text to the host's standard output. */
void sh_write(const char *text, size_t len);
/* Writes a NUL-terminated text to the host's standard output. */
void sh_puts(const char *text);
/* Ends the run with this exit status. */
void sh_exit(int status) __attribute__((noreturn));

#endif
