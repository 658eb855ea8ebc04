/* SPDX-License-Identifier: MIT */
/*
 * No planted repository (docs/design/paths.md): git runs what a repository's hooks and config
 * name, unconfined, when the user later runs it there. The repositories below a writable root
 * are found before a call (repos_scan(), then protected as the root's own .git is), and any
 * the call made is disarmed after it (repos_disarm()): executable hooks made plain files, every
 * config key that is not known to be inert removed.
 */
#pragma once

#include "../core/core.h"

/* A repository's directory lies at most this many levels below its root... */
#define REPOS_DEPTH 4
/* ...and a scan reads at most this many directories in all, the workspace first. */
#define REPOS_DIRS_MAX 4096

/*
 * The repositories below @roots (canonical; "/tmp" is skipped: nobody runs git in the
 * sandbox's /tmp), each named by its marker: DIR/.git (a gitdir, or a gitfile naming one) or,
 * for a bare repository (HEAD, objects/ and refs/ in it), DIR itself, a root included. Never
 * through a symlink, nor into a gitdir, a bare repository or node_modules. *@ret_markers: a
 * sorted array (empty when there are none); *@ret_truncated when REPOS_DIRS_MAX stopped the
 * scan. 0 or -ENOMEM.
 */
int repos_scan(char *const *roots, char ***ret_markers, bool *ret_truncated);

/*
 * Disarms the repository of @marker, as repos_scan() names it, and what it leads to: the
 * gitdir of a gitfile and a gitdir's commondir, where those lie under one of @scope (the
 * places the command could write: the writable roots, the session's /tmp), unless named in
 * @known (the markers found before the call: protected during it). Its hooks lose their
 * execute bits (a symlinked hook or hooks directory is removed: git follows those), and its
 * config and config.worktree keep only inert keys (config_filter()). Appends one line
 * "[sandbox: ...]" to @notes (with a "\n" before it unless @notes is empty) when anything was
 * changed. 0 or -ENOMEM; what cannot be changed is said in the note.
 */
int repos_disarm(const char *marker, char *const *scope, char *const *known, strbuf *notes);

/*
 * After a call: every repository below @roots (repos_scan()) that is not in @known is disarmed
 * (repos_disarm(), with @scope), a line in @notes for each. 0 or -ENOMEM.
 */
int repos_check(char *const *roots, char *const *scope, char *const *known, strbuf *notes);

/*
 * After an fs write or edit of @path (canonical): the repository it lies in (a ".git" on its
 * way up to its root among @roots, or a bare repository), unless in @known, disarmed as
 * repos_check() does. 0 or -ENOMEM.
 */
int repos_check_path(const char *path, char *const *roots, char *const *scope, char *const *known,
		     strbuf *notes);

/*
 * Copies the git config text @in (@len bytes) to @out, keeping only comments, section headers
 * and the keys listed as inert (core's format and checkout keys, extensions, remotes' urls and
 * refspecs, branches' upstreams, submodules' urls and paths, user's name and email), one line
 * each. Every other key, a key continued over several lines, and any line git might read
 * differently are dropped; each dropped key's name (section.key, lower case, with no
 * subsection) is added once to @dropped. 0 or -ENOMEM.
 */
int config_filter(const char *in, size_t len, strbuf *out, char ***dropped);
