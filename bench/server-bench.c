/* SPDX-License-Identifier: MIT */
/*
 * The MCP server's cost, as a client on its pipes sees it (not a test):
 *
 *   server-bench ROUNDS DSH_SANDBOX CONFIG WORKSPACE BASELINE...
 *
 * Starts `DSH_SANDBOX --config CONFIG serve --cwd WORKSPACE`, initializes it, then times, in
 * interleaved rounds, one `tools/call` of bash `true` (request written to the answer read)
 * against the same client fork/exec'ing BASELINE... (e.g. bash -c true, or the raw bwrap
 * profile) and waiting for it. Then 32 concurrent calls (32 requests written at once, until
 * the 32nd answer) against 32 concurrent spawns of BASELINE. Then the server's RSS, idle and
 * right after the 32 calls. Prints medians and ratios measured in this run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timing.h"

#define CONCURRENT 32

static pid_t server;
static int to_server = -1;
static FILE *from_server;

static void die(const char *what)
{
	fprintf(stderr, "server-bench: %s: %s\n", what, errno ? strerror(errno) : "failed");
	if (server > 0)
		kill(server, SIGKILL);
	exit(1);
}

static void send_line(const char *line)
{
	size_t n = strlen(line);
	if (write(to_server, line, n) != (ssize_t)n)
		die("write to the server");
}

/* Reads lines until the response with @id; notifications are skipped. */
static void await_response(long id)
{
	char *line = NULL;
	size_t cap = 0;
	char want[64];
	snprintf(want, sizeof(want), "\"id\":%ld", id);
	for (;;) {
		if (getline(&line, &cap, from_server) < 0)
			die("the server closed its output");
		if (strstr(line, want) &&
		    (strstr(line, "\"result\"") || strstr(line, "\"error\""))) {
			if (strstr(line, "\"error\"") || strstr(line, "\"isError\":true"))
				fprintf(stderr, "server-bench: unexpected answer: %s", line),
					die("call");
			break;
		}
	}
	free(line);
}

static void send_call(long id)
{
	char req[256];
	snprintf(req, sizeof(req),
		 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"bash\",\"arguments\":{\"command\":\"true\",\"description\":\"Do nothing\"}}}\n",
		 id);
	send_line(req);
}

static void start_server(char **argv)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		die("pipe");
	server = fork();
	if (server < 0)
		die("fork");
	if (server == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_server = in[1];
	from_server = fdopen(out[0], "r");
	send_line("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":"
		  "\"server-bench\",\"version\":\"1\"}}}\n");
	await_response(0);
	send_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
}

static pid_t spawn(char **argv)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void reap(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("the baseline command");
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr,
			"usage: server-bench ROUNDS DSH_SANDBOX CONFIG WORKSPACE BASELINE...\n");
		return 2;
	}
	long rounds = strtol(argv[1], NULL, 10);
	char *server_argv[] = {
		argv[2], (char *)"--config", argv[3], (char *)"serve", (char *)"--cwd", argv[4],
		NULL};
	char **baseline = argv + 5;
	if (rounds < 1)
		return 2;
	start_server(server_argv);
	long idle = rss_kb(server);

	double *served = calloc((size_t)rounds, sizeof(double));
	double *plain = calloc((size_t)rounds, sizeof(double));
	if (!served || !plain)
		die("calloc");
	long id = 1;
	for (long i = 0; i < 3; i++) { /* warm both paths: page cache, probe verdict */
		send_call(id);
		await_response(id++);
		reap(spawn(baseline));
	}
	/*
	 * Each timed call and spawn starts after a pause (BENCH_PAUSE_MS, 20 by default), as an
	 * agent's calls come between model turns: what the server does between calls (replacing
	 * a warm monitor) is then neither timed nor landed on the next spawn. 0 times them back
	 * to back, that work included.
	 */
	const char *pause_env = getenv("BENCH_PAUSE_MS");
	long pause_ms = pause_env ? strtol(pause_env, NULL, 10) : 20;
	struct timespec pause = {.tv_sec = pause_ms / 1000, .tv_nsec = pause_ms % 1000 * 1000000L};
	for (long i = 0; i < rounds; i++) {
		if (pause_ms > 0)
			nanosleep(&pause, NULL);
		double t0 = now();
		send_call(id);
		await_response(id++);
		served[i] = now() - t0;
		if (pause_ms > 0)
			nanosleep(&pause, NULL);
		t0 = now();
		reap(spawn(baseline));
		plain[i] = now() - t0;
	}
	double m_served = median(served, (size_t)rounds), m_plain = median(plain, (size_t)rounds);
	printf("one call, %ld interleaved rounds (%ld ms apart), medians: server %.3f ms, "
	       "baseline %.3f ms, ratio %.3f\n",
	       rounds, pause_ms, m_served * 1e3, m_plain * 1e3, m_served / m_plain);

	long bursts = rounds / 10 > 5 ? rounds / 10 : 5;
	double *burst_served = calloc((size_t)bursts, sizeof(double));
	double *burst_plain = calloc((size_t)bursts, sizeof(double));
	if (!burst_served || !burst_plain)
		die("calloc");
	long loaded = 0;
	for (long b = 0; b < bursts; b++) {
		double t0 = now();
		for (int k = 0; k < CONCURRENT; k++)
			send_call(id++);
		/* Answers come in any order: count them, sampling the RSS as they come. */
		char *line = NULL;
		size_t cap = 0;
		for (int got = 0; got < CONCURRENT;) {
			if (getline(&line, &cap, from_server) < 0)
				die("the server closed its output");
			long peak = rss_kb(server);
			if (peak > loaded)
				loaded = peak;
			if (strstr(line, "\"result\"") && !strstr(line, "\"isError\":true"))
				got++;
			else if (strstr(line, "\"error\"") || strstr(line, "\"isError\":true"))
				fprintf(stderr, "server-bench: %s", line), die("concurrent call");
		}
		free(line);
		burst_served[b] = now() - t0;
		t0 = now();
		pid_t pids[CONCURRENT];
		for (int k = 0; k < CONCURRENT; k++)
			pids[k] = spawn(baseline);
		for (int k = 0; k < CONCURRENT; k++)
			reap(pids[k]);
		burst_plain[b] = now() - t0;
	}
	double b_served = median(burst_served, (size_t)bursts);
	double b_plain = median(burst_plain, (size_t)bursts);
	printf("%d concurrent calls, %ld bursts, medians: server %.1f ms (%.0f calls/s), "
	       "baseline %.1f ms (%.0f spawns/s), throughput ratio %.3f\n",
	       CONCURRENT, bursts, b_served * 1e3, CONCURRENT / b_served, b_plain * 1e3,
	       CONCURRENT / b_plain, b_plain / b_served);
	printf("server RSS: idle %.1f MB, under %d concurrent calls %.1f MB (target <= 8 MB)\n",
	       idle / 1024.0, CONCURRENT, loaded / 1024.0);

	close(to_server);
	int status;
	waitpid(server, &status, 0);
	return 0;
}
