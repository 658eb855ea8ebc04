/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the confinement contract (dsh-compat §5.3-5.8, §11.4): the exact bwrap profile and
 * Landlock grants per mode, each backend's denial dialect and runner-failure rules, a configured
 * runner, and dsb_confined_spawn(): failures before exec come back out of band with DSH's
 * detail texts, and a command cannot fake one. These need bwrap and Landlock to select them;
 * the machine the project targets has both (a missing one fails the test, never skips it).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "src/exec/exec.h"
#include "src/policy/policy.h"
#include "helpers.h"

static char *joined(char *const *v)
{
	strbuf sb = STRBUF_INIT;
	for (size_t i = 0; v && v[i]; i++)
		assert_int_equal(strbuf_printf(&sb, i ? " %s" : "%s", v[i]), 0);
	return strbuf_take(&sb);
}

static void assert_strv(char *const *v, const char *expected)
{
	char *s = joined(v);
	if (strcmp(s, expected) != 0)
		fail_msg("got [%s], expected [%s]", s, expected);
	free(s);
}

static dsb_provider *provider_with(dsb_backend only, const char *runner)
{
	dsb_config *cfg = dsb_config_new();
	cfg->backends[0] = only;
	cfg->n_backends = 1;
	if (runner) {
		assert_int_equal(strv_push(&cfg->runner_command, runner), 0);
		assert_int_equal(
			strv_push(&cfg->runner_failure_signatures, "fake-runner: profile rejected"),
			0);
	}
	dsb_provider *p = NULL;
	assert_int_equal(dsb_provider_new(cfg, NULL, &p, NULL), 0);
	dsb_config_free(cfg);
	return p;
}

static char *const command[] = {(char *)"bash", (char *)"-c", (char *)"echo hi", NULL};

static void test_bwrap_profiles_exact(void **state)
{
	(void)state;
	char **v = NULL;
	assert_int_equal(bwrap_profile(DSB_MODE_READ_ONLY, "/ws", &v), 0);
	assert_strv(v, "--ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent");
	strv_free(v);
	v = NULL;
	assert_int_equal(bwrap_profile(DSB_MODE_WORKSPACE_WRITE, "/ws", &v), 0);
	assert_strv(v, "--ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent "
		       "--tmpfs /tmp --bind /ws /ws");
	strv_free(v);
}

static void test_bwrap_dialect(void **state)
{
	(void)state;
	dsb_provider *p = provider_with(DSB_BACKEND_BWRAP, NULL);
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = (char *)"/ws"};
	dsb_confined c = {0};
	assert_int_equal(dsb_provider_confine(p, &pol, command, &c, NULL), 0);
	/* The trusted bwrap, by its absolute path, then DSH's profile, then ours. */
	char bwrap[4096], why[512], expected[8192];
	assert_int_equal(bwrap_find(bwrap, sizeof(bwrap), why, sizeof(why)), 0);
	assert_true(bwrap[0] == '/');
	(void)snprintf(expected, sizeof(expected),
		       "%s --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent "
		       "--tmpfs /tmp --bind /ws /ws --ro-bind /proc/sys /proc/sys --unshare-user "
		       "--unshare-ipc --unshare-uts "
		       "--cap-drop ALL --seccomp 3 -- bash -c echo hi",
		       bwrap);
	assert_strv(c.argv, expected);
	assert_int_equal(confined_plan(&c)->filter_fd, 3);
	assert_true(confined_plan(&c)->contained);
	assert_int_equal(confined_plan(&c)->steps & STEPS_SELF, 0); /* bwrap hardens it */
	assert_int_equal(c.enforcement, DSB_ENFORCEMENT_FULL);
	assert_strv(c.denial_signatures, "read-only file system");
	assert_int_equal(c.n_rules, 1);
	assert_strv(c.rules[0].fatal_signatures, "bwrap: ");
	assert_null(c.rules[0].allowed_exit_codes);
	assert_false(c.landlock);
	assert_string_equal(c.backend, "bwrap");
	dsb_confined_done(&c);
	dsb_provider_free(p);
}

/* sandbox-local.evidence: true hands the file calls to the supervisor; false (the default)
 * does not. */
static void test_landlock_evidence(void **state)
{
	(void)state;
	dsb_config *cfg = dsb_config_new();
	cfg->backends[0] = DSB_BACKEND_LANDLOCK;
	cfg->n_backends = 1;
	assert_false(cfg->evidence);
	cfg->evidence = true;
	dsb_provider *p = NULL;
	assert_int_equal(dsb_provider_new(cfg, NULL, &p, NULL), 0);
	dsb_config_free(cfg);
	dsb_exec_policy ww = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = (char *)"/ws"};
	dsb_confined c = {0};
	assert_int_equal(dsb_provider_confine(p, &ww, command, &c, NULL), 0);
	assert_int_equal(confined_plan(&c)->filter_flags,
			 LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY | SECCOMP_FILES_NOTIFY);
	dsb_confined_done(&c);
	dsb_provider_free(p);
}

static void test_landlock_grants_per_mode(void **state)
{
	(void)state;
	dsb_provider *p = provider_with(DSB_BACKEND_LANDLOCK, NULL);
	dsb_exec_policy ro = {.mode = DSB_MODE_READ_ONLY, .workspace_root = (char *)"/ws"};
	dsb_exec_policy ww = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = (char *)"/ws"};
	dsb_confined c = {0};

	assert_int_equal(dsb_provider_confine(p, &ro, command, &c, NULL), 0);
	assert_true(c.landlock);
	const landlock_plan *plan = &confined_plan(&c)->landlock;
	assert_int_equal(confined_plan(&c)->steps & STEPS_SELF, STEPS_SELF);
	/* Metadata calls go to the supervisor, which has no root in read-only. */
	assert_int_equal(confined_plan(&c)->filter_flags,
			 LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY);
	assert_null(confined_plan(&c)->meta_roots);
	assert_false(confined_plan(&c)->contained);
	assert_strv(plan->ro, "/");
	assert_strv(plan->rw, "/dev/null");
	assert_strv(c.argv, "bash -c echo hi"); /* in-process: no launcher exec */
	assert_strv(c.denial_signatures, "permission denied");
	assert_int_equal(c.n_rules, 0); /* failures come back out of band */
	assert_int_equal(plan->scope, LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET);
	dsb_confined_done(&c);

	assert_int_equal(dsb_provider_confine(p, &ww, command, &c, NULL), 0);
	plan = &confined_plan(&c)->landlock;
	assert_strv(plan->ro, "/");
	assert_strv(plan->rw, "/dev/null /tmp /ws");
	/* Where the supervisor lets a change land: the grants but /dev/null, as they resolve
	 * (/ws does not exist here, so it is no root). */
	assert_strv(confined_plan(&c)->meta_roots, "/tmp");
	dsb_confined_done(&c);
	dsb_provider_free(p);
}

static void test_custom_runner_skips_the_chain(void **state)
{
	(void)state;
	/* A trusted runner (root's /usr/bin/env stands in), run by its canonical path. */
	char env[4096], why[512];
	assert_int_equal(trusted_program("env", env, sizeof(env), why, sizeof(why)), 0);
	dsb_provider *p = provider_with(DSB_BACKEND_BWRAP, "env");
	dsb_exec_policy ro = {.mode = DSB_MODE_READ_ONLY, .workspace_root = (char *)"/ws"};
	dsb_confined c = {0};
	assert_int_equal(dsb_provider_confine(p, &ro, command, &c, NULL), 0);
	char expected[8192];
	(void)snprintf(
		expected, sizeof(expected),
		"%s --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent -- "
		"bash -c echo hi",
		env);
	assert_strv(c.argv, expected);
	assert_int_equal(c.enforcement, DSB_ENFORCEMENT_FULL);
	assert_strv(c.denial_signatures, "read-only file system permission denied");
	assert_int_equal(c.n_rules, 1);
	assert_strv(c.rules[0].fatal_signatures, "fake-runner: profile rejected");
	dsb_probe_report rep;
	assert_int_equal(dsb_provider_probe(p, false, &rep, NULL), 0);
	assert_true(rep.custom_runner);
	dsb_confined_done(&c);
	dsb_provider_free(p);
}

/* A runner nobody can find reads as DSH's spawn failure; one a command could replace is refused. */
static void test_custom_runner_must_be_trusted(void **state)
{
	(void)state;
	dsb_exec_policy ro = {.mode = DSB_MODE_READ_ONLY, .workspace_root = (char *)"/usr"};
	dsb_confined c = {0};
	dsb_error err;
	dsb_provider *p = provider_with(DSB_BACKEND_BWRAP, "dsb-no-such-runner");
	assert_int_equal(dsb_provider_confine(p, &ro, command, &c, &err),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(
		strstr(err.message, " Runner failure: Error: spawn dsb-no-such-runner ENOENT"));
	dsb_provider_free(p);

	/* In the workspace (here /usr): a previous call could have written it. */
	p = provider_with(DSB_BACKEND_BWRAP, "env");
	assert_int_equal(dsb_provider_confine(p, &ro, command, &c, &err),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "lies in the workspace"));
	dsb_provider_free(p);

	/* In a temp dir, and by a relative name: never. */
	p = provider_with(DSB_BACKEND_BWRAP, "/tmp/dsb-runner-in-tmp");
	FILE *f = fopen("/tmp/dsb-runner-in-tmp", "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod("/tmp/dsb-runner-in-tmp", 0755), 0);
	ro.workspace_root = (char *)"/ws";
	assert_int_equal(dsb_provider_confine(p, &ro, command, &c, &err),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "lies in a temporary directory"));
	(void)unlink("/tmp/dsb-runner-in-tmp");
	dsb_provider_free(p);
	p = provider_with(DSB_BACKEND_BWRAP, "./runner");
	assert_int_equal(dsb_provider_confine(p, &ro, command, &c, &err),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "is not an absolute path"));
	dsb_provider_free(p);
}

static void test_full_access_is_never_confined(void **state)
{
	(void)state;
	dsb_provider *p = provider_with(DSB_BACKEND_BWRAP, NULL);
	dsb_exec_policy full = {.mode = DSB_MODE_DANGER_FULL_ACCESS, .workspace_root = (char *)"/"};
	dsb_confined c = {0};
	assert_int_equal(dsb_provider_confine(p, &full, command, &c, NULL), -DSB_E_INVALID_ARGS);
	dsb_provider_free(p);
}

/* Runs @c with stdout and stderr into one pipe; returns the exit status, output in @out. */
static int spawn_capture(const dsb_confined *c, char *out, size_t size, dsb_error *err)
{
	int fds[2];
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	dsb_spawn_options o = DSB_SPAWN_OPTIONS_INIT;
	o.stdout_fd = o.stderr_fd = fds[1];
	pid_t pid;
	int r = dsb_confined_spawn(c, DSB_MODE_WORKSPACE_WRITE, &o, &pid, err);
	close(fds[1]);
	if (r < 0) {
		close(fds[0]);
		return r;
	}
	ssize_t n = read(fds[0], out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	int status;
	assert_int_equal(spawn_wait(pid, 10000, &status), 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_spawn_failures_come_back_out_of_band(void **state)
{
	(void)state;
	char out[512];
	dsb_error err = {0};

	/* A runner that cannot start: Node's spawn error text, as DSH reports it. */
	char *missing[] = {(char *)"dsb-no-such-runner", NULL};
	dsb_confined c = {.argv = missing, .backend = (char *)"runner"};
	assert_int_equal(spawn_capture(&c, out, sizeof(out), &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "Runner failure: Error: spawn dsb-no-such-runner "
					    "ENOENT"));

	/* In-process Landlock: the launcher's own lines. */
	char *ro[] = {(char *)"/", NULL}, *rw[] = {(char *)"/no/such/grant/root", NULL};
	confine_plan plan = {
		.steps = STEP(STEP_LANDLOCK), .landlock = {.ro = ro, .rw = rw}, .filter_fd = -1};
	char *touch[] = {(char *)"touch", (char *)"/tmp/dsb-never-created", NULL};
	dsb_confined ll = {
		.argv = touch, .landlock = true, .backend = (char *)"landlock", .plan = &plan};
	assert_int_equal(spawn_capture(&ll, out, sizeof(out), &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "Runner failure: landlock-run: cannot open rule path: "
					    "/no/such/grant/root: No such file or directory"));
	assert_int_equal(access("/tmp/dsb-never-created", F_OK), -1);

	char *rw_ok[] = {(char *)"/dev/null", NULL};
	plan.landlock.rw = rw_ok;
	assert_int_equal(spawn_capture(&(dsb_confined){.argv = missing,
						       .landlock = true,
						       .backend = (char *)"landlock",
						       .plan = &plan},
				       out, sizeof(out), &err),
			 -DSB_E_EXEC_FAILED);
	/* Every restriction was in place: the command's exec failed, not the sandbox (126/127). */
	/* Node's error message: the "Error: " is the renderer's, never doubled. */
	assert_string_equal(err.message, "spawn dsb-no-such-runner ENOENT");
	assert_string_equal(err.subject, "dsb-no-such-runner");
	assert_int_equal(err.sys_errno, ENOENT);
	char *dir[] = {(char *)"/", NULL};
	assert_int_equal(spawn_capture(&(dsb_confined){.argv = dir,
						       .landlock = true,
						       .backend = (char *)"landlock",
						       .plan = &plan},
				       out, sizeof(out), &err),
			 -DSB_E_EXEC_FAILED);
	assert_int_equal(err.sys_errno, EACCES);
}

/* A working directory that vanished before the spawn: the errno text once, not twice. */
static void test_spawn_bad_cwd_names_errno_once(void **state)
{
	(void)state;
	char *argv[] = {(char *)"true", NULL};
	dsb_confined c = {.argv = argv};
	dsb_spawn_options o = DSB_SPAWN_OPTIONS_INIT;
	o.cwd = "/no/such/dsb-dir";
	dsb_error err = {0};
	pid_t pid;
	assert_int_equal(dsb_confined_spawn(&c, DSB_MODE_DANGER_FULL_ACCESS, &o, &pid, &err),
			 -DSB_E_IO);
	assert_string_equal(err.message, "cannot change directory to '/no/such/dsb-dir': No such "
					 "file or directory");
	assert_int_equal(err.sys_errno, ENOENT);
}

static void test_bwrap_exec_errno(void **state)
{
	(void)state;
	static const char nf[] = "bwrap: execvp nosuch: No such file or directory\n";
	assert_int_equal(bwrap_exec_errno(1, nf, strlen(nf), "nosuch"), ENOENT);
	static const char acc[] = "bwrap: execvp /etc: Permission denied\n";
	assert_int_equal(bwrap_exec_errno(1, acc, strlen(acc), "/etc"), EACCES);
	/* Only bwrap's status, only its whole stderr, only the command's own name. */
	assert_int_equal(bwrap_exec_errno(2, nf, strlen(nf), "nosuch"), 0);
	assert_int_equal(bwrap_exec_errno(1, nf, strlen(nf), "other"), 0);
	assert_int_equal(bwrap_exec_errno(1, nf, strlen(nf), "nosuc"), 0);
	static const char more[] = "bwrap: execvp nosuch: No such file or directory\nmore\n";
	assert_int_equal(bwrap_exec_errno(1, more, strlen(more), "nosuch"), 0);
	static const char setup[] = "bwrap: Can't mount proc on /newroot/proc: Operation not "
				    "permitted\n";
	assert_int_equal(bwrap_exec_errno(1, setup, strlen(setup), "nosuch"), 0);
	static const char odd[] = "bwrap: execvp nosuch: Not a real error text\n";
	assert_int_equal(bwrap_exec_errno(1, odd, strlen(odd), "nosuch"), 0);
	assert_int_equal(bwrap_exec_errno(1, NULL, 0, "nosuch"), 0);
}

static void test_a_command_cannot_fake_a_runner_failure(void **state)
{
	(void)state;
	char *ro[] = {(char *)"/", NULL}, *rw[] = {(char *)"/dev/null", NULL};
	confine_plan plan = {
		.steps = STEPS_SELF, .landlock = {.ro = ro, .rw = rw}, .filter_fd = -1};
	char *liar[] = {(char *)"sh", (char *)"-c",
			(char *)"echo 'landlock-run: landlock is not enforced by this kernel' >&2; "
				"exit 125",
			NULL};
	dsb_confined c = {.argv = liar, .landlock = true, .plan = &plan};
	char out[512];
	dsb_error err = {0};
	/* The spawn succeeded: whatever the command says is only its own output. */
	c.backend = (char *)"landlock";
	assert_int_equal(spawn_capture(&c, out, sizeof(out), &err), 125);
	assert_non_null(strstr(out, "landlock-run: landlock is not enforced"));
}

/* A fake bwrap in a fresh directory of mode @dir_mode, first on PATH before @rest. */
static void with_fake_bwrap(mode_t dir_mode, const char *rest, bool expect_fake)
{
	char dir[] = "/var/tmp/dsb-fake-bwrap.XXXXXX", fake[128], found[4096], why[512];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, dir_mode), 0);
	(void)snprintf(fake, sizeof(fake), "%s/bwrap", dir);
	FILE *f = fopen(fake, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	assert_int_equal(chmod(fake, 0755), 0);

	char *old = strdup(getenv("PATH"));
	char path[4096];
	(void)snprintf(path, sizeof(path), "%s:%s", dir, rest);
	setenv("PATH", path, 1);
	int r = bwrap_find(found, sizeof(found), why, sizeof(why));
	setenv("PATH", old, 1);
	free(old);
	if (expect_fake) {
		assert_int_equal(r, 0);
		assert_string_equal(found, fake);
	} else if (r == 0) {
		assert_string_not_equal(found, fake);
	}
	(void)unlink(fake);
	(void)rmdir(dir);
}

static void test_bwrap_is_found_only_where_it_can_be_trusted(void **state)
{
	(void)state;
	/* The control: a private directory first on PATH is taken. */
	with_fake_bwrap(0755, "/usr/bin:/bin", true);
	/* Group- or world-writable: someone else could have put it there. */
	with_fake_bwrap(0777, "/usr/bin:/bin", false);
	with_fake_bwrap(0775, "/usr/bin:/bin", false);

	/* Empty and relative entries name the current directory: never searched. */
	char cwd[4096], dir[] = "/var/tmp/dsb-cwd.XXXXXX", found[4096], why[512], fake[128];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chdir(dir), 0);
	FILE *f = fopen("bwrap", "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	assert_int_equal(chmod("bwrap", 0755), 0);
	(void)snprintf(fake, sizeof(fake), "%s/bwrap", dir);
	static const char *const paths[] = {":/usr/bin", ".:/usr/bin", "./:/usr/bin", "/usr/bin::"};
	char *old = strdup(getenv("PATH"));
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		setenv("PATH", paths[i], 1);
		if (bwrap_find(found, sizeof(found), why, sizeof(why)) == 0)
			assert_string_not_equal(found, fake);
	}
	setenv("PATH", old, 1);
	free(old);
	(void)unlink("bwrap");
	assert_int_equal(chdir(cwd), 0);
	(void)rmdir(dir);
}

static void test_bwrap_in_the_workspace_is_refused(void **state)
{
	(void)state;
	dsb_provider *p = provider_with(DSB_BACKEND_BWRAP, NULL);
	/* bwrap lives under /usr: a workspace there could have replaced it. */
	dsb_exec_policy pol = {.mode = DSB_MODE_READ_ONLY, .workspace_root = (char *)"/usr"};
	dsb_confined c = {0};
	dsb_error err;
	assert_int_equal(dsb_provider_confine(p, &pol, command, &c, &err),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "lies in the workspace"));
	dsb_provider_free(p);
}

static void test_spawn_wait_times_out_and_reaps(void **state)
{
	(void)state;
	char *sleeper[] = {(char *)"sleep", (char *)"10", NULL};
	dsb_confined c = {.argv = sleeper};
	pid_t pid;
	assert_int_equal(dsb_confined_spawn(&c, DSB_MODE_READ_ONLY, NULL, &pid, NULL), 0);
	int status;
	assert_int_equal(spawn_wait(pid, 200, &status), -ETIMEDOUT);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(kill(pid, 0), -1); /* reaped: the pid is gone */
}

/* --- protected paths as mounts (src/confine/protect.c) ---------------------------------------- */

#define P(p_, k_, dir_)                                                              \
	{                                                                            \
		.path = (char *)(p_), .kind = DSB_PROTECT_##k_, .directory = (dir_), \
		.exists = true                                                       \
	}

/* The ops as "OP:PATH" words, in order. */
static char *ops_string(const protect_ops *o)
{
	static const char *const names[] = {
		[PROTECT_PIN] = "pin",
		[PROTECT_READ_ONLY] = "ro",
		[PROTECT_HIDE_DIR] = "hide-dir",
		[PROTECT_HIDE_FILE] = "hide-file",
	};
	strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < o->n; i++)
		assert_int_equal(strbuf_printf(&sb, "%s%s:%s", i ? " " : "", names[o->v[i].op],
					       o->v[i].path),
				 0);
	char *s = strbuf_take(&sb);
	return s ? s : strdup("");
}

static void assert_ops(const protect_ops *o, const char *expected)
{
	char *s = ops_string(o);
	if (strcmp(s, expected) != 0)
		fail_msg("got [%s], expected [%s]", s, expected);
	free(s);
}

static const protect_mount *op_at(const protect_ops *o, const char *path)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].path, path) == 0)
			return &o->v[i];
	return NULL;
}

static void test_protect_ops_build(void **state)
{
	(void)state;
	dsb_protected list[] = {
		P("/ws/.git/hooks", GIT, true),
		P("/ws/.git/config", GIT, false),
		P("/ws/a/b/c", LISTED, false),
		P("/ws/a", LISTED, true), /* also pinned for a/b/c: read-only wins */
		P("/ws/.envrc", LISTED, false),
		P("/outside/x", GIT, false), /* outside every visible root: read-only already */
		P("/home/u/.ssh", DENY_READ, true), /* outside too, but hidden all the same */
		P("/home/u/.netrc", DENY_READ, false),
		P("/tmp/secret", DENY_READ, true), /* under an unseen root: never shown */
		P("/ws/.git/info", GIT, true),
		P("/ws/store", STORE, true),
	};
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE,
			       .workspace_root = (char *)"/ws",
			       .protected = list,
			       .n_protected = ELEMENTSOF(list)};
	char *visible[] = {(char *)"/ws", NULL}, *unseen[] = {(char *)"/tmp", NULL};
	protect_ops o = {0};

	assert_int_equal(protect_ops_build(&pol, visible, unseen, &o), 0);
	/* Pins first, then the rest; parents first in each group. */
	assert_ops(&o, "pin:/ws/.git pin:/ws/a/b "
		       "hide-file:/home/u/.netrc hide-dir:/home/u/.ssh ro:/ws/.envrc "
		       "ro:/ws/.git/config ro:/ws/.git/hooks ro:/ws/.git/info ro:/ws/a "
		       "ro:/ws/a/b/c ro:/ws/store");
	const protect_mount *a = op_at(&o, "/ws/a");
	assert_non_null(a);
	assert_int_equal(a->kind, DSB_PROTECT_LISTED);
	assert_int_equal(op_at(&o, "/ws/store")->kind, DSB_PROTECT_STORE);
	assert_int_equal(op_at(&o, "/home/u/.ssh")->kind, DSB_PROTECT_DENY_READ);
	assert_true(protect_ops_required(&o));

	char why[512] = "";
	assert_int_equal(protect_refuse(&o, "it cannot be bound", why, sizeof(why)), -EPERM);
	assert_string_equal(why, "the store /ws/store lies in a writable root and it cannot be "
				 "bound; move the store out of the writable roots (--store or "
				 "DSH_SANDBOX_STORE)");

	/* bwrap's arguments for them, in the same order. */
	char **argv = NULL;
	assert_int_equal(strv_push(&argv, "bwrap"), 0);
	assert_int_equal(protect_bwrap_args(&o, &argv), 0);
	assert_strv(argv,
		    "bwrap --bind /ws/.git /ws/.git --bind /ws/a/b /ws/a/b "
		    "--ro-bind /dev/null /home/u/.netrc "
		    "--perms 0000 --tmpfs /home/u/.ssh --remount-ro /home/u/.ssh "
		    "--ro-bind /ws/.envrc /ws/.envrc --ro-bind /ws/.git/config /ws/.git/config "
		    "--ro-bind /ws/.git/hooks /ws/.git/hooks --ro-bind /ws/.git/info "
		    "/ws/.git/info --ro-bind /ws/a /ws/a --ro-bind /ws/a/b/c /ws/a/b/c "
		    "--ro-bind /ws/store /ws/store");
	strv_free(argv);
	protect_ops_done(&o);
	assert_null(o.v);
	assert_int_equal(o.n, 0);

	/* The other way round: a read-only path listed first is not turned into a pin. */
	dsb_protected reversed[] = {P("/ws/a", LISTED, true), P("/ws/a/b/c", GIT, false)};
	pol.protected = reversed;
	pol.n_protected = ELEMENTSOF(reversed);
	assert_int_equal(protect_ops_build(&pol, visible, unseen, &o), 0);
	assert_ops(&o, "pin:/ws/a/b ro:/ws/a ro:/ws/a/b/c");
	assert_int_equal(op_at(&o, "/ws/a")->kind, DSB_PROTECT_LISTED);
	assert_false(protect_ops_required(&o));
	assert_int_equal(protect_refuse(&o, "x", why, sizeof(why)), 0);
	protect_ops_done(&o);

	/* Read-only (no visible root): only what is hidden. Without unseen roots, /tmp too. */
	pol.protected = list;
	pol.n_protected = ELEMENTSOF(list);
	pol.mode = DSB_MODE_READ_ONLY;
	assert_int_equal(protect_ops_build(&pol, NULL, NULL, &o), 0);
	assert_ops(&o, "hide-file:/home/u/.netrc hide-dir:/home/u/.ssh hide-dir:/tmp/secret");
	assert_false(protect_ops_required(&o));
	protect_ops_done(&o);

	/* Nothing protected, nothing to mount. */
	pol.n_protected = 0;
	assert_int_equal(protect_ops_build(&pol, visible, unseen, &o), 0);
	assert_int_equal(o.n, 0);
	argv = NULL;
	assert_int_equal(protect_bwrap_args(&o, &argv), 0);
	assert_null(argv);
	protect_ops_done(&o);
	protect_ops_done(NULL);
}

/* A hidden path that is a writable root itself (denyRead: [/tmp]) needs no pin below it. */
static void test_protect_ops_hide_a_whole_root(void **state)
{
	(void)state;
	dsb_protected list[] = {P("/tmp", DENY_READ, true), P("/ws", DENY_READ, true),
				P("/ws/.git/hooks", GIT, true)};
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE,
			       .workspace_root = (char *)"/ws",
			       .protected = list,
			       .n_protected = ELEMENTSOF(list)};
	char *roots[] = {(char *)"/ws", (char *)"/tmp", NULL};
	protect_ops o = {0};
	assert_int_equal(protect_ops_build(&pol, roots, NULL, &o), 0);
	/* What lies below a hidden directory is out of reach: no mount of its own. */
	assert_ops(&o, "hide-dir:/tmp hide-dir:/ws");
	protect_ops_done(&o);

	/* "/" as a root: the pins start right below it. */
	char *slash[] = {(char *)"/", NULL};
	dsb_protected top[] = {P("/", DENY_READ, true), P("/a/b", LISTED, false)};
	pol.workspace_root = (char *)"/";
	pol.protected = top;
	pol.n_protected = ELEMENTSOF(top);
	assert_int_equal(protect_ops_build(&pol, slash, NULL, &o), 0);
	assert_ops(&o, "hide-dir:/");
	protect_ops_done(&o);
}

/* A workspace inside another writable root (Landlock's /tmp) is pinned too: not swappable. */
static void test_protect_ops_pin_the_nested_workspace(void **state)
{
	(void)state;
	dsb_protected list[] = {P("/tmp/x/ws/.git/hooks", GIT, true),
				P("/tmp/y/secret", LISTED, false)};
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE,
			       .workspace_root = (char *)"/tmp/x/ws",
			       .protected = list,
			       .n_protected = ELEMENTSOF(list)};
	char *roots[] = {(char *)"/tmp/x/ws", (char *)"/tmp", NULL};
	protect_ops o = {0};
	assert_int_equal(protect_ops_build(&pol, roots, NULL, &o), 0);
	assert_ops(&o, "pin:/tmp/x pin:/tmp/x/ws pin:/tmp/x/ws/.git pin:/tmp/y "
		       "ro:/tmp/x/ws/.git/hooks ro:/tmp/y/secret");
	protect_ops_done(&o);

	/* With nothing protected, the workspace is still pinned (it could be swapped). */
	pol.n_protected = 0;
	assert_int_equal(protect_ops_build(&pol, roots, NULL, &o), 0);
	assert_ops(&o, "pin:/tmp/x pin:/tmp/x/ws");
	protect_ops_done(&o);

	/* A workspace that is its own root only (bwrap's view) has nothing to pin. */
	char *ws_only[] = {(char *)"/tmp/x/ws", NULL};
	assert_int_equal(protect_ops_build(&pol, ws_only, NULL, &o), 0);
	assert_int_equal(o.n, 0);
	protect_ops_done(&o);
}

static void test_protect_bwrap_args_by_op(void **state)
{
	(void)state;
	protect_mount v[] = {
		{.op = PROTECT_PIN, .path = strdup("/w/p")},
		{.op = PROTECT_READ_ONLY, .path = strdup("/w/p/r")},
		{.op = PROTECT_HIDE_FILE, .path = strdup("/h/f")},
		{.op = PROTECT_HIDE_DIR, .path = strdup("/h/d")},
	};
	protect_ops o = {.v = malloc(sizeof(v)), .n = ELEMENTSOF(v)};
	assert_non_null(o.v);
	memcpy(o.v, v, sizeof(v));
	char **argv = NULL;
	assert_int_equal(protect_bwrap_args(&o, &argv), 0);
	assert_strv(argv, "--bind /w/p /w/p --ro-bind /w/p/r /w/p/r --ro-bind /dev/null /h/f "
			  "--perms 0000 --tmpfs /h/d --remount-ro /h/d");
	strv_free(argv);
	protect_ops_done(&o);
}

typedef struct mtree {
	char *dir, *real, *ws, *outside;
} mtree;

static char *path_in(const char *a, const char *b)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", a, b) > 0);
	return p;
}

static int setup_mtree(void **state)
{
	mtree *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->dir = dsb_test_mkdtemp();
	t->real = realpath(t->dir, NULL);
	assert_non_null(t->real);
	t->ws = path_in(t->real, "ws");
	t->outside = path_in(t->real, "outside");
	assert_int_equal(mkdir(t->ws, 0755), 0);
	assert_int_equal(mkdir(t->outside, 0755), 0);
	*state = t;
	return 0;
}

static int teardown_mtree(void **state)
{
	mtree *t = *state;
	dsb_test_rm_rf(t->dir);
	free(t->dir);
	free(t->real);
	free(t->ws);
	free(t->outside);
	free(t);
	return 0;
}

/* lstat(@base/@rel): its type and permission bits, or 0 when missing. */
static mode_t mode_of(const char *base, const char *rel)
{
	char *p = path_in(base, rel);
	struct stat st;
	mode_t m = lstat(p, &st) == 0 ? st.st_mode & (S_IFMT | 07777) : 0;
	free(p);
	return m;
}

/* Missing protected paths are made, empty, beneath their root; nothing else is touched. */
static void test_protect_make_missing(void **state)
{
	mtree *t = *state;
	char *hooks = path_in(t->ws, ".git/hooks");
	char *envrc = path_in(t->ws, ".envrc");
	char *store = path_in(t->ws, "state/store");
	char *spill = path_in(t->ws, "spill");
	char *present = path_in(t->ws, "present");
	char *out = path_in(t->outside, "x");
	dsb_protected list[] = {
		{.path = hooks, .kind = DSB_PROTECT_GIT, .directory = true},
		{.path = envrc, .kind = DSB_PROTECT_LISTED},
		{.path = store, .kind = DSB_PROTECT_STORE, .directory = true},
		{.path = spill, .kind = DSB_PROTECT_SPILL, .directory = true},
		/* Listed as existing: left alone even though it is gone now. */
		{.path = present, .kind = DSB_PROTECT_LISTED, .exists = true},
		/* Outside every root given: not made. */
		{.path = out, .kind = DSB_PROTECT_STORE, .directory = true},
	};
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE,
			       .workspace_root = t->ws,
			       .protected = list,
			       .n_protected = ELEMENTSOF(list)};
	char *roots[] = {t->ws, NULL};
	char why[512] = "";
	mode_t mask = umask(022);

	assert_int_equal(protect_make_missing(&pol, roots, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(mode_of(t->ws, ".git"), S_IFDIR | 0755);
	assert_int_equal(mode_of(t->ws, ".git/hooks"), S_IFDIR | 0755);
	assert_int_equal(mode_of(t->ws, ".envrc"), S_IFREG | 0644);
	assert_int_equal(mode_of(t->ws, "state"), S_IFDIR | 0755);
	assert_int_equal(mode_of(t->ws, "state/store"), S_IFDIR | 0700);
	assert_int_equal(mode_of(t->ws, "spill"), S_IFDIR | 0700);
	assert_int_equal(mode_of(t->ws, "present"), 0);
	assert_int_equal(mode_of(t->outside, "x"), 0);
	size_t len = 1;
	char *text = dsb_test_read_file(envrc, &len);
	assert_non_null(text);
	assert_int_equal(len, 0);
	free(text);

	/* A root listed as missing is nothing to make. */
	dsb_protected root_itself[] = {
		{.path = t->ws, .kind = DSB_PROTECT_STORE, .directory = true}};
	dsb_exec_policy just_root = {.mode = DSB_MODE_WORKSPACE_WRITE,
				     .workspace_root = t->ws,
				     .protected = root_itself,
				     .n_protected = 1};
	assert_int_equal(protect_make_missing(&just_root, roots, why, sizeof(why)), 0);
	assert_int_equal(mode_of(t->real, "ws"), S_IFDIR | 0755);

	/* What exists now is left as it is: a second run changes nothing. */
	dsb_test_write_file(envrc, "kept", 4);
	assert_int_equal(protect_make_missing(&pol, roots, why, sizeof(why)), 0);
	text = dsb_test_read_file(envrc, &len);
	assert_string_equal(text, "kept");
	free(text);

	umask(mask);
	free(hooks);
	free(envrc);
	free(store);
	free(spill);
	free(present);
	free(out);
}

/*
 * A symlink planted on the way (ws/a -> outside) does not lead the unconfined step out of the
 * root: nothing is made outside, and a required kind fails closed.
 */
static void test_protect_make_missing_follows_no_symlink(void **state)
{
	mtree *t = *state;
	char *a = path_in(t->ws, "a");
	char *f = path_in(t->ws, "f.json");
	char *dangling = path_in(t->outside, "f.json");
	assert_int_equal(symlink(t->outside, a), 0);
	assert_int_equal(symlink(dangling, f), 0);
	char *listed = path_in(t->ws, "a/b");
	char *deep = path_in(t->ws, "a/c/d");
	char *store = path_in(t->ws, "a/store");
	char *roots[] = {t->ws, NULL};
	char why[512] = "";

	dsb_protected best_effort[] = {
		{.path = listed, .kind = DSB_PROTECT_LISTED},
		{.path = deep, .kind = DSB_PROTECT_GIT, .directory = true},
		{.path = f, .kind = DSB_PROTECT_LISTED},
	};
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE,
			       .workspace_root = t->ws,
			       .protected = best_effort,
			       .n_protected = ELEMENTSOF(best_effort)};
	/* Not required: skipped, and nothing appears outside. */
	assert_int_equal(protect_make_missing(&pol, roots, why, sizeof(why)), 0);
	assert_int_equal(mode_of(t->outside, "b"), 0);
	assert_int_equal(mode_of(t->outside, "c"), 0);
	assert_int_equal(mode_of(t->outside, "f.json"), 0);
	assert_int_equal(mode_of(t->ws, "a") & S_IFMT, S_IFLNK);
	assert_int_equal(mode_of(t->ws, "f.json") & S_IFMT, S_IFLNK);

	/* A store behind the link: refused with the reason, still nothing outside. */
	dsb_protected required[] = {{.path = store, .kind = DSB_PROTECT_STORE, .directory = true}};
	pol.protected = required;
	pol.n_protected = 1;
	assert_int_equal(protect_make_missing(&pol, roots, why, sizeof(why)), -EPERM);
	char *expected = NULL;
	assert_true(asprintf(&expected, "cannot make the protected store %s: ", store) > 0);
	if (strncmp(why, expected, strlen(expected)) != 0)
		fail_msg("got [%s], expected [%s...]", why, expected);
	free(expected);
	assert_int_equal(mode_of(t->outside, "store"), 0);

	/* A root reached through a symlink is refused as a whole. */
	char *ws_link = path_in(t->real, "ws-link");
	char *via_link = path_in(ws_link, "spill");
	assert_int_equal(symlink(t->ws, ws_link), 0);
	char *link_roots[] = {ws_link, NULL};
	dsb_protected spill[] = {{.path = via_link, .kind = DSB_PROTECT_SPILL, .directory = true}};
	pol.protected = spill;
	assert_int_equal(protect_make_missing(&pol, link_roots, why, sizeof(why)), -EPERM);
	assert_int_equal(mode_of(t->ws, "spill"), 0);

	free(via_link);
	free(ws_link);
	free(store);
	free(deep);
	free(listed);
	free(dangling);
	free(f);
	free(a);
}

/* A required kind that cannot be made fails closed with -EPERM; another is skipped. */
static void test_protect_make_missing_fails_closed(void **state)
{
	mtree *t = *state;
	char *file = path_in(t->ws, "file");
	dsb_test_write_file(file, "", 0);
	char *under = path_in(file, "spill");
	char *listed = path_in(file, "listed");
	char *roots[] = {t->ws, NULL};
	char why[512] = "";

	dsb_protected best_effort[] = {{.path = listed, .kind = DSB_PROTECT_LISTED}};
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE,
			       .workspace_root = t->ws,
			       .protected = best_effort,
			       .n_protected = 1};
	assert_int_equal(protect_make_missing(&pol, roots, why, sizeof(why)), 0);

	static const dsb_protect_kind kinds[] = {DSB_PROTECT_STORE, DSB_PROTECT_CONFIG,
						 DSB_PROTECT_ANSWERER, DSB_PROTECT_RUNNER,
						 DSB_PROTECT_SPILL};
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
		dsb_protected required[] = {{.path = under, .kind = kinds[i], .directory = true}};
		pol.protected = required;
		why[0] = '\0';
		assert_int_equal(protect_make_missing(&pol, roots, why, sizeof(why)), -EPERM);
		char *expected = NULL;
		assert_true(asprintf(&expected, "cannot make the protected %s %s: %s",
				     dsb_protect_kind_to_string(kinds[i]), under,
				     strerror(ENOTDIR)) > 0);
		assert_string_equal(why, expected);
		free(expected);
	}
	free(listed);
	free(under);
	free(file);
}

/* --- the plan as it travels to a monitor (src/confine/record.c) ------------------------------ */

/* A plan with a field of every kind, owned. */
static confine_plan *full_plan(void)
{
	dsb_confined c = {0};
	confine_plan *plan;
	assert_int_equal(plan_new(&c, &plan), 0);
	plan->steps = STEPS_SELF | STEP(STEP_MOUNTS) | STEP(STEP_LOOPBACK);
	plan->mount_ns = plan->net_ns = plan->mounts_required = true;
	plan->proxy_port = 3128;
	plan->filter_flags = LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY | SECCOMP_NET_NOTIFY;
	assert_int_equal(strv_push(&plan->landlock.ro, "/"), 0);
	assert_int_equal(strv_push(&plan->landlock.rw, "/ws"), 0);
	assert_int_equal(strv_push(&plan->landlock.rw_in_place, "/tmp"), 0);
	plan->landlock.scope = LL_SCOPE_SIGNAL;
	plan->landlock.abi_max = 4;
	assert_non_null(plan->mounts.v = calloc(2, sizeof(*plan->mounts.v)));
	plan->mounts.n = 2;
	plan->mounts.v[0] = (protect_mount){PROTECT_PIN, strdup("/ws/.git"), NULL, DSB_PROTECT_GIT};
	plan->mounts.v[1] =
		(protect_mount){PROTECT_HIDE_DIR, strdup("/ws/.ssh"), NULL, DSB_PROTECT_DENY_READ};
	assert_int_equal(strv_push(&plan->meta_roots, "/ws"), 0);
	assert_int_equal(strv_push(&plan->net_allow, "*.debian.org"), 0);
	plan->net_roots = strv_of((const char *const[]){NULL}); /* empty, not NULL */
	return plan;
}

static void test_plan_travels_whole(void **state)
{
	(void)state;
	confine_plan *plan = full_plan();
	strbuf sb = STRBUF_INIT;
	assert_int_equal(record_encode(&sb, &confine_plan_record, plan), 0);
	confine_plan back = {0};
	assert_int_equal(record_decode(&confine_plan_record, sb.buf, sb.len, &back), 0);
	/* Encoded again, the copy is the same bytes: every field came through. */
	strbuf again = STRBUF_INIT;
	assert_int_equal(record_encode(&again, &confine_plan_record, &back), 0);
	assert_int_equal(again.len, sb.len);
	assert_memory_equal(again.buf, sb.buf, sb.len);
	assert_int_equal(back.steps, plan->steps);
	assert_int_equal(back.proxy_port, 3128);
	assert_int_equal(back.filter_fd, -1);
	assert_strv(back.landlock.rw_in_place, "/tmp");
	assert_int_equal(back.landlock.abi_max, 4);
	assert_int_equal(back.mounts.n, 2);
	assert_int_equal(back.mounts.v[1].op, PROTECT_HIDE_DIR);
	assert_string_equal(back.mounts.v[1].path, "/ws/.ssh");
	assert_int_equal(back.mounts.v[1].kind, DSB_PROTECT_DENY_READ);
	assert_non_null(back.net_roots); /* empty stays empty ... */
	assert_null(back.net_roots[0]);
	assert_null(back.net_deny); /* ... and NULL stays NULL */
	record_free(&confine_plan_record, &back);
	record_free(&confine_plan_record, plan);
	free(plan);
	strbuf_done(&sb);
	strbuf_done(&again);
}

/* A message cut anywhere, or with a NUL inside a string, or with bytes left over, is refused. */
static void test_plan_decode_refuses_forgeries(void **state)
{
	(void)state;
	confine_plan *plan = full_plan();
	strbuf sb = STRBUF_INIT;
	assert_int_equal(record_encode(&sb, &confine_plan_record, plan), 0);
	for (size_t n = 0; n < sb.len; n++) {
		confine_plan back = {0};
		assert_int_equal(record_decode(&confine_plan_record, sb.buf, n, &back), -EBADMSG);
		record_free(&confine_plan_record, &back); /* what was decoded is freed */
	}
	/* The control: the whole message is taken. */
	confine_plan back = {0};
	assert_int_equal(record_decode(&confine_plan_record, sb.buf, sb.len, &back), 0);
	record_free(&confine_plan_record, &back);
	/* One byte more. */
	assert_int_equal(strbuf_putc(&sb, 'x'), 0);
	assert_int_equal(record_decode(&confine_plan_record, sb.buf, sb.len, &back), -EBADMSG);
	record_free(&confine_plan_record, &back);
	sb.buf[--sb.len] = '\0';
	/* A NUL inside the first mount's path. */
	char *at = memmem(sb.buf, sb.len, "/ws/.git", 8);
	assert_non_null(at);
	at[3] = '\0';
	assert_int_equal(record_decode(&confine_plan_record, sb.buf, sb.len, &back), -EBADMSG);
	record_free(&confine_plan_record, &back);
	record_free(&confine_plan_record, plan);
	free(plan);
	strbuf_done(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bwrap_profiles_exact),
		cmocka_unit_test(test_plan_travels_whole),
		cmocka_unit_test(test_plan_decode_refuses_forgeries),
		cmocka_unit_test(test_bwrap_dialect),
		cmocka_unit_test(test_bwrap_is_found_only_where_it_can_be_trusted),
		cmocka_unit_test(test_bwrap_in_the_workspace_is_refused),
		cmocka_unit_test(test_landlock_grants_per_mode),
		cmocka_unit_test(test_landlock_evidence),
		cmocka_unit_test(test_custom_runner_skips_the_chain),
		cmocka_unit_test(test_custom_runner_must_be_trusted),
		cmocka_unit_test(test_full_access_is_never_confined),
		cmocka_unit_test(test_spawn_failures_come_back_out_of_band),
		cmocka_unit_test(test_a_command_cannot_fake_a_runner_failure),
		cmocka_unit_test(test_bwrap_exec_errno),
		cmocka_unit_test(test_spawn_bad_cwd_names_errno_once),
		cmocka_unit_test(test_spawn_wait_times_out_and_reaps),
		cmocka_unit_test(test_protect_ops_build),
		cmocka_unit_test(test_protect_ops_hide_a_whole_root),
		cmocka_unit_test(test_protect_ops_pin_the_nested_workspace),
		cmocka_unit_test(test_protect_bwrap_args_by_op),
		cmocka_unit_test_setup_teardown(test_protect_make_missing, setup_mtree,
						teardown_mtree),
		cmocka_unit_test_setup_teardown(test_protect_make_missing_follows_no_symlink,
						setup_mtree, teardown_mtree),
		cmocka_unit_test_setup_teardown(test_protect_make_missing_fails_closed, setup_mtree,
						teardown_mtree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
