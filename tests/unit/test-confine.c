/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the confinement contract (spec §5.3-5.8, §11.4): the exact bwrap profile and
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
	assert_false(confined_plan(&c)->harden);
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
	assert_true(confined_plan(&c)->harden);
	assert_int_equal(confined_plan(&c)->filter_flags, LANDLOCK_FILTER);
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
	confine_plan plan = {.landlock = {.ro = ro, .rw = rw}, .filter_fd = -1};
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
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "Runner failure: landlock-run: exec failed: No such "
					    "file or directory"));
}

static void test_a_command_cannot_fake_a_runner_failure(void **state)
{
	(void)state;
	char *ro[] = {(char *)"/", NULL}, *rw[] = {(char *)"/dev/null", NULL};
	confine_plan plan = {.landlock = {.ro = ro, .rw = rw}, .harden = true, .filter_fd = -1};
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bwrap_profiles_exact),
		cmocka_unit_test(test_bwrap_dialect),
		cmocka_unit_test(test_bwrap_is_found_only_where_it_can_be_trusted),
		cmocka_unit_test(test_bwrap_in_the_workspace_is_refused),
		cmocka_unit_test(test_landlock_grants_per_mode),
		cmocka_unit_test(test_custom_runner_skips_the_chain),
		cmocka_unit_test(test_custom_runner_must_be_trusted),
		cmocka_unit_test(test_full_access_is_never_confined),
		cmocka_unit_test(test_spawn_failures_come_back_out_of_band),
		cmocka_unit_test(test_a_command_cannot_fake_a_runner_failure),
		cmocka_unit_test(test_spawn_wait_times_out_and_reaps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
