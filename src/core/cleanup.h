/* SPDX-License-Identifier: MIT */
/*
 * Scope-bound cleanup for owning locals, with explicit ownership transfer (TAKE_PTR, TAKE_FD).
 * Every owning local is initialised (= NULL, = -1) so an early return frees exactly what exists.
 */
#ifndef DSB_CORE_CLEANUP_H
#define DSB_CORE_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void freep(void *p)
{
	free(*(void **)p);
}

/* Closing preserves errno, so a cleanup never clobbers the error being reported. */
static inline void closep(const int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		(void)close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f) {
		int saved = errno;
		(void)fclose(*f);
		errno = saved;
	}
}

static inline void closedirp(DIR **d)
{
	if (*d) {
		int saved = errno;
		(void)closedir(*d);
		errno = saved;
	}
}

void strv_freep(char ***strv);

#define _cleanup_(f)	    __attribute__((cleanup(f)))
#define _cleanup_free_	    _cleanup_(freep)
#define _cleanup_close_	    _cleanup_(closep)
#define _cleanup_fclose_    _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Hands out the value of an owning local and disarms its cleanup. Type-safe. */
#define TAKE_PTR(p)                         \
	__extension__({                     \
		__typeof__(p) _taken = (p); \
		(p) = NULL;                 \
		_taken;                     \
	})

#define TAKE_FD(fd)                \
	__extension__({            \
		int _taken = (fd); \
		(fd) = -1;         \
		_taken;            \
	})

#endif
