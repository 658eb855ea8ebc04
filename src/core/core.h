/* SPDX-License-Identifier: MIT */
/*
 * Internals of the core piece, shared by every other piece: error helpers, string arrays and
 * buffers, path canonicalisation, the platform temp dir, JSON string quoting, the JSON writer,
 * UUIDs and text made visible to a person. Nothing here knows about policy.
 *
 * Leaf helpers (strv_*, strbuf_*, path_*, fd_*, tmpdir_*, json_*, jw_*, uuid_*, visible_*) return 0
 * or -errno and never take a dsb_error; the first component-level caller converts with
 * dsb_fail_errno().
 */
#ifndef DSB_CORE_CORE_H
#define DSB_CORE_CORE_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <dsb/error.h>

#include "cleanup.h"
#include "limits.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* --- error.c ------------------------------------------------------------------------------- */

/* Fills @reterr (if non-NULL) with @code and the formatted message; returns -(int)code. */
int dsb_fail(dsb_error *reterr, dsb_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* As dsb_fail(), with ": strerror(errnum)" appended and sys_errno set. @errnum is positive. */
int dsb_fail_errno(dsb_error *reterr, dsb_code code, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Sets the subject of an already-filled @reterr (NULL is fine). Truncates safely. */
void dsb_error_set_subject(dsb_error *reterr, const char *subject);

/* Prepends "PREFIX: " to the message of an already-filled @reterr, keeping its code. */
void dsb_error_prefix(dsb_error *reterr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* --- strv.c: NULL-terminated arrays of owned strings ---------------------------------------- */

size_t strv_length(char *const *strv);
bool strv_contains(char *const *strv, const char *s);
/* Appends a copy of @s; *@strv may be NULL (an empty array). -ENOMEM. */
int strv_push(char ***strv, const char *s);
/* Appends @s itself, taking ownership even on failure. -ENOMEM. */
int strv_consume(char ***strv, char *s);
/* Returns a deep copy (an empty array for NULL), or NULL on OOM. */
char **strv_copy(char *const *strv);
char **strv_free(char **strv);

/* --- strbuf.c: a growable NUL-terminated buffer ---------------------------------------------- */

typedef struct strbuf {
	char *buf; /* NUL-terminated once anything was appended; NULL before */
	size_t len;
	size_t cap;
} strbuf;

#define STRBUF_INIT        \
	{                  \
		NULL, 0, 0 \
	}

int strbuf_append(strbuf *sb, const char *s, size_t n);
int strbuf_puts(strbuf *sb, const char *s);
int strbuf_putc(strbuf *sb, char c);
int strbuf_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the buffer ("" if nothing was appended) and empties @sb; NULL on OOM. */
char *strbuf_take(strbuf *sb);

/* @s without leading and trailing spaces, tabs, CRs and LFs: cut in place, moved past in front. */
char *str_trim_space(char *s);
void strbuf_done(strbuf *sb);

/* --- path.c: canonicalisation (dsh-compat §2.3, §4.1)
 * --------------------------------------------- */

/*
 * Lexical resolution as Node's path.resolve(cwd, path) on POSIX: @path made absolute against @cwd
 * (absolute itself), '.', '..', repeated and trailing '/' removed; '..' at the root stays at the
 * root. Pure: touches no file system. -EINVAL for a relative @cwd, -ENAMETOOLONG past
 * DSB_PATH_MAX, -ENOMEM.
 */
int path_lexical_resolve(const char *cwd, const char *path, char **ret_path);

/* canonicalPath(): realpath(3) of @path, or a copy of @path as spelled when that fails. -ENOMEM. */
int path_canonical(const char *path, char **ret_path);

/*
 * resolveWorkspaceRoot(): path_lexical_resolve(getcwd(), path_canonical(@path)). The cwd is read
 * only when needed. -errno of getcwd(), -ENAMETOOLONG, -ENOMEM.
 */
int path_resolve_root(const char *path, char **ret_path);

/* Whether the canonical @path is the canonical directory @dir or lies inside it. */
bool path_is_under(const char *path, const char *dir);

/* The first of the canonical @roots (NULL-terminated; NULL: none) holding @path, or NULL. */
const char *path_root_of(char *const *roots, const char *path);

/*
 * The first component of the absolute, lexically normal @path that is a symlink whose
 * directory (canonical) lies in one of the canonical @dirs: 1 with it in *@ret_link (new
 * string), 0 when there is none. -ENOMEM.
 */
int path_link_within(const char *path, char *const *dirs, char **ret_link);

/* fsync(2) of a directory, so an entry just made in it survives a crash. -errno. */
int fsync_dir(const char *dir);

/* mkdir -p with @mode for the directories it creates, fsyncing their parents when @sync. */
int mkdir_p(const char *path, mode_t mode, bool sync);

/*
 * The text of @errnum without allocating (glibc's strerror() allocates for a number it does not
 * know), NULL when glibc has none. musl has no strerrordesc_np(); its strerror() returns static
 * text for every number (the static `landlock-run` is built with musl where it can be).
 */
static inline const char *errno_desc(int errnum)
{
#ifdef __GLIBC__
	return strerrordesc_np(errnum);
#else
	return strerror(errnum);
#endif
}

/* --- sys.c -------------------------------------------------------------------------------- */

/* pidfd_open(2): a descriptor that polls readable when @pid exits. -errno (ENOSYS < 5.3). */
int pidfd_open_raw(pid_t pid);

/*
 * RESOLVE_* of <linux/openat2.h> (Linux 5.6) under our own names, so old headers build and a
 * later include of the kernel's header cannot clash.
 */
#define OPENAT2_RESOLVE_NO_MAGICLINKS 0x02
#define OPENAT2_RESOLVE_NO_SYMLINKS   0x04
#define OPENAT2_RESOLVE_BENEATH	      0x08

/*
 * openat2(2) with an #ifndef-safe struct open_how (version 0): the new descriptor, or -errno
 * (ENOSYS before Linux 5.6; a seccomp filter may say EPERM instead, which callers sort out).
 */
int openat2_raw(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve);

/*
 * Opens the directory @path (absolute, or relative to the cwd) as an O_PATH|O_CLOEXEC
 * descriptor, provided no component of the path is a symlink: openat2(RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), or, where openat2 is missing, a walk that opens one component at a
 * time with O_NOFOLLOW below the previous one, which refuses exactly the same paths. Returns
 * the descriptor or -errno: -ELOOP for a symlink on the path, -ENOTDIR for a component that is
 * not a directory, -ENOENT, -EACCES, -ENAMETOOLONG, ... Borrows @path.
 */
int open_dir_no_symlinks(const char *path);

/*
 * Makes the directory @rel (relative, components separated by '/') below the directory @dfd,
 * each missing component with @mode, reaching every component through its parent's descriptor
 * with O_NOFOLLOW: a symlink on the way is -ELOOP, a file -ENOTDIR, never followed. 0 or
 * -errno. Borrows @rel.
 */
int mkdir_beneath(int dfd, const char *rel, mode_t mode);

/*
 * Removes the entry @name of the directory @dfd and, when it is a directory, everything in it,
 * at any depth, never following a symlink (rmtree.c). Deep directories are renamed next to
 * @name for a while (".dsb-rm-PID-N"). 0, or the first -errno met (the rest is still tried).
 */
int rm_tree_at(int dfd, const char *name);

/*
 * write(2) of @n bytes of @buf to @fd (a pipe whose reader may have gone) that fails with EPIPE
 * instead of raising SIGPIPE, for the calling thread only. The result of write(2).
 */
ssize_t write_no_sigpipe(int fd, const void *buf, size_t n);

/*
 * Writes all @n bytes of @buf to @fd (a file, pipe or socket), resuming after EINTR and short
 * writes. A reader gone fails with -EPIPE, never a SIGPIPE (write_no_sigpipe()): a library
 * caller may not ignore the signal. Borrows @buf. 0, -EIO for a write of nothing, or -errno.
 */
int fd_write_all(int fd, const void *buf, size_t n);

/*
 * Reads exactly @n bytes from @fd into @buf, resuming after EINTR and short reads. Borrows
 * @buf. 0, -EIO at end of file before @n bytes, or -errno.
 */
int fd_read_all(int fd, void *buf, size_t n);

/* fd_read_all() with pread(2) from @offset (the file offset is left alone); -EIO: it is shorter. */
int fd_pread_all(int fd, void *buf, size_t n, off_t offset);

/*
 * Reads from @fd into @buf (at most @size-1 bytes, @size > 0, always NUL-terminated) until end
 * of file, a read error or a full buffer, and with @line once a newline has arrived; 0 then,
 * whatever came. Gives up, keeping what came, at @deadline (monotonic_ms()): -ETIMEDOUT;
 * once @cancel_fd (-1: none) polls readable: -ECANCELED; once *@interrupted (NULL: none; a
 * signal handler's flag) is set, seen within 200 ms: -EINTR; -errno of poll(2). Borrows all.
 */
int fd_read_until(int fd, char *buf, size_t size, uint64_t deadline, int cancel_fd,
		  const volatile sig_atomic_t *interrupted, bool line);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t monotonic_ms(void);

/* --- kfile.c: the kernel's small files ------------------------------------------------------ */

/*
 * Reads and writes of /proc, /sys and cgroup files, one system call each, as the kernel wants
 * them; async-signal-safe, so a child between fork and exec may use them. @name is relative to
 * @dir, or absolute with @dir AT_FDCWD.
 *
 * file_write_at(): writes @text whole in one write(2). 0, -EIO for a short write, or -errno.
 * file_read_at(): reads up to @size - 1 bytes into @buf and NUL-terminates it. The length read,
 * or -errno.
 */
int file_write_at(int dir, const char *name, const char *text);
ssize_t file_read_at(int dir, const char *name, char *buf, size_t size);

/* --- tmpdir.c: Node's os.tmpdir() on POSIX (dsh-compat §4.1)
 * -------------------------------------- */

/* The first non-empty of @tmpdir, @tmp, @temp, else "/tmp", with one trailing '/' stripped
 * unless the value is "/". Returns a new string, or NULL on OOM. */
char *tmpdir_pick(const char *tmpdir, const char *tmp, const char *temp);

/* tmpdir_pick() of the environment's TMPDIR, TMP and TEMP. -ENOMEM. */
int tmpdir_get(char **ret_path);

/* --- json.c --------------------------------------------------------------------------------- */

/*
 * Appends @s (@len bytes) to @sb as JSON.stringify() would quote it: '"' and '\' escaped, \b \f \n
 * \r \t short, other controls as \u00xx (lower-case hex), everything else raw. Input that is not
 * valid UTF-8 is first decoded as Node and WHATWG decoders do: each maximal invalid subpart
 * becomes U+FFFD. -ENOMEM.
 */
int json_quote_append(strbuf *sb, const char *s, size_t len);

/*
 * The code point at byte *@i of @s (@len bytes, *@i < @len), advancing *@i past it; a maximal
 * invalid subpart decodes to U+FFFD as one unit, as Node's decoder does.
 */
uint32_t utf8_next(const char *s, size_t len, size_t *i);

/* Whether String.prototype.trim() leaves nothing of @s (ECMAScript whitespace, decoded as UTF-8).
 */
bool js_blank(const char *s);

/*
 * Decodes @s (@len bytes) as UTF-8 the way Node reads a text file (each maximal invalid subpart
 * becomes U+FFFD) and returns the well-formed result, NUL-terminated, with its length. -ENOMEM.
 */
int utf8_sanitize(const char *s, size_t len, char **ret_text, size_t *ret_len);

/* json_quote_append() into a new string. -ENOMEM. */
int json_quote(const char *s, size_t len, char **ret_json);

/*
 * Seeds jansson's hash function from getrandom(2), once per process, before the first JSON
 * value is parsed (jansson would read /dev/urandom). Thread-safe; a no-op after the first call.
 */
void json_seed(void);

/*
 * Appends Number::toString() (ECMA-262) of @v, which is also JSON.stringify() of a finite @v: the
 * shortest digits that read back as @v, laid out the way JavaScript prints them ("5", "1.5",
 * "1e+21", "1e-7"; String(v) of the rest: "NaN", "Infinity", "-Infinity"). DSH's messages
 * interpolate numbers so. -ENOMEM.
 */
int js_number_append(strbuf *sb, double v);

/* Appends JSON.stringify() of @v: js_number_append() of a finite @v, else "null". -ENOMEM. */
int json_number_append(strbuf *sb, double v);

/* --- jw.c: the JSON writer for byte-exact output ------------------------------------------ */

/*
 * Compact JSON written in order into a growing buffer, strings quoted by json_quote_append(),
 * so the bytes are JSON.stringify()'s for the same keys in the same order. Its error sticks:
 * the first failure is recorded and every later call does nothing, so a document is written
 * without checks and checked once, by jw_take(), which every writer ends with. Members and
 * items get their commas themselves. Not thread-safe: one writer per document.
 *
 *   jw w = JW_INIT;
 *   jw_object_begin(&w);
 *   jw_member_string(&w, "path", path);
 *   jw_object_end(&w);
 *   r = jw_take(&w, &json);
 */
typedef struct jw {
	strbuf sb;
	int error;  /* the first failure (-ENOMEM), 0 until then */
	bool comma; /* a value precedes: the next member or item needs a comma */
} jw;

#define JW_INIT                   \
	{                         \
		.sb = STRBUF_INIT \
	}

void jw_object_begin(jw *w);
void jw_object_end(jw *w);
void jw_array_begin(jw *w);
void jw_array_end(jw *w);
/* A member's name: the next value is its value. @key is written as is (no escaping). */
void jw_key(jw *w, const char *key);
/* @s quoted as JSON.stringify() does, or null when @s is NULL. */
void jw_string(jw *w, const char *s);
/* The @len bytes at @s, NULs included, quoted as jw_string() quotes; never null ("" for 0). */
void jw_string_len(jw *w, const char *s, size_t len);
void jw_uint(jw *w, uint64_t v);
void jw_int(jw *w, int64_t v);
void jw_bool(jw *w, bool v);
void jw_null(jw *w);
/* @json, one value already encoded (compact, as it is to appear), as the next value. */
void jw_raw(jw *w, const char *json);
/*
 * @s appended as it is, with no comma before it and none owed after: a fragment the caller
 * formed, such as more members after a value (`,"k":1`) or the newline after a document.
 */
void jw_verbatim(jw *w, const char *s);
/* jw_key(), then the value. */
void jw_member_string(jw *w, const char *key, const char *s);
void jw_member_string_len(jw *w, const char *key, const char *s, size_t len);
void jw_member_uint(jw *w, const char *key, uint64_t v);
void jw_member_int(jw *w, const char *key, int64_t v);
void jw_member_bool(jw *w, const char *key, bool v);
void jw_member_raw(jw *w, const char *key, const char *json);

/*
 * The one check: 0 with *@ret_json the document (a new string; free with free()), or the first
 * failure (-ENOMEM), *@ret_json untouched. Empties @w either way, ready for another document.
 */
int jw_take(jw *w, char **ret_json);

/* --- visible.c: text made visible to a person ---------------------------------------------- */

/*
 * The notation. Printable UTF-8 is kept as it is; everything a terminal or a dialog would act on
 * or hide is written as an escape, so a person reads the bytes that are there:
 *
 *   \n \r \t          newline, carriage return, tab
 *   \\                a backslash (so that an escape in the text cannot pass for one of ours)
 *   \xNN              any other C0 control and DEL (\x1b, \x7f), and each byte of input that is
 *                     not UTF-8 (lower-case hex, two digits)
 *   \u{NNNN}          a code point that is valid UTF-8 but invisible or direction-changing: C1
 *                     controls (U+0080-U+009F), bidi controls (U+061C, U+200E-U+200F,
 *                     U+202A-U+202E, U+2066-U+2069), zero-width and format characters
 *                     (U+00AD, U+180E, U+200B, U+2060-U+2064, U+FEFF, U+FFF9-U+FFFB), the line
 *                     and paragraph separators U+2028-U+2029 and the tags U+E0000-U+E007F
 *                     (lower-case hex, at least four digits: \u{202e}, \u{e0041})
 *
 * So the escaped form of any text is one line of printable characters, and, flags aside, it
 * reads back unambiguously.
 */
enum {
	VISIBLE_KEEP_LINES = 1 << 0,	 /* \n and \t stay as they are (a command's output) */
	VISIBLE_KEEP_BACKSLASH = 1 << 1, /* a backslash stays single (output; JSON text) */
};

/* Appends @s (@len bytes, NULs included) to @sb in the notation above. Borrows @s. -ENOMEM. */
int visible_escape_append(strbuf *sb, const char *s, size_t len, unsigned flags);

/* visible_escape_append() into a new string (free with free()). -ENOMEM. */
int visible_escape(const char *s, size_t len, unsigned flags, char **ret_text);

/* --- uuid.c --------------------------------------------------------------------------------- */

#define UUID_STRING_MAX 37

/* A random (version 4, RFC 9562) UUID in lower-case 8-4-4-4-12 form. -errno of getrandom(). */
int uuid_random(char ret_uuid[UUID_STRING_MAX]);

#endif
