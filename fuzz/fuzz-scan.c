/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes log_scan() over arbitrary bytes, plain or zstd-framed, through a memfd as a log file
 * would be read. Properties: it never crashes or leaks; the records account for every event in
 * seq order; the result is consistent (committed within the file, the whole file when nothing
 * is torn); and a header it accepted formats to a line it accepts again, with the same values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/session/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
	uint64_t events;
	size_t records;
} seen;

static int touch(const log_record *rec, void *userdata, dsb_error *reterr)
{
	(void)reterr;
	seen *s = userdata;
	if (rec->seq != s->events || rec->count == 0 || !json_is_object(rec->json) ||
	    strcmp(rec->type, json_string_value(json_object_get(rec->json, "type"))) != 0 ||
	    rec->line != s->records + 2)
		abort();
	s->events += rec->count;
	s->records++;
	return 0;
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_header(const log_header *h)
{
	char *line = NULL;
	if (log_header_format(h, &line) < 0)
		return; /* out of memory */
	log_header again = {0};
	if (log_header_parse(line, strlen(line), "again", &again, NULL) != 0 ||
	    !same_string(h->id, again.id) || !same_string(h->cwd, again.cwd) ||
	    !same_string(h->parent_session, again.parent_session) ||
	    !same_string(h->agent_preset, again.agent_preset) ||
	    h->created_at != again.created_at || h->delegation_depth != again.delegation_depth ||
	    h->has_seed_length != again.has_seed_length || h->seed_length != again.seed_length ||
	    h->origin_subagent != again.origin_subagent)
		abort();
	log_header_done(&again);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-scan", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t done = 0;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0) {
			close(fd);
			return 0;
		}
		done += (size_t)n;
	}

	seen s = {0};
	log_header h = {0};
	log_scan_result res;
	dsb_error err;
	int r = log_scan(fd, "fuzz", &h, touch, &s, &res, &err);
	close(fd);
	if (r < 0) {
		if (err.message[0] == '\0')
			abort();
		return 0;
	}
	if (r != 0 || res.n_events != s.events || res.file_bytes != (off_t)size ||
	    res.committed_bytes > res.file_bytes ||
	    (s.events > 0 && res.last_seq != s.events - 1) ||
	    res.torn == (res.committed_bytes == res.file_bytes))
		abort();
	check_header(&h);
	log_header_done(&h);
	return 0;
}
