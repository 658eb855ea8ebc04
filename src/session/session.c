/* SPDX-License-Identifier: MIT */
/*
 * The session object: a log's path and header, and what the rest of the library asks of it:
 * folds (dsh-compat §3.4), the two write paths (setSandboxMode, setApprovalPolicy) and resolve()
 * with a session (§2.2). Nothing stays open between calls.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "session.h"

struct dsb_store {
	char *root;
	bool fsync;
};

struct dsb_session {
	char *path;
	log_header header;
	bool fsync;
	/*
	 * The last validation, for the file as it was then: a command folds several knobs, and
	 * the log it already checked needs no second look while it stays the same file.
	 */
	bool validated;
	dev_t valid_dev;
	ino_t valid_ino;
	off_t valid_size;
	struct timespec valid_mtime;
	log_valid valid;
};

/* log_validate() of @fd (fstat'ed as @st), skipped when @s checked this very file already. */
static int session_validate_fd(dsb_session *s, int fd, const struct stat *st, log_valid *ret,
			       dsb_error *reterr)
{
	if (s->validated && st->st_dev == s->valid_dev && st->st_ino == s->valid_ino &&
	    st->st_size == s->valid_size && st->st_mtim.tv_sec == s->valid_mtime.tv_sec &&
	    st->st_mtim.tv_nsec == s->valid_mtime.tv_nsec) {
		*ret = s->valid;
		return 0;
	}
	int r = log_validate(fd, s->path, ret, reterr);
	if (r < 0)
		return r;
	s->validated = true;
	s->valid_dev = st->st_dev;
	s->valid_ino = st->st_ino;
	s->valid_size = st->st_size;
	s->valid_mtime = st->st_mtim;
	s->valid = *ret;
	return 0;
}

int dsb_store_open(const char *root, dsb_store **ret_store, dsb_error *reterr)
{
	if (!ret_store)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_store_open: missing argument");

	_cleanup_free_ char *chosen = NULL;
	if (root)
		chosen = strdup(root);
	else {
		int r = layout_default_root(&chosen);
		if (r == -ENOENT)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"no session store: set DSH_SANDBOX_STORE or HOME, or pass "
					"--store DIR");
		if (r < 0)
			chosen = NULL;
	}
	if (!chosen)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "session store: out of memory");
	if (!*chosen)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "session store: empty path");

	/* The root is spelled into every log path: make it absolute and normal once. */
	dsb_store *store = calloc(1, sizeof(*store));
	if (!store)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "session store: out of memory");
	int r = path_resolve_root(chosen, &store->root);
	if (r < 0) {
		free(store);
		return dsb_fail_errno(reterr, r == -ENOMEM ? DSB_E_NO_MEMORY : DSB_E_INVALID_ARGS,
				      -r, "session store '%s'", chosen);
	}
	store->fsync = true;
	*ret_store = store;
	return 0;
}

dsb_store *dsb_store_free(dsb_store *store)
{
	if (store) {
		free(store->root);
		free(store);
	}
	return NULL;
}

const char *dsb_store_root(const dsb_store *store)
{
	return store ? store->root : NULL;
}

void dsb_store_set_fsync(dsb_store *store, bool fsync)
{
	if (store)
		store->fsync = fsync;
}

dsb_session *dsb_session_free(dsb_session *session)
{
	if (session) {
		free(session->path);
		log_header_done(&session->header);
		free(session);
	}
	return NULL;
}

static void session_freep(dsb_session **s)
{
	*s = dsb_session_free(*s);
}

static int stop_at_first(const log_record *rec, void *userdata, dsb_error *reterr)
{
	return 1;
}

/* Opening costs the header line, not the log: a plain header is read directly; a zstd scan
 * stops at the first event. */
static int read_header(int fd, const char *path, off_t size, log_header *ret_header,
		       dsb_error *reterr)
{
	if (log_is_zstd(fd, size)) {
		int r = log_scan(fd, path, ret_header, stop_at_first, NULL, NULL, reterr);
		return r < 0 ? r : 0;
	}
	off_t header_end, committed;
	int r = tail_bounds(fd, size, &header_end, &committed);
	if (r == -ENODATA)
		return dsb_fail(reterr, DSB_E_SESSION_INVALID,
				"%s: empty or header-less session log", path);
	if (r == -ENOMEM)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot read", path);
	_cleanup_free_ char *line = malloc((size_t)header_end);
	if (!line)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	r = fd_pread_all(fd, line, (size_t)header_end, 0);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot read", path);
	return log_header_parse(line, (size_t)header_end - 1, path, ret_header, reterr);
}

/* Reads the header of the log at @path; DSB_E_SESSION_NOT_FOUND when there is no file. */
static int load_session(const char *path, bool fsync, dsb_session **ret_session, dsb_error *reterr)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return dsb_fail(reterr, DSB_E_SESSION_NOT_FOUND, "%s: no such session log", path);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot stat", path);
	if (!S_ISREG(st.st_mode))
		return dsb_fail(reterr, DSB_E_IO, "%s: not a regular file", path);

	_cleanup_(session_freep) dsb_session *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path)))
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	s->fsync = fsync;

	int r = read_header(fd, path, st.st_size, &s->header, reterr);
	if (r < 0)
		return r;
	*ret_session = TAKE_PTR(s);
	return 0;
}

/* An id's log under one project directory: session.jsonl, else session.jsonl.zstd. */
static int find_in_project(const char *project_dir, const char *segment, char **ret_path)
{
	static const char *const names[] = {"session.jsonl", "session.jsonl.zstd"};
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		char *p = NULL;
		if (asprintf(&p, "%s/%s/%s", project_dir, segment, names[i]) < 0)
			return -ENOMEM;
		if (access(p, F_OK) == 0) {
			*ret_path = p;
			return 1;
		}
		free(p);
	}
	return 0;
}

/* Finds the log of session @id: its project directory is unknown, so look in each. */
static int find_by_id(const dsb_store *store, const char *id, char **ret_path, dsb_error *reterr)
{
	_cleanup_free_ char *segment = NULL;
	int r = layout_encode_segment(id, &segment);
	if (r == -EINVAL)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "empty session id");
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");

	DIR *d = opendir(store->root);
	if (!d && errno == ENOENT)
		return dsb_fail(reterr, DSB_E_SESSION_NOT_FOUND, "no session \"%s\" in %s", id,
				store->root);
	if (!d)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot list", store->root);
	struct dirent *e;
	r = 0;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		_cleanup_free_ char *project = NULL;
		if (asprintf(&project, "%s/%s", store->root, e->d_name) < 0)
			r = -ENOMEM;
		else
			r = find_in_project(project, segment, ret_path);
	}
	closedir(d);
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r == 0)
		return dsb_fail(reterr, DSB_E_SESSION_NOT_FOUND, "no session \"%s\" in %s", id,
				store->root);
	return 0;
}

int dsb_session_open(dsb_store *store, const char *name, dsb_session **ret_session,
		     dsb_error *reterr)
{
	if (!store || !name || !ret_session)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_session_open: missing argument");
	if (strchr(name, '/'))
		return load_session(name, store->fsync, ret_session, reterr);

	_cleanup_free_ char *path = NULL;
	int r = find_by_id(store, name, &path, reterr);
	if (r < 0)
		return r;
	return load_session(path, store->fsync, ret_session, reterr);
}

int dsb_session_create(dsb_store *store, const char *cwd, dsb_session **ret_session,
		       dsb_error *reterr)
{
	if (!store || !ret_session)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_session_create: missing argument");
	if (cwd && cwd[0] != '/')
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"session cwd '%s': not an absolute path", cwd);

	char id[UUID_STRING_MAX];
	int r = uuid_random(id);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "cannot draw random bytes");

	_cleanup_(session_freep) dsb_session *s = calloc(1, sizeof(*s));
	if (!s)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	s->fsync = store->fsync;
	s->header.id = strdup(id);
	/*
	 * Canonical, as DSH's process.cwd() is: a root that later resolves differently was
	 * swapped (policy/resolve.c refuses one reached through a link in a temp dir). A path
	 * that does not exist is kept as given.
	 */
	s->header.cwd = cwd ? realpath(cwd, NULL) : NULL;
	if (cwd && !s->header.cwd && errno != ENOMEM)
		s->header.cwd = strdup(cwd);
	s->header.created_at = log_now_ms();
	if (!s->header.id || (cwd && !s->header.cwd))
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");

	_cleanup_free_ char *dir = NULL, *line = NULL;
	r = layout_session_dir(store->root, s->header.cwd, id, &dir);
	if (r >= 0)
		r = log_header_format(&s->header, &line);
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	r = log_create(dir, "session.jsonl", line, &s->path, reterr);
	if (r < 0)
		return r;
	*ret_session = TAKE_PTR(s);
	return 0;
}

const char *dsb_session_id(const dsb_session *session)
{
	return session ? session->header.id : NULL;
}

const char *dsb_session_cwd(const dsb_session *session)
{
	return session ? session->header.cwd : NULL;
}

const char *dsb_session_path(const dsb_session *session)
{
	return session ? session->path : NULL;
}

uint64_t dsb_session_created_at(const dsb_session *session)
{
	return session ? session->header.created_at : 0;
}

int session_validate(dsb_session *session, dsb_error *reterr)
{
	_cleanup_close_ int fd = open(session->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", session->path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot stat", session->path);
	log_valid valid;
	return session_validate_fd(session, fd, &st, &valid, reterr);
}

int session_scan(dsb_session *session, log_record_fn fn, void *userdata,
		 log_scan_result *ret_result, dsb_error *reterr)
{
	_cleanup_close_ int fd = open(session->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", session->path);
	return log_scan(fd, session->path, NULL, fn, userdata, ret_result, reterr);
}

/* What a forward fold keeps: the last record of some types (zstd logs cannot be read backwards). */
struct forward_fold {
	const char *const *types;
	size_t n;
	size_t which;
	json_t *last;
};

static int fold_record(const log_record *rec, void *userdata, dsb_error *reterr)
{
	struct forward_fold *f = userdata;
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(rec->type, f->types[i]) == 0) {
			json_decref(f->last);
			f->last = json_incref(rec->json);
			f->which = i;
		}
	}
	return 0;
}

int session_find_last(dsb_session *s, const char *const *types, size_t n, size_t *ret_which,
		      json_t **ret_record, dsb_error *reterr)
{
	_cleanup_close_ int fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", s->path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot stat", s->path);

	_cleanup_(json_decrefp) json_t *rec = NULL;
	size_t which = 0;
	int r;
	if (log_is_zstd(fd, st.st_size)) {
		/* The forward fold is a whole scan: it validates as it goes. */
		struct forward_fold f = {.types = types, .n = n};
		r = log_scan(fd, s->path, NULL, fold_record, &f, NULL, reterr);
		rec = f.last;
		which = f.which;
	} else {
		/* The whole log is valid (by the rule every reader applies) before any of it
		 * counts. */
		log_valid valid;
		r = session_validate_fd(s, fd, &st, &valid, reterr);
		if (r >= 0)
			r = tail_find_last(fd, s->path, valid.header_end, valid.end.offset, types,
					   n, &which, &rec, reterr);
	}
	if (r < 0)
		return r;
	if (!rec)
		return 0;
	if (ret_which)
		*ret_which = which;
	*ret_record = TAKE_PTR(rec);
	return 1;
}

/* The data of the last event of @type: 1 with *@ret_data (a new reference), or 0. */
static int fold_last(dsb_session *s, const char *type, json_t **ret_data, dsb_error *reterr)
{
	_cleanup_(json_decrefp) json_t *rec = NULL;
	int r = session_find_last(s, &type, 1, NULL, &rec, reterr);
	if (r <= 0)
		return r;
	*ret_data = json_incref(json_object_get(rec, "data"));
	return 1;
}

/*
 * The string at data.@key of the last @type event: 1, or 0 when there is none. A value that
 * is not a string is DSB_E_INVARIANT, "TYPE carries unknown KEY ..." (dsh-compat §3.5).
 */
static int fold_string(dsb_session *s, const char *type, const char *key, char **ret_value,
		       dsb_error *reterr)
{
	_cleanup_(json_decrefp) json_t *data = NULL;
	int r = fold_last(s, type, &data, reterr);
	if (r <= 0)
		return r;
	json_t *v = json_object_get(data, key);
	if (!json_is_string(v)) {
		_cleanup_free_ char *shown =
			v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		return dsb_fail(reterr, DSB_E_INVARIANT, "%s: %s carries unknown %s \"%s\"",
				s->path, type, key, shown ? shown : "undefined");
	}
	*ret_value = strdup(json_string_value(v));
	return *ret_value ? 1 : dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
}

/*
 * fold_string() through a closed vocabulary: @parse gives -1 for a word outside it, which is
 * DSB_E_INVARIANT too. Fail closed: an unknown value is never read as the default.
 */
static int fold_enum(dsb_session *s, const char *type, const char *key, int (*parse)(const char *),
		     int *ret_value, dsb_error *reterr)
{
	_cleanup_free_ char *word = NULL;
	int r = fold_string(s, type, key, &word, reterr);
	if (r <= 0)
		return r;
	int v = parse(word);
	if (v < 0)
		return dsb_fail(reterr, DSB_E_INVARIANT, "%s: %s carries unknown %s \"%s\"",
				s->path, type, key, word);
	*ret_value = v;
	return 1;
}

static int parse_mode(const char *s)
{
	return dsb_mode_from_string(s);
}

static int parse_approval(const char *s)
{
	return dsb_approval_policy_from_string(s);
}

int dsb_session_fold_mode(dsb_session *session, dsb_mode *ret_mode, dsb_error *reterr)
{
	int v = 0;
	int r = fold_enum(session, "sandbox/mode", "mode", parse_mode, &v, reterr);
	if (r > 0)
		*ret_mode = (dsb_mode)v;
	return r;
}

int dsb_session_fold_approval(dsb_session *session, dsb_approval_policy *ret_policy,
			      dsb_error *reterr)
{
	int v = 0;
	int r = fold_enum(session, "approval/policy", "policy", parse_approval, &v, reterr);
	if (r > 0)
		*ret_policy = (dsb_approval_policy)v;
	return r;
}

int dsb_session_fold_preset(dsb_session *session, char **ret_preset, dsb_error *reterr)
{
	return fold_string(session, "permission/preset", "preset", ret_preset, reterr);
}

int dsb_session_append(dsb_session *session, const char *type, const char *data_json,
		       uint64_t *ret_seq, dsb_error *reterr)
{
	if (!session || !type || !data_json)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_session_append: missing argument");
	if (!*type)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "event type: empty");

	/* The record must stay one line and one JSON value, or the log is corrupt for everyone. */
	json_seed();
	json_error_t error;
	json_t *data = json_loads(data_json, JSON_DECODE_ANY, &error);
	json_decref(data);
	if (!data || strpbrk(data_json, "\n\r"))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"event data: not one compact JSON value");
	return log_append(session->path, type, data_json, NULL, session->fsync, ret_seq, reterr);
}

int session_append_extra(dsb_session *session, const char *type, const char *data_json,
			 const char *extra, uint64_t *ret_seq, dsb_error *reterr)
{
	return log_append(session->path, type, data_json, extra, session->fsync, ret_seq, reterr);
}

int session_append_decide(dsb_session *session, log_decide_fn decide, void *userdata,
			  uint64_t *ret_seq, dsb_error *reterr)
{
	return log_append_decide(session->path, session->fsync, decide, userdata, ret_seq, reterr);
}

void session_message_begin(jw *w, const char *text, const char *plugin)
{
	jw_object_begin(w);
	jw_key(w, "content");
	jw_array_begin(w);
	jw_object_begin(w);
	jw_member_string(w, "type", "text");
	jw_member_string(w, "text", text);
	jw_object_end(w);
	jw_array_end(w);
	jw_key(w, "source");
	jw_object_begin(w);
	jw_member_string(w, "kind", "plugin");
	jw_member_string(w, "plugin", plugin);
}

void session_message_end(jw *w, const char *id)
{
	jw_object_end(w);
	jw_member_string(w, "role", "user");
	jw_member_string(w, "id", id);
	jw_object_end(w);
}

/* Appends {"type":@type,"data":{"@key":"@value"}}. */
static int append_knob(dsb_session *s, const char *type, const char *key, const char *value,
		       dsb_error *reterr)
{
	_cleanup_free_ char *data = NULL;
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, key, value);
	jw_object_end(&w);
	if (jw_take(&w, &data) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return log_append(s->path, type, data, NULL, s->fsync, NULL, reterr);
}

int dsb_session_set_mode(dsb_session *session, dsb_mode mode, dsb_error *reterr)
{
	const char *name = dsb_mode_to_string(mode);
	if (!session || !name)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_session_set_mode: invalid argument");
	return append_knob(session, "sandbox/mode", "mode", name, reterr);
}

int dsb_session_set_approval(dsb_session *session, const char *policy, dsb_error *reterr)
{
	if (!session)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_session_set_approval: no session");
	/* Validated before anything is appended (dsh-compat §3.4), with DSH's TypeError text. */
	dsb_approval_policy p = dsb_approval_policy_from_string(policy);
	if (p == _DSB_APPROVAL_INVALID)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"approval policy must be one of \"ask\" or \"never\"");
	return append_knob(session, "approval/policy", "policy", dsb_approval_policy_to_string(p),
			   reterr);
}

int dsb_session_resolve(dsb_session *session, const dsb_policy *policy, dsb_mode mode,
			dsb_exec_policy *ret_policy, dsb_error *reterr)
{
	if (!session)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_session_resolve: no session");

	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	req.mode = mode;
	req.session_id = session->header.id;
	req.session_cwd = session->header.cwd;
	/*
	 * An explicit mode outranks the fold, yet a corrupt log is refused all the same: a command
	 * answers the same for a log whatever its flags.
	 */
	int r = mode == _DSB_MODE_INVALID
			? dsb_session_fold_mode(session, &req.session_mode, reterr)
			: session_validate(session, reterr);
	if (r < 0)
		return r;
	return dsb_policy_resolve(policy, &req, ret_policy, reterr);
}

/* --- listing ------------------------------------------------------------------------------ */

static int list_project(const char *project, int (*fn)(const dsb_session_info *, void *),
			void *userdata, int *count)
{
	DIR *d = opendir(project);
	if (!d)
		return 0; /* not a directory of ours */
	struct dirent *e;
	int r = 0;
	while (r >= 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		_cleanup_free_ char *path = NULL;
		int found = find_in_project(project, e->d_name, &path);
		if (found < 0) {
			r = found;
			break;
		}
		if (!found)
			continue;
		_cleanup_(session_freep) dsb_session *s = NULL;
		if (load_session(path, true, &s, NULL) < 0)
			continue; /* someone else's file, or a foreign format: not listed */
		dsb_session_info info = {
			.id = s->header.id,
			.cwd = s->header.cwd,
			.path = s->path,
			.created_at = s->header.created_at,
		};
		r = fn(&info, userdata);
		(*count)++;
	}
	closedir(d);
	return r;
}

int dsb_store_list(dsb_store *store, int (*fn)(const dsb_session_info *info, void *userdata),
		   void *userdata, dsb_error *reterr)
{
	if (!store || !fn)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_store_list: missing argument");
	DIR *d = opendir(store->root);
	if (!d && errno == ENOENT)
		return 0;
	if (!d)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot list", store->root);

	int count = 0, r = 0;
	struct dirent *e;
	while (r >= 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		_cleanup_free_ char *project = NULL;
		if (asprintf(&project, "%s/%s", store->root, e->d_name) < 0)
			r = -ENOMEM;
		else
			r = list_project(project, fn, userdata, &count);
	}
	closedir(d);
	if (r == -ENOMEM)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r < 0)
		return dsb_fail(reterr, dsb_code_from_return(r), "listing sessions stopped");
	return count;
}
