/* SPDX-License-Identifier: MIT */
/*
 * Protected paths (beyond DSH; docs/design/protected-paths.md): what a confined command must not
 * change although it lies inside a writable root, because it bears the policy (the session
 * store, the configuration, the answerer and runner programs, the spill directory) or runs
 * later outside the sandbox (a checkout's .git hooks and config, sandbox-policy.protectedPaths);
 * and what it must not read at all (sandbox-policy.denyRead).
 *
 * resolve() lists them per call, canonical, in the order found: a read-only or hidden path
 * outside every writable root needs nothing (the backends keep it read-only anyway), so only
 * the ones inside one are listed, plus denyRead wherever it points. A protected path that does
 * not exist yet is listed too: the confinement makes it, empty, before the command starts, so
 * that the command cannot create it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../repos/repos.h"
#include "policy.h"

/* --- the service's sources -------------------------------------------------------------------- */

int policy_source_add(dsb_policy *policy, dsb_protect_kind kind, const char *path)
{
	policy_source *v = reallocarray(policy->sources, policy->n_sources + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	policy->sources = v;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	v[policy->n_sources++] = (policy_source){.kind = kind, .path = copy};
	return 0;
}

int dsb_policy_protect(dsb_policy *policy, dsb_protect_kind kind, const char *path,
		       dsb_error *reterr)
{
	if (!policy || !path || kind < 0 || kind >= _DSB_PROTECT_MAX || kind == DSB_PROTECT_GIT ||
	    kind == DSB_PROTECT_DENY_READ || kind == DSB_PROTECT_STARTUP)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_policy_protect: invalid argument");
	if (path[0] != '/')
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"protected path '%s': not an absolute path", path);
	if (strlen(path) >= DSB_PATH_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"protected path '%s': longer than %d bytes", path,
				DSB_PATH_MAX - 1);
	if (policy_source_add(policy, kind, path) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
	return 0;
}

/* @name as the program a runner or answerer argv starts: a path, or the first on PATH. */
static char *program_path(const char *name)
{
	if (strchr(name, '/'))
		return strdup(name);
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *end = strchrnul(p, ':');
		char *candidate = NULL;
		if (end > p && p[0] == '/' &&
		    asprintf(&candidate, "%.*s/%s", (int)(end - p), p, name) >= 0) {
			if (access(candidate, X_OK) == 0)
				return candidate;
			free(candidate);
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

/*
 * An answerer's or runner's argv: its program, and every argument naming an existing regular
 * file (`python3 approve.py`), each as an absolute path.
 */
int policy_source_add_argv(dsb_policy *policy, dsb_protect_kind kind, char *const *argv)
{
	for (size_t i = 0; argv && argv[i]; i++) {
		_cleanup_free_ char *path = i == 0 ? program_path(argv[i]) : NULL;
		struct stat st;
		if (i > 0 && (stat(argv[i], &st) < 0 || !S_ISREG(st.st_mode)))
			continue;
		/* Absolute as spelled, not resolved: a symlink on the way is checked at resolve().
		 */
		const char *spelled = path ? path : argv[i];
		_cleanup_free_ char *cwd = spelled[0] == '/' ? NULL : getcwd(NULL, 0);
		_cleanup_free_ char *absolute = NULL;
		if (spelled[0] != '/' && !cwd)
			continue;
		int r = path_lexical_resolve(cwd ? cwd : "/", spelled, &absolute);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			continue;
		if (policy_source_add(policy, kind, absolute) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* --- one call's list ------------------------------------------------------------------------ */

typedef struct plist {
	dsb_protected *v;
	size_t n, cap;
} plist;

static void plist_done(plist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	*l = (plist){0};
}

/* Adds @path (taking it) unless it is listed already. -ENOMEM. */
static int plist_take(plist *l, char *path, dsb_protect_kind kind, bool directory, bool exists)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].path, path) == 0) {
			free(path);
			return 0;
		}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		dsb_protected *v = reallocarray(l->v, cap, sizeof(*v));
		if (!v) {
			free(path);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (dsb_protected){
		.path = path, .kind = kind, .directory = directory, .exists = exists};
	return 0;
}

/*
 * @path (absolute) with every symlink of its existing part resolved: realpath of the longest
 * prefix that exists, plus the rest as spelled. *@ret_exists says whether all of it exists.
 */
static int canonical_nearest(const char *path, char **ret, bool *ret_exists)
{
	_cleanup_free_ char *lexical = NULL;
	int r = path_lexical_resolve("/", path, &lexical);
	if (r < 0)
		return r;
	size_t cut = strlen(lexical);
	for (;;) {
		char saved = lexical[cut];
		lexical[cut] = '\0';
		char *real = realpath(cut ? lexical : "/", NULL);
		lexical[cut] = saved;
		if (real) {
			*ret_exists = saved == '\0';
			if (saved == '\0') {
				*ret = real;
				return 0;
			}
			r = asprintf(ret, "%s%s", strcmp(real, "/") == 0 ? "" : real,
				     lexical + cut);
			free(real);
			return r < 0 ? -ENOMEM : 0;
		}
		if (errno == ENOMEM)
			return -ENOMEM;
		if (cut == 0)
			return -ENOENT;
		while (cut > 0 && lexical[--cut] != '/')
			;
	}
}

/*
 * Lists @path as @kind when it lies strictly inside a writable root. A missing one is listed
 * (to be made empty) when @make_missing; @directory says what it would be.
 */
/* protect_path() of @canon (taken), canonical_nearest()'s result, which @exists or not. */
static int protect_canonical(plist *l, char *const *roots, char *canon, bool exists,
			     dsb_protect_kind kind, bool directory, bool make_missing)
{
	_cleanup_free_ char *owned = canon;
	if (!exists && !make_missing)
		return 0;
	const char *root = path_root_of(roots, canon);
	/* A whole writable root is not "inside" one: protecting it would undo the mode. */
	if (!root || strcmp(root, canon) == 0 || strv_contains(roots, canon))
		return 0;
	struct stat st;
	if (exists && stat(canon, &st) == 0)
		directory = S_ISDIR(st.st_mode);
	return plist_take(l, TAKE_PTR(owned), kind, directory, exists);
}

static int protect_path(plist *l, char *const *roots, const char *path, dsb_protect_kind kind,
			bool directory, bool make_missing)
{
	char *canon = NULL;
	bool exists = false;
	int r = canonical_nearest(path, &canon, &exists);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	return protect_canonical(l, roots, canon, exists, kind, directory, make_missing);
}

/*
 * The symlink @path (in a writable root) that leads to a protected path: the command could
 * replace it by a file of its own, which no mount of the target prevents. Listed as a name
 * that must stay as it is: made this symlink again after the call if it changed.
 */
static int protect_link(plist *l, char *const *roots, const char *path, dsb_protect_kind kind)
{
	const char *root = path_root_of(roots, path);
	if (!root || strcmp(root, path) == 0)
		return 0;
	char target[DSB_PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = '\0';
	_cleanup_free_ char *copy = strdup(path), *link = strdup(target);
	if (!copy || !link)
		return -ENOMEM;
	size_t before = l->n;
	int r = plist_take(l, TAKE_PTR(copy), kind, false, true);
	if (r >= 0 && l->n > before) {
		l->v[l->n - 1].absent = true;
		l->v[l->n - 1].link = TAKE_PTR(link);
	}
	return r;
}

/*
 * protect_path() of @dir/@name where @dir is canonical already: one lstat(), and realpath()
 * only through a symlink (a git walk lists several names in each gitdir, on every call).
 */
static int protect_child(plist *l, char *const *roots, const char *dir, const char *name,
			 dsb_protect_kind kind, bool directory, bool make_missing)
{
	_cleanup_free_ char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	struct stat st;
	int k = lstat(p, &st);
	if (k == 0 && S_ISLNK(st.st_mode)) {
		int r = protect_link(l, roots, p, kind);
		return r < 0 ? r : protect_path(l, roots, p, kind, directory, make_missing);
	}
	if ((k < 0 && errno != ENOENT) || (k < 0 && !make_missing))
		return 0;
	const char *root = path_root_of(roots, p);
	if (!root || strcmp(root, p) == 0 || strv_contains(roots, p))
		return 0;
	return plist_take(l, TAKE_PTR(p), kind, k == 0 ? S_ISDIR(st.st_mode) : directory, k == 0);
}

/* Reads the first line of the small file @dir/@name. -ENOENT when absent, -errno. */
static int read_line(const char *dir, const char *name, char *buf, size_t size)
{
	buf[0] = '\0';
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

/* @rel resolved against the directory @base, unless absolute. */
static int join(const char *base, const char *rel, char **ret)
{
	return path_lexical_resolve(base, rel, ret);
}

/* Whether @dir/@name exists (as anything; true on OOM: nothing is listed as absent then). */
static bool child_exists(const char *dir, const char *name)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;
	return asprintf(&p, "%s/%s", dir, name) < 0 || lstat(p, &st) == 0;
}

/* Whether @gitdir's config turns on extensions.worktreeConfig (any spelling: it is a flag). */
static bool worktree_config_enabled(const char *gitdir)
{
	_cleanup_free_ char *p = NULL;
	if (asprintf(&p, "%s/config", gitdir) < 0)
		return true;
	_cleanup_fclose_ FILE *f = fopen(p, "re");
	char line[512];
	while (f && fgets(line, sizeof(line), f))
		if (strcasestr(line, "worktreeconfig"))
			return true;
	return false;
}

/* Lists @dir/@name, missing now, as one of @kind that must stay so. */
static int protect_absent_as(plist *l, char *const *roots, const char *dir, const char *name,
			     dsb_protect_kind kind, bool directory)
{
	_cleanup_free_ char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	const char *root = path_root_of(roots, p);
	if (!root || strcmp(root, p) == 0)
		return 0;
	size_t before = l->n;
	int r = plist_take(l, TAKE_PTR(p), kind, directory, false);
	if (r >= 0 && l->n > before)
		l->v[l->n - 1].absent = true;
	return r;
}

/* Lists @dir/@name, missing now, as a git path that must stay so. */
static int protect_absent(plist *l, char *const *roots, const char *dir, const char *name)
{
	const char *root = path_root_of(roots, dir);
	if (root && strcmp(root, dir) == 0)
		return 0;
	return protect_absent_as(l, roots, dir, name, DSB_PROTECT_GIT, false);
}

/*
 * @gitdir's config.worktree counts only with extensions.worktreeConfig (@enabled): then it is
 * made empty and kept read-only; without, one the command writes is removed after the call (a
 * later `git config extensions.worktreeConfig true` would otherwise bring it to life).
 */
static int protect_config_worktree(plist *l, char *const *roots, const char *gitdir, bool enabled)
{
	if (!enabled && !child_exists(gitdir, "config.worktree"))
		return protect_absent(l, roots, gitdir, "config.worktree");
	return protect_child(l, roots, gitdir, "config.worktree", DSB_PROTECT_GIT, false, enabled);
}

#define GIT_MAX_DEPTH 4 /* nested submodules followed, modules/ levels searched */

static int protect_gitdir(plist *l, char *const *roots, const char *gitdir, int depth);
static int protect_submodule_checkout(plist *l, char *const *roots, const char *gitdir);

/*
 * The gitdirs of submodules below @dir (a gitdir's modules/), their names possibly nested.
 * Recursive with protect_gitdir(), bounded by GIT_MAX_DEPTH.
 */
/* NOLINTNEXTLINE(misc-no-recursion) */
static int protect_modules(plist *l, char *const *roots, const char *dir, int depth)
{
	if (depth > GIT_MAX_DEPTH)
		return 0;
	_cleanup_(closedirp) DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int r = 0;
	while (r >= 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		_cleanup_free_ char *sub = NULL;
		if (asprintf(&sub, "%s/%s", dir, e->d_name) < 0)
			return -ENOMEM;
		_cleanup_free_ char *head = NULL;
		if (asprintf(&head, "%s/HEAD", sub) < 0)
			return -ENOMEM;
		bool gitdir = access(head, F_OK) == 0;
		r = gitdir ? protect_gitdir(l, roots, sub, depth + 1)
			   : protect_modules(l, roots, sub, depth + 1);
		if (r >= 0 && gitdir)
			r = protect_submodule_checkout(l, roots, sub);
	}
	return r;
}

/* What a linked worktree's gitdir holds that git follows: commondir, config.worktree. */
static int protect_worktrees(plist *l, char *const *roots, const char *dir, bool worktree_config)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int r = 0;
	while (r >= 0 && (e = readdir(d))) {
		/* A worktree's gitdir is a directory; names below it are then canonical. */
		if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		static const char *const names[] = {"commondir", "gitdir"};
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(names); i++) {
			_cleanup_free_ char *p = NULL;
			if (asprintf(&p, "%s/%s/%s", dir, e->d_name, names[i]) < 0)
				return -ENOMEM;
			r = protect_path(l, roots, p, DSB_PROTECT_GIT, false, false);
		}
		/* config.worktree, read with extensions.worktreeConfig: as the main gitdir's. */
		_cleanup_free_ char *w = NULL;
		char line[DSB_PATH_MAX];
		if (asprintf(&w, "%s/%s", dir, e->d_name) < 0)
			return -ENOMEM;
		if (r >= 0)
			r = protect_config_worktree(l, roots, w, worktree_config);
		/* The worktree's own .git file, which names this gitdir: not to be repointed. */
		_cleanup_free_ char *checkout = NULL;
		/* Absolute as git 2.39 writes it, or relative (worktree.useRelativePaths). */
		if (r >= 0 && read_line(w, "gitdir", line, sizeof(line)) == 0 && line[0]) {
			if (join(w, line, &checkout) < 0)
				return -ENOMEM;
			r = protect_path(l, roots, checkout, DSB_PROTECT_GIT, false, false);
		}
	}
	return r;
}

/* A submodule's checkout: core.worktree in its gitdir's config. Its .git file is protected. */
static int protect_submodule_checkout(plist *l, char *const *roots, const char *gitdir)
{
	_cleanup_free_ char *config = NULL;
	if (asprintf(&config, "%s/config", gitdir) < 0)
		return -ENOMEM;
	_cleanup_fclose_ FILE *f = fopen(config, "re");
	if (!f)
		return 0;
	char line[DSB_PATH_MAX];
	while (fgets(line, sizeof(line), f)) {
		char *v = line + strspn(line, " \t");
		if (strncmp(v, "worktree", 8) != 0)
			continue;
		v += 8 + strspn(v + 8, " \t");
		if (*v++ != '=')
			continue;
		v += strspn(v, " \t");
		v[strcspn(v, "\r\n")] = '\0';
		_cleanup_free_ char *checkout = NULL, *dotgit = NULL;
		if (join(gitdir, v, &checkout) < 0 || asprintf(&dotgit, "%s/.git", checkout) < 0)
			return -ENOMEM;
		return protect_path(l, roots, dotgit, DSB_PROTECT_GIT, false, false);
	}
	return 0;
}

/*
 * One gitdir: hooks and info (made empty when missing, which git does not mind), config and
 * config.worktree, the commondir file and the common gitdir it names, and the gitdirs of its
 * submodules and linked worktrees. The rest (objects, refs, index, HEAD) stays writable so
 * that add, commit, fetch and worktree add work.
 */
/* NOLINTNEXTLINE(misc-no-recursion) */
static int protect_gitdir(plist *l, char *const *roots, const char *gitdir, int depth)
{
	static const struct {
		const char *name;
		bool directory, make;
	} parts[] = {
		{"hooks", true, true},
		{"info", true, true},
		{"config", false, false},
		{"commondir", false, false},
	};
	if (depth > GIT_MAX_DEPTH || !path_root_of(roots, gitdir))
		return 0;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(parts); i++)
		r = protect_child(l, roots, gitdir, parts[i].name, DSB_PROTECT_GIT,
				  parts[i].directory, parts[i].make);
	/* A gitdir with no config yet (one a command is building): it must stay so. */
	if (r >= 0 && !child_exists(gitdir, "config"))
		r = protect_absent(l, roots, gitdir, "config");
	if (r >= 0)
		r = protect_config_worktree(l, roots, gitdir, worktree_config_enabled(gitdir));

	/*
	 * A main gitdir has no commondir, and git dies on an empty one: a command that writes
	 * one points git at a gitdir of its own (config, hooks). It must stay absent: removed
	 * after the call (policy's "absent").
	 */
	char line[DSB_PATH_MAX];
	int k = r < 0 ? 0 : read_line(gitdir, "commondir", line, sizeof(line));
	if (k == -ENOENT)
		r = protect_absent(l, roots, gitdir, "commondir");
	else if (k == 0 && line[0]) {
		_cleanup_free_ char *common = NULL, *canon = NULL;
		bool exists = false;
		if (join(gitdir, line, &common) < 0)
			return -ENOMEM;
		r = canonical_nearest(common, &canon, &exists);
		if (r == -ENOMEM)
			return r;
		r = exists && strcmp(canon, gitdir) != 0
			    ? protect_gitdir(l, roots, canon, depth + 1)
			    : 0;
	}
	_cleanup_free_ char *modules = NULL, *worktrees = NULL;
	if (asprintf(&modules, "%s/modules", gitdir) < 0 ||
	    asprintf(&worktrees, "%s/worktrees", gitdir) < 0)
		return -ENOMEM;
	if (r >= 0)
		r = protect_modules(l, roots, modules, depth);
	if (r >= 0)
		r = protect_worktrees(l, roots, worktrees, worktree_config_enabled(gitdir));
	return r;
}

/*
 * The git set of one writable root: its .git directory, or the .git file of a linked worktree
 * or submodule (itself protected, so that it cannot be pointed elsewhere) and the gitdir it
 * names.
 */
static int protect_git(plist *l, char *const *roots, const char *root)
{
	_cleanup_free_ char *dotgit = NULL;
	if (asprintf(&dotgit, "%s/.git", root) < 0)
		return -ENOMEM;
	struct stat st;
	if (lstat(dotgit, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode))
		return protect_gitdir(l, roots, dotgit, 0);
	if (!S_ISREG(st.st_mode))
		return 0;

	int r = protect_path(l, roots, dotgit, DSB_PROTECT_GIT, false, false);
	char line[DSB_PATH_MAX];
	if (r < 0 || read_line(root, ".git", line, sizeof(line)) < 0 ||
	    strncmp(line, "gitdir: ", 8) != 0)
		return r;
	_cleanup_free_ char *gitdir = NULL, *canon = NULL;
	bool exists = false;
	if (join(root, line + 8, &gitdir) < 0)
		return -ENOMEM;
	r = canonical_nearest(gitdir, &canon, &exists);
	if (r == -ENOMEM)
		return r;
	return exists ? protect_gitdir(l, roots, canon, 0) : 0;
}

/*
 * The repositories below the writable roots (repos_scan()), each protected as a root's own
 * .git is; @p keeps the list, so that one the call makes is known at its end. A root's own
 * .git is protect_git()'s.
 */
static int protect_nested_repos(plist *l, char *const *roots, dsb_exec_policy *p)
{
	_cleanup_strv_free_ char **markers = NULL;
	int r = repos_scan(roots, &markers, NULL);
	for (char **m = markers; r >= 0 && m && *m; m++) {
		size_t n = strlen(*m);
		if (n < 5 || strcmp(*m + n - 5, "/.git") != 0) {
			r = protect_gitdir(l, roots, *m, 0); /* a bare repository */
			continue;
		}
		_cleanup_free_ char *dir = strndup(*m, n - 5);
		if (!dir)
			return -ENOMEM;
		if (!strv_contains(roots, dir))
			r = protect_git(l, roots, dir);
	}
	if (r >= 0)
		p->repos = TAKE_PTR(markers);
	return r;
}

int policy_check_repos(const dsb_exec_policy *p, const char *path, strbuf *notes)
{
	if (!p->repos)
		return 0;
	/* Where the command could write: the roots, the session's /tmp (an agentless one's is
	 * gone with the call). */
	_cleanup_strv_free_ char **roots = NULL, **scope = NULL;
	if (dsb_policy_writable_roots(p, &roots, NULL) < 0)
		return -ENOMEM;
	int r = 0;
	for (char **root = roots; r >= 0 && *root; root++)
		if (strcmp(*root, "/tmp") != 0)
			r = strv_push(&scope, *root);
	if (r >= 0 && p->tmp_dir)
		r = strv_push(&scope, p->tmp_dir);
	if (r < 0)
		return r;
	return path ? repos_check_path(path, roots, scope, p->repos, notes)
		    : repos_check(roots, scope, p->repos, notes);
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* @s with every character glob(3) treats specially escaped, so that it matches only itself. */
static char *glob_escape(const char *s)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		if (strchr("*?[]\\", *s))
			*o++ = '\\';
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* sandbox-policy.protectedPaths below one writable root (its own name is no pattern). */
static int protect_listed(plist *l, char *const *roots, const char *root, char *const *patterns,
			  bool make_missing)
{
	int r = 0;
	for (char *const *pat = patterns; r >= 0 && pat && *pat; pat++) {
		_cleanup_free_ char *full = NULL;
		if (asprintf(&full, "%s/%s", root, *pat) < 0)
			return -ENOMEM;
		bool dir = full[strlen(full) - 1] == '/';
		if (!has_glob(*pat)) {
			r = protect_path(l, roots, full, DSB_PROTECT_LISTED, dir, make_missing);
			continue;
		}
		_cleanup_free_ char *escaped = glob_escape(root), *pattern = NULL;
		if (!escaped || asprintf(&pattern, "%s/%s", escaped, *pat) < 0)
			return -ENOMEM;
		glob_t g = {0};
		int k = glob(pattern, GLOB_NOSORT, NULL, &g);
		if (k == GLOB_NOSPACE)
			r = -ENOMEM;
		for (size_t i = 0; k == 0 && r >= 0 && i < g.gl_pathc; i++)
			r = protect_path(l, roots, g.gl_pathv[i], DSB_PROTECT_LISTED, dir, false);
		globfree(&g);
	}
	return r;
}

/*
 * protectDefaults: what other programs run, or read as configuration that runs programs, without
 * asking, when they start in or below a writable root that is someone's home (docs/design/paths.md
 * says why each is here). An existing one is kept read-only; a missing one must stay missing:
 * removed after the call, with what the command put in it, rather than made empty in every
 * project. A trailing "/" marks a directory.
 */
/* clang-format off */
static const char *const startup_files[] = {
	/* shells: bash, sh, zsh, readline */
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
	".zprofile", ".zlogin", ".zlogout", ".inputrc",
	/* git's own configuration: core.fsmonitor, core.pager, aliases with "!" */
	".gitconfig", ".config/git/",
	/* ssh: authorized_keys, config's ProxyCommand and LocalCommand */
	".ssh/",
	/* direnv runs .envrc on cd; npm reads script-shell and node-options from .npmrc */
	".envrc", ".npmrc",
	/* VS Code runs tasks with runOn: folderOpen; its settings name programs to run */
	".vscode/tasks.json", ".vscode/settings.json",
	/* agents' own MCP servers and settings (hooks): the next agent starts them */
	".mcp.json", ".claude/", ".codex/", ".cursor/",
};
/* clang-format on */

static int protect_startup(plist *l, char *const *roots, const char *root)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(startup_files); i++) {
		_cleanup_free_ char *name = strdup(startup_files[i]);
		if (!name)
			return -ENOMEM;
		size_t n = strlen(name);
		bool dir = name[n - 1] == '/';
		if (dir)
			name[n - 1] = '\0';
		if (child_exists(root, name))
			r = protect_child(l, roots, root, name, DSB_PROTECT_STARTUP, dir, false);
		else
			r = protect_absent_as(l, roots, root, name, DSB_PROTECT_STARTUP, dir);
	}
	return r;
}

/* sandbox-policy.denyRead: wherever it points, when it exists. */
static int protect_deny_read(plist *l, char *const *entries)
{
	const char *home = getenv("HOME");
	int r = 0;
	for (char *const *e = entries; r >= 0 && e && *e; e++) {
		_cleanup_free_ char *full = NULL;
		if ((*e)[0] == '~') {
			if (!home || home[0] != '/')
				continue;
			if (asprintf(&full, "%s%s", home, *e + 1) < 0)
				return -ENOMEM;
		} else if (!(full = strdup(*e)))
			return -ENOMEM;
		_cleanup_free_ char *canon = NULL;
		bool exists = false;
		r = canonical_nearest(full, &canon, &exists);
		if (r == -ENOMEM)
			return r;
		struct stat st;
		r = 0;
		if (!exists || stat(canon, &st) < 0 || strcmp(canon, "/") == 0)
			continue;
		r = plist_take(l, TAKE_PTR(canon), DSB_PROTECT_DENY_READ, S_ISDIR(st.st_mode),
			       true);
	}
	return r;
}

/*
 * A policy-bearing path reached through a symlink that lies inside a writable root: the bind
 * protects the target, but the command could point the link elsewhere (at a store of its own)
 * for the next call. Nothing can bind a symlink itself, so the call fails closed, naming it.
 * The caller walks only paths that resolve differently from their spelling.
 */
static int check_no_link_in_roots(const policy_source *s, const char *lexical, char *const *roots,
				  dsb_mode mode, dsb_error *reterr)
{
	_cleanup_free_ char *link = NULL;
	int r = path_link_within(lexical, roots, &link);
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "protected paths: out of memory");
	if (r == 0)
		return 0;
	char detail[2 * DSB_PATH_MAX + 200];
	(void)snprintf(detail, sizeof(detail),
		       "the %s %s leads through the symlink %s in a writable root, which a command "
		       "could repoint; give its real path",
		       dsb_protect_kind_to_string(s->kind), s->path, link);
	return policy_fail_unavailable(reterr, mode, detail);
}

int policy_protect_resolve(const dsb_policy *policy, dsb_exec_policy *p, dsb_error *reterr)
{
	_cleanup_(plist_done) plist l = {0};
	_cleanup_strv_free_ char **roots = NULL;
	int r = 0;

	/* Full access is unconfined: nothing is enforced, so nothing is listed. */
	if (p->mode == DSB_MODE_DANGER_FULL_ACCESS)
		return 0;
	if (dsb_policy_writable_roots(p, &roots, reterr) < 0)
		return -DSB_E_NO_MEMORY;

	for (size_t i = 0; r >= 0 && i < policy->n_sources; i++) {
		const policy_source *s = &policy->sources[i];
		bool dir = s->kind == DSB_PROTECT_STORE || s->kind == DSB_PROTECT_SPILL;
		_cleanup_free_ char *lexical = NULL, *canon = NULL;
		bool exists = false;
		r = path_lexical_resolve("/", s->path, &lexical);
		if (r >= 0)
			r = canonical_nearest(s->path, &canon, &exists);
		if (r == -ENOMEM)
			break;
		if (r < 0) {
			r = 0;
			continue;
		}
		/* Hidden wherever it lies, as denyRead is, once it exists. */
		if (s->kind == DSB_PROTECT_PRIVATE_TMP) {
			if (exists && strcmp(canon, "/") != 0)
				r = plist_take(&l, TAKE_PTR(canon), s->kind, true, true);
			continue;
		}
		/* Resolving differently from its spelling: a symlink on the way. */
		if (dsb_protect_kind_required(s->kind) && strcmp(lexical, canon) != 0) {
			r = check_no_link_in_roots(s, lexical, roots, p->mode, reterr);
			if (r < 0)
				return r;
		}
		if (s->kind == DSB_PROTECT_CONFIG) {
			struct stat st;
			dir = stat(s->path, &st) < 0 || S_ISDIR(st.st_mode);
		}
		r = protect_canonical(&l, roots, TAKE_PTR(canon), exists, s->kind, dir, true);
		/* A configuration file's directory too, unless it holds a writable root. */
		if (r >= 0 && s->kind == DSB_PROTECT_CONFIG && !dir) {
			_cleanup_free_ char *parent = NULL;
			r = join(s->path, "..", &parent);
			bool holds_root = false;
			for (char **root = roots; r >= 0 && *root; root++)
				holds_root |= path_is_under(*root, parent);
			if (r >= 0 && !holds_root)
				r = protect_path(&l, roots, parent, s->kind, true, false);
		}
	}
	if (policy->protect_git && p->mode == DSB_MODE_WORKSPACE_WRITE)
		r = protect_nested_repos(&l, roots, p);
	for (char **root = roots; r >= 0 && *root; root++) {
		bool workspace = strcmp(*root, p->workspace_root) == 0;
		if (policy->protect_git)
			r = protect_git(&l, roots, *root);
		if (r >= 0)
			r = protect_listed(&l, roots, *root, policy->protected_paths, workspace);
		/* Nobody starts a shell in the sandbox's /tmp. */
		if (r >= 0 && policy->protect_defaults && strcmp(*root, "/tmp") != 0)
			r = protect_startup(&l, roots, *root);
	}
	if (r >= 0)
		r = protect_deny_read(&l, policy->deny_read);
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "protected paths: out of memory");

	p->protected = TAKE_PTR(l.v);
	p->n_protected = l.n;
	l = (plist){0};
	return 0;
}

void policy_protected_free(dsb_protected *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].link);
	}
	free(v);
}

int dsb_exec_policy_protect(dsb_exec_policy *p, dsb_protect_kind kind, const char *path,
			    bool directory, dsb_error *reterr)
{
	if (!p || !path || path[0] != '/' || kind < 0 || kind >= _DSB_PROTECT_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_exec_policy_protect: invalid argument");
	plist l = {.v = p->protected, .n = p->n_protected, .cap = p->n_protected};
	char *copy = strdup(path);
	int r = copy ? plist_take(&l, copy, kind, directory, true) : -ENOMEM;
	p->protected = l.v;
	p->n_protected = l.n;
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "protected paths: out of memory");
	return 0;
}

const dsb_protected *dsb_exec_policy_protected_at(const dsb_exec_policy *p, const char *path,
						  bool write)
{
	for (size_t i = 0; p && path && i < p->n_protected; i++) {
		const dsb_protected *e = &p->protected[i];
		/*
		 * The session's own private /tmp is its /tmp: what holds it (the store, every
		 * session's STORE/.tmp) neither hides nor protects it from its fs tools.
		 */
		if (p->tmp_dir && path_is_under(path, p->tmp_dir) &&
		    path_is_under(p->tmp_dir, e->path))
			continue;
		if ((write || dsb_protect_kind_hides(e->kind)) && path_is_under(path, e->path))
			return e;
	}
	return NULL;
}
