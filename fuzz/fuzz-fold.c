/* SPDX-License-Identifier: MIT */
/*
 * Differential fuzzing of the folds and of resumed validation. The backward reader (tail.c, what
 * the folds use) against the forward scanner (scan.c, what validates a log): for any bytes the
 * scanner accepts as a log, the last sandbox/mode record found backwards must be the one the
 * forward scan saw last. And a scan resumed from a line end the full scan passed (what a
 * checkpoint does, check.c) must end exactly as the full scan did: the same error message, or
 * the same counts. On any input, nothing may crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/session/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct last {
	json_t *mode;	   /* the last sandbox/mode record, forwards */
	log_position half; /* the end of the record halfway through, once passed */
	size_t records;
};

static int remember(const log_record *rec, void *userdata, dsb_error *reterr)
{
	struct last *l = userdata;
	if (strcmp(rec->type, "sandbox/mode") == 0) {
		json_decref(l->mode);
		l->mode = json_incref(rec->json);
	}
	/* Every other record end in turn: the last one kept lies about halfway through. */
	if (l->records++ % 2 == 0)
		l->half = (log_position){.offset = rec->offset + (off_t)rec->text_len + 1,
					 .lines = rec->line,
					 .events = rec->seq + rec->count};
	return 0;
}

/* A scan resumed at @l->half ends as the full one did (@scanned, @res, @err), or asks for one. */
static void check_resumed(int fd, const struct last *l, int scanned, const log_scan_result *res,
			  const dsb_error *err)
{
	if (l->records == 0)
		return;
	log_scan_result again;
	dsb_error err2 = {0};
	int r = log_scan_from(fd, "fuzz", &l->half, NULL, NULL, NULL, &again, &err2);
	if (r == LOG_RESCAN)
		return;
	if (r != scanned)
		abort();
	if (r < 0 && strcmp(err->message, err2.message) != 0)
		abort();
	if (r == 0 && (again.n_events != res->n_events || again.lines != res->lines ||
		       again.committed_bytes != res->committed_bytes || again.torn != res->torn))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	int fd = memfd_create("fuzz-fold", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}

	struct last fwd = {0};
	log_scan_result res;
	dsb_error err = {0};
	int scanned = log_scan(fd, "fuzz", NULL, remember, &fwd, &res, &err);
	if (!log_is_zstd(fd, (off_t)size))
		check_resumed(fd, &fwd, scanned, &res, &err);

	off_t header_end, committed;
	if (!log_is_zstd(fd, (off_t)size) &&
	    tail_bounds(fd, (off_t)size, &header_end, &committed) == 0) {
		static const char *const type = "sandbox/mode";
		json_t *back = NULL;
		int found = tail_find_last(fd, "fuzz", header_end, committed, &type, 1, NULL, &back,
					   NULL);

		/* Where the scanner accepted the log, both readers must agree. */
		if (scanned == 0) {
			if (found < 0 || (found == 1) != (fwd.mode != NULL))
				abort();
			if (found == 1 && !json_equal(back, fwd.mode))
				abort();
		}
		json_decref(back);
	}
	json_decref(fwd.mode);
	close(fd);
	return 0;
}
