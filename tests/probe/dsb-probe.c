/* SPDX-License-Identifier: MIT */
/*
 * dsb-probe: runs inside a sandbox, attempts one named operation and prints what the kernel
 * said: "OK" or the errno's name ("EACCES", "EROFS", "EPERM", ...), one line on stdout (the
 * try-syscall idea of bubblewrap's tests). The exit status is 0 whatever the outcome, so a test
 * reads the answer rather than guessing from a status; 2 is a usage error.
 *
 *   dsb-probe write PATH [TEXT]   open(O_WRONLY|O_CREAT|O_APPEND, 0644), write TEXT ("probe\n")
 *   dsb-probe read PATH           open(O_RDONLY), read
 *   dsb-probe open-rw PATH        open(O_RDWR), no creation
 *   dsb-probe mkdir PATH          rmdir PATH      unlink PATH
 *   dsb-probe rename OLD NEW      link OLD NEW    symlink TARGET PATH
 *   dsb-probe truncate PATH       truncate(2) to 0 bytes
 *   dsb-probe mkfifo PATH
 *   dsb-probe mknod PATH [reg|chr|blk|fifo|sock]   (chr: 1:3, the numbers of /dev/null)
 *   dsb-probe bind-unix PATH      bind an AF_UNIX socket to PATH
 *   dsb-probe chmod PATH [MODE]   octal, default 644
 *   dsb-probe kill PID [SIG]      default 0: only the permission check
 *   dsb-probe exec PATH [ARG...]  execv; prints only when it fails
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

typedef int (*probe_fn)(char **args);

static int ret_errno(int r)
{
	return r < 0 ? errno : 0;
}

static int do_write(char **args)
{
	const char *text = args[1] ? args[1] : "probe\n";
	size_t len = strlen(text);
	int fd = open(args[0], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, text, len);
	int err = n < 0 ? errno : 0;
	if (close(fd) < 0 && err == 0)
		err = errno;
	if (err == 0 && (size_t)n != len)
		err = EIO;
	return err;
}

static int do_read(char **args)
{
	char buf[64];
	int fd = open(args[0], O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno;
	int err = read(fd, buf, sizeof(buf)) < 0 ? errno : 0;
	(void)close(fd);
	return err;
}

static int do_open_rw(char **args)
{
	int fd = open(args[0], O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return errno;
	(void)close(fd);
	return 0;
}

static int do_mkdir(char **args)
{
	return ret_errno(mkdir(args[0], 0755));
}

static int do_rmdir(char **args)
{
	return ret_errno(rmdir(args[0]));
}

static int do_unlink(char **args)
{
	return ret_errno(unlink(args[0]));
}

static int do_rename(char **args)
{
	return ret_errno(rename(args[0], args[1]));
}

static int do_link(char **args)
{
	return ret_errno(link(args[0], args[1]));
}

static int do_symlink(char **args)
{
	return ret_errno(symlink(args[0], args[1]));
}

static int do_truncate(char **args)
{
	return ret_errno(truncate(args[0], 0));
}

static int do_mkfifo(char **args)
{
	return ret_errno(mkfifo(args[0], 0644));
}

static int do_mknod(char **args)
{
	/* clang-format off: a lookup table reads best one entry per line */
	static const struct {
		const char *name;
		mode_t type;
	} types[] = {
		{"reg", S_IFREG},  {"chr", S_IFCHR},   {"blk", S_IFBLK},
		{"fifo", S_IFIFO}, {"sock", S_IFSOCK},
	};
	/* clang-format on */
	const char *want = args[1] ? args[1] : "chr";

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, want) == 0)
			return ret_errno(mknod(args[0], types[i].type | 0644, makedev(1, 3)));
	return -1;
}

static int do_bind_unix(char **args)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, err;

	if (strlen(args[0]) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	memcpy(sa.sun_path, args[0], strlen(args[0]) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	err = ret_errno(bind(fd, (const struct sockaddr *)&sa, sizeof(sa)));
	(void)close(fd);
	return err;
}

static int do_chmod(char **args)
{
	char *end = NULL;
	unsigned long mode = args[1] ? strtoul(args[1], &end, 8) : 0644;

	if (args[1] && (*end || mode > 07777))
		return -1;
	return ret_errno(chmod(args[0], (mode_t)mode));
}

static int do_kill(char **args)
{
	char *end = NULL;
	long pid = strtol(args[0], &end, 10);
	long sig = 0;

	if (*end || end == args[0])
		return -1;
	if (args[1]) {
		sig = strtol(args[1], &end, 10);
		if (*end || end == args[1] || sig < 0 || sig >= NSIG)
			return -1;
	}
	return ret_errno(kill((pid_t)pid, (int)sig));
}

static int do_exec(char **args)
{
	execv(args[0], args);
	return errno;
}

/* clang-format off: one operation per line, with its argument counts */
static const struct probe {
	const char *name;
	int min_args, max_args; /* max -1: any */
	probe_fn fn;
} probes[] = {
	{"write", 1, 2, do_write},	   {"read", 1, 1, do_read},
	{"open-rw", 1, 1, do_open_rw},	   {"mkdir", 1, 1, do_mkdir},
	{"rmdir", 1, 1, do_rmdir},	   {"unlink", 1, 1, do_unlink},
	{"rename", 2, 2, do_rename},	   {"link", 2, 2, do_link},
	{"symlink", 2, 2, do_symlink},	   {"truncate", 1, 1, do_truncate},
	{"mkfifo", 1, 1, do_mkfifo},	   {"mknod", 1, 2, do_mknod},
	{"bind-unix", 1, 1, do_bind_unix}, {"chmod", 1, 2, do_chmod},
	{"kill", 1, 2, do_kill},	   {"exec", 1, -1, do_exec},
};
/* clang-format on */

static int usage(void)
{
	fputs("usage: dsb-probe OPERATION ARGS...\noperations:", stderr);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		fprintf(stderr, " %s", probes[i].name);
	fputc('\n', stderr);
	return 2;
}

int main(int argc, char **argv)
{
	const struct probe *p = NULL;
	int nargs, err;

	if (argc < 2)
		return usage();
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		if (strcmp(probes[i].name, argv[1]) == 0)
			p = &probes[i];
	nargs = argc - 2;
	if (!p || nargs < p->min_args || (p->max_args >= 0 && nargs > p->max_args))
		return usage();

	err = p->fn(argv + 2);
	if (err < 0)
		return usage();
	if (err == 0) {
		puts("OK");
	} else {
		const char *name = strerrorname_np(err);

		if (name)
			puts(name);
		else
			printf("E%d\n", err);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
