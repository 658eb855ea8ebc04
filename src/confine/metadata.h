/* SPDX-License-Identifier: MIT */
/*
 * The metadata supervisor (metadata.c, docs/design/metadata.md): answers the calls a Landlock
 * command's filter hands over (SECCOMP_METADATA_NOTIFY) by performing them beneath the writable
 * roots and refusing them elsewhere.
 */
#ifndef DSB_CONFINE_METADATA_H
#define DSB_CONFINE_METADATA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * What the supervisor lets connect() and sendto() reach (netsup.c, docs/design/metadata.md):
 * a pathname unix socket beneath a writable root; unix sockets without a path, and families
 * that only reach the command's own network namespace; and of IP destinations, as below.
 * Everything else is refused with EACCES and recorded.
 */
typedef struct meta_net {
	bool supervised;     /* connect/sendto come to us (SECCOMP_NET_NOTIFY) */
	uint16_t proxy_port; /* 0: the command has a network namespace of its own: any loopback
			      * address is its own and allowed. Else (no namespace): only
			      * 127.0.0.1:proxy_port is. */
	bool host_network;   /* no namespace and no proxy: no IP address, no abstract socket */
	/*
	 * Where the command's own pathname sockets lie, canonical, NULL-terminated (borrowed),
	 * when not everywhere the supervisor's roots are: Landlock's workspace-write grants the
	 * host's /tmp, whose sockets are other programs'. NULL: the supervisor's roots.
	 */
	char *const *roots;
} meta_net;

typedef struct meta_supervisor {
	/*
	 * The call's writable roots, canonical, NULL-terminated (the policy's: read-only mode
	 * has none, so every change is refused). Borrowed.
	 */
	char *const *roots;
	/* Of @roots, those whose own directory is refused, changes beneath them performed. */
	char *const *fixed;
	/*
	 * Opened at the first call and kept for the run: the callers' root, and each root as
	 * they see it (-1 where it could not be opened).
	 */
	bool opened;
	int caller_root;
	int *root_fds;
	struct stat *fixed_ids; /* the fixed roots' own inodes (device and number) */
	size_t n_fixed;
	/* Changes refused outside the roots so far, counted before each answer. */
	_Atomic unsigned refused;

	/* The network calls (meta_supervisor_set_net()); all refused when not set. */
	meta_net net;
	/* Network calls refused so far, counted before each answer. */
	_Atomic unsigned net_refused;
	/* The distinct destinations refused, in order (meta_net_refused()), under @net_lock. */
	pthread_mutex_t net_lock;
	char **net_refused_list;
	size_t n_net_refused;
} meta_supervisor;

/*
 * Readies @s to supervise a run whose writable roots are @roots, of which @fixed keep their own
 * directory as it is (both borrowed, NULL-terminated; NULL: none).
 */
void meta_supervisor_init(meta_supervisor *s, char *const *roots, char *const *fixed);

/*
 * Closes what @s opened and forgets what it refused; it may serve another run of the same
 * roots (and network rules) afterwards.
 */
void meta_supervisor_done(meta_supervisor *s);

/* Sets how @s answers connect() and sendto() with an address (copied); before the first call. */
void meta_supervisor_set_net(meta_supervisor *s, const meta_net *net);

/*
 * The distinct destinations refused so far, in order ("10.1.2.3:443", "[2001:db8::1]:80",
 * "/run/x.sock", "@abstract", "vsock:2:1234"), a new NULL-terminated copy (strv_free), NULL
 * on OOM. Safe while a worker answers calls.
 */
char **meta_net_refused(meta_supervisor *s);

/*
 * Asks the kernel to hand each call of @listener's filter to the supervisor on the caller's own
 * CPU, and the answer back likewise (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6): a call
 * then costs no cross-CPU wake-up either way. Older kernels keep the ordinary wake-ups.
 */
void meta_listener_tune(int listener);

/*
 * Receives one notification from @listener and answers it: a metadata call performed (0 or the
 * operation's -errno) when its object lies beneath a root of @s, EPERM otherwise; connect()
 * and sendto() performed on the caller's socket when @s's network rules allow the address,
 * EACCES otherwise (netsup.c); EPERM for a call it does not decode. Blocks until a
 * notification comes: call it when @listener is readable. Returns 1 when it refused (a change
 * outside the roots or a network destination: a denial the model is told of), 0 for any other
 * answer, or -errno when the listener itself failed (the caller stops polling it). Runs the
 * operation with the calling thread's effective capabilities cleared.
 */
int meta_handle(meta_supervisor *s, int listener);

/*
 * Clears the calling thread's effective capabilities for good (its permitted ones stay), so
 * that meta_handle() performs each call as the caller without clearing them around it.
 * Returns whether they are clear now.
 */
bool meta_clear_caps(void);

/*
 * A thread that answers @listener's calls with @s (borrowed) until meta_worker_stop(), or
 * until no process of the run is left to call. It takes @listener once started (on failure
 * the caller keeps it and may answer inline with meta_handle()). 0 or -errno.
 */
typedef struct meta_worker meta_worker;
int meta_worker_start(meta_worker **ret, meta_supervisor *s, int listener);

/* Ends the worker (its listener closed: later calls fail ENOSYS) and frees it; NULL: none. */
void meta_worker_stop(meta_worker *w);

#endif
