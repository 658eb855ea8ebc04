/* SPDX-License-Identifier: MIT */
/*
 * Differential fuzzing of the folds: the backward reader (tail.c, what the folds and appends
 * use) against the forward scanner (scan.c, what validates a log). For any bytes the scanner
 * accepts as a log, the last sandbox/mode record found backwards must be the one the forward
 * scan saw last, and the next seq an append would take must follow the scanned events. On any
 * input, neither side may crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/session/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct last {
	json_t *mode; /* the last sandbox/mode record, forwards */
};

static int remember(const log_record *rec, void *userdata, dsb_error *reterr)
{
	struct last *l = userdata;
	if (strcmp(rec->type, "sandbox/mode") == 0) {
		json_decref(l->mode);
		l->mode = json_incref(rec->json);
	}
	return 0;
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
	int scanned = log_scan(fd, "fuzz", NULL, remember, &fwd, &res, NULL);

	off_t header_end, committed;
	if (!log_is_zstd(fd, (off_t)size) &&
	    tail_bounds(fd, (off_t)size, &header_end, &committed) == 0) {
		static const char *const type = "sandbox/mode";
		json_t *back = NULL;
		int found = tail_find_last(fd, "fuzz", header_end, committed, &type, 1, NULL, &back,
					   NULL);
		uint64_t next = 0;
		int has_seq = tail_last_seq(fd, "fuzz", header_end, committed, &next, NULL);

		/* Where the scanner accepted the log, both readers must agree. */
		if (scanned == 0) {
			if (found < 0 || (found == 1) != (fwd.mode != NULL))
				abort();
			if (found == 1 && !json_equal(back, fwd.mode))
				abort();
			if (has_seq == 1 && next != (res.n_events ? res.last_seq + 1 : 0))
				abort();
		}
		json_decref(back);
	}
	json_decref(fwd.mode);
	close(fd);
	return 0;
}
