/* SPDX-License-Identifier: MIT */
/*
 * env-bench [ROUNDS] — the environment scrub's cost per tool call (not a test). The CLI loads the
 * config and builds the child's environment on every call, so both count: env_build() over a
 * 40-variable developer environment under each way of matching, and the config-side work (the
 * default list's setup, compiling configured expressions, warm and in a fresh process, as the
 * CLI always is). Medians of ROUNDS batches. Budget: about 20 µs per call for the whole feature
 * with the default config.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dsb/dsb.h>

#include "timing.h"
#include "src/exec/exec.h"
#include "src/policy/policy.h"

/* A developer's shell as an agent harness inherits it: 40 variables, five of them secrets. */
static const char *const parent_text[] = {
	"SHELL=/bin/bash",
	"COLORTERM=truecolor",
	"HISTCONTROL=ignoredups:erasedups",
	"HISTSIZE=100000",
	"EDITOR=vim",
	"PWD=/home/dev/src/project",
	"LOGNAME=dev",
	"XDG_SESSION_TYPE=wayland",
	"HOME=/home/dev",
	"LANG=en_US.UTF-8",
	"LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:"
	"or=40;31;01:mi=00:su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;"
	"31:*.tgz=01;31:*.arc=01;31:*.arj=01;31:*.taz=01;31:*.lha=01;31:*.lz4=01;31:*.lzh=01;31:"
	"*.lzma=01;31:*.tlz=01;31:*.txz=01;31:*.tzo=01;31:*.t7z=01;31:*.zip=01;31:*.z=01;31:*.dz="
	"01;31:*.gz=01;31:*.lrz=01;31:*.lz=01;31:*.lzo=01;31:*.xz=01;31:*.zst=01;31:*.tzst=01;31:"
	"*.bz2=01;31:*.bz=01;31:*.tbz=01;31:*.tbz2=01;31:*.tz=01;31:*.deb=01;31:*.rpm=01;31:*.jar"
	"=01;31:*.war=01;31:*.ear=01;31:*.sar=01;31:*.rar=01;31:*.alz=01;31:*.ace=01;31:*.zoo=01;"
	"31:*.cpio=01;31:*.7z=01;31:*.rz=01;31:*.cab=01;31:*.wim=01;31:*.swm=01;31:*.dwm=01;31:"
	"*.esd=01;31:*.avif=01;35:*.jpg=01;35:*.jpeg=01;35:*.mjpg=01;35:*.mjpeg=01;35:*.gif=01;35",
	"SSH_AUTH_SOCK=/run/user/1000/keyring/ssh",
	"XDG_CURRENT_DESKTOP=GNOME",
	"WAYLAND_DISPLAY=wayland-0",
	"GNOME_TERMINAL_SCREEN=/org/gnome/Terminal/screen/0b4d0c4e_5a53_4b8b_9cde_4c0a61c6e2f1",
	"XDG_SESSION_CLASS=user",
	"TERM=xterm-256color",
	"USER=dev",
	"DISPLAY=:0",
	"SHLVL=2",
	"XDG_RUNTIME_DIR=/run/user/1000",
	"DEBUGINFOD_URLS=https://debuginfod.debian.net ",
	"XDG_DATA_DIRS=/usr/share/gnome:/usr/local/share/:/usr/share/",
	"PATH=/home/dev/.local/bin:/home/dev/.cargo/bin:/usr/local/bin:/usr/bin:/bin:/usr/games",
	"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
	"MAIL=/var/mail/dev",
	"OLDPWD=/home/dev/src",
	"GIT_AUTHOR_NAME=Dev Eloper",
	"GIT_AUTHOR_EMAIL=dev@example.org",
	"GOPATH=/home/dev/go",
	"CARGO_HOME=/home/dev/.cargo",
	"NVM_DIR=/home/dev/.nvm",
	"VIRTUAL_ENV=/home/dev/src/project/.venv",
	"HTTP_PROXY=http://proxy.corp.example:3128",
	"NO_PROXY=localhost,127.0.0.1,.corp.example",
	"GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz",
	"OPENAI_API_KEY=sk-0123456789",
	"DATABASE_URL=postgres://app:hunter2@db.corp.example:5432/app",
	"DSH_SESSION=0b4d0c4e",
	"_=/usr/bin/env",
	NULL,
};

#define parent ((char *const *)parent_text)

/* The scrub as it was before bash.scrubEnv: DSH's rule, names cut at 255 bytes. */
static bool old_scrubbed(const char *entry)
{
	static const char *const words[] = {"KEY", "PASSWORD", "SECRET", "TOKEN"};
	size_t n = strcspn(entry, "=");
	char upper[256];
	if (n >= sizeof(upper))
		n = sizeof(upper) - 1;
	for (size_t i = 0; i < n; i++)
		upper[i] = (char)((entry[i] >= 'a' && entry[i] <= 'z') ? entry[i] - 32 : entry[i]);
	upper[n] = '\0';
	if (strncmp(upper, "DSH_", 4) == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strstr(upper, words[i]))
			return true;
	return false;
}

static char **old_env_build(void)
{
	static const char *const overrides[] = {"NO_COLOR=1", "TERM=dumb", "PAGER=cat",
						"GIT_PAGER=cat"};
	char **env = calloc(1, sizeof(char *));
	for (size_t i = 0; parent[i]; i++)
		if (strchr(parent[i], '=') && !old_scrubbed(parent[i]))
			(void)strv_push(&env, parent[i]);
	for (size_t i = 0; i < ELEMENTSOF(overrides); i++) {
		size_t n = strcspn(overrides[i], "=");
		size_t j = 0;
		while (env[j] && !(strncmp(env[j], overrides[i], n) == 0 && env[j][n] == '='))
			j++;
		if (env[j]) {
			free(env[j]);
			env[j] = strdup(overrides[i]);
		} else
			(void)strv_push(&env, overrides[i]);
	}
	return env;
}

static int rounds = 201;
#define BATCH 200

typedef struct variant {
	const char *label;
	void (*fn)(void *);
	void *arg;
	double us; /* the result: median microseconds per call */
} variant;

/*
 * Each variant's median over ROUNDS batches of BATCH calls, the variants interleaved batch by
 * batch so that a busy machine slows them all alike.
 */
static void measure(variant *v, size_t n)
{
	double *t = calloc((size_t)rounds * n, sizeof(double));
	for (size_t k = 0; k < n; k++)
		for (int i = 0; i < BATCH; i++)
			v[k].fn(v[k].arg);
	for (int r = 0; r < rounds; r++)
		for (size_t k = 0; k < n; k++) {
			double t0 = now();
			for (int i = 0; i < BATCH; i++)
				v[k].fn(v[k].arg);
			t[k * (size_t)rounds + (size_t)r] = (now() - t0) / BATCH;
		}
	for (size_t k = 0; k < n; k++) {
		qsort(t + k * (size_t)rounds, (size_t)rounds, sizeof(double), cmp_double);
		v[k].us = t[k * (size_t)rounds + (size_t)rounds / 2] * 1e6;
		printf("  %-48s %8.2f\n", v[k].label, v[k].us);
	}
	free(t);
}

typedef struct rules {
	scrub_rule *v;
	size_t n;
} rules;

static void run_old(void *arg)
{
	strv_free(old_env_build());
}

static void run_new(void *arg)
{
	const rules *r = arg;
	strv_free(env_build(parent, r->v, r->n, NULL, NULL));
}

static void run_defaults_setup(void *arg)
{
	rules r;
	if (scrub_rules_default(&r.v, &r.n) < 0)
		exit(1);
	scrub_rules_free(r.v, r.n);
}

static void run_parse(void *arg)
{
	const char *yaml = arg;
	dsb_config *cfg = NULL;
	dsb_error err;
	if (dsb_config_parse(yaml, strlen(yaml), "bench.yaml", &cfg, &err) < 0) {
		fprintf(stderr, "env-bench: %s\n", err.message);
		exit(1);
	}
	dsb_config_free(cfg);
}

/*
 * dsb_config_parse() once in a freshly exec'd process, as every CLI call is (regcomp()'s and
 * libyaml's code and data not yet touched): each of @yaml's median over ROUNDS processes,
 * interleaved, in microseconds.
 */
static double once(const char *yaml)
{
	int fds[2];
	double t = 0;
	if (pipe(fds) < 0)
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		char fd[16];
		(void)snprintf(fd, sizeof(fd), "%d", fds[1]);
		execl("/proc/self/exe", "env-bench", "--once", yaml, fd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (read(fds[0], &t, sizeof(t)) != sizeof(t))
		exit(1);
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return t;
}

static void measure_cold(const char *const *labels, const char *const *yaml, size_t n)
{
	double *t = calloc((size_t)rounds * n, sizeof(double));
	for (int r = 0; r < rounds; r++)
		for (size_t k = 0; k < n; k++)
			t[k * (size_t)rounds + (size_t)r] = once(yaml[k]);
	for (size_t k = 0; k < n; k++) {
		qsort(t + k * (size_t)rounds, (size_t)rounds, sizeof(double), cmp_double);
		printf("  %-48s %8.2f\n", labels[k],
		       t[k * (size_t)rounds + (size_t)rounds / 2] * 1e6);
	}
	free(t);
}

/* The default list, each entry compiled by regcomp() instead of its built-in equivalent. */
static rules compiled_defaults(const rules *defaults)
{
	rules r = {calloc(defaults->n, sizeof(scrub_rule)), defaults->n};
	for (size_t i = 0; i < r.n; i++) {
		const char *text = defaults->v[i].source;
		r.v[i].on_value = defaults->v[i].on_value;
		r.v[i].source = strdup(text);
		if (r.v[i].on_value)
			text += strlen("value:");
		if (regcomp(&r.v[i].re, text, REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
			exit(1);
	}
	return r;
}

/* The same, with the name rules joined into one alternation: two regexec() calls per entry. */
static rules combined_defaults(const rules *defaults)
{
	rules r = {calloc(2, sizeof(scrub_rule)), 2};
	char alternation[1024] = "";
	for (size_t i = 0; i < defaults->n; i++) {
		const char *text = defaults->v[i].source;
		scrub_rule *dst = &r.v[defaults->v[i].on_value];
		if (defaults->v[i].on_value) {
			dst->on_value = true;
			dst->source = strdup(text);
			if (regcomp(&dst->re, text + strlen("value:"),
				    REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
				exit(1);
			continue;
		}
		size_t len = strlen(alternation);
		(void)snprintf(alternation + len, sizeof(alternation) - len, "%s(%s)",
			       len ? "|" : "", text);
	}
	r.v[0].source = strdup(alternation);
	if (regcomp(&r.v[0].re, alternation, REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
		exit(1);
	return r;
}

int main(int argc, char **argv)
{
	static const char plain_yaml[] = "bash: { timeoutMs: 60000 }\n";
	static const char custom_yaml[] =
		"bash: { scrubEnv: ['^STRIPE_', '(^|_)ACCOUNT$', 'value:^sk_live_'] }\n";
	char spelled_yaml[1024] = "bash: { scrubEnv: [";
	rules defaults, none = {NULL, 0};

	if (argc == 4 && strcmp(argv[1], "--once") == 0) {
		double t0 = now();
		run_parse(argv[2]);
		double d = now() - t0;
		return write(atoi(argv[3]), &d, sizeof(d)) == sizeof(d) ? 0 : 1;
	}
	if (argc > 1)
		rounds = atoi(argv[1]) | 1;
	if (scrub_rules_default(&defaults.v, &defaults.n) < 0)
		return 1;
	for (size_t i = 0; i < defaults.n; i++) {
		size_t len = strlen(spelled_yaml);
		(void)snprintf(spelled_yaml + len, sizeof(spelled_yaml) - len, "%s'%s'",
			       i ? ", " : "", defaults.v[i].source);
	}
	strcat(spelled_yaml, "] }\n");
	rules compiled = compiled_defaults(&defaults), combined = combined_defaults(&defaults);
	dsb_config *custom = NULL;
	if (dsb_config_parse(custom_yaml, strlen(custom_yaml), "bench.yaml", &custom, NULL) < 0)
		return 1;
	rules configured = {custom->scrub_env, custom->n_scrub_env};

	size_t n_parent = 0;
	while (parent[n_parent])
		n_parent++;
	printf("env_build(), %zu variables, median of %d interleaved batches, µs per call:\n",
	       n_parent, rounds);
	variant env[] = {
		{"before (DSH's rule, names cut at 255 bytes)", run_old, NULL, 0},
		{"DSH's rule only (scrubEnv: [])", run_new, &none, 0},
		{"default list, built-in matchers (shipped)", run_new, &defaults, 0},
		{"default list, one regexec() per rule", run_new, &compiled, 0},
		{"default list, names joined in one regex", run_new, &combined, 0},
		{"3 custom expressions", run_new, &configured, 0},
	};
	measure(env, ELEMENTSOF(env));

	printf("config side, µs per call:\n");
	variant config[] = {
		{"default list setup in dsb_config_new()", run_defaults_setup, NULL, 0},
		{"parse, no scrubEnv", run_parse, (void *)plain_yaml, 0},
		{"parse, the defaults spelled out", run_parse, spelled_yaml, 0},
		{"parse, 3 custom expressions", run_parse, (void *)custom_yaml, 0},
	};
	measure(config, ELEMENTSOF(config));
	static const char *const cold_labels[] = {"parse in a fresh process, no scrubEnv",
						  "parse in a fresh process, 3 custom expressions"};
	const char *cold_yaml[] = {plain_yaml, custom_yaml};
	measure_cold(cold_labels, cold_yaml, ELEMENTSOF(cold_yaml));

	printf("the feature's cost per call with the default config: %.2f µs (env_build %+.2f, "
	       "setup %+.2f; budget about 20)\n",
	       env[2].us - env[0].us + config[0].us, env[2].us - env[0].us, config[0].us);

	scrub_rules_free(defaults.v, defaults.n);
	scrub_rules_free(compiled.v, compiled.n);
	scrub_rules_free(combined.v, combined.n);
	dsb_config_free(custom);
	return 0;
}
