/* SPDX-License-Identifier: MIT */
/*
 * One run's supervision, as the caller's run loop and a monitor both keep it: a supervisor over
 * the plan's roots with each handler of the build that the plan's calls come to (the list is
 * meson.build's, in handlers.h), answered inline until the first call and by a worker thread
 * from then on.
 */
#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "confine.h"
#include "handlers.h"

#define HANDLER_DECLARE_(name) extern const sup_handler handler_##name;
SUP_HANDLERS(HANDLER_DECLARE_)
#undef HANDLER_DECLARE_

static const sup_handler *const handlers[] = {
#define HANDLER_ENTRY_(name) &handler_##name,
	SUP_HANDLERS(HANDLER_ENTRY_)
#undef HANDLER_ENTRY_
};

void supervision_start(supervision *sv, const confine_plan *plan, spawn_handoff *in)
{
	supervisor_init(&sv->sup, plan ? plan->meta_roots : NULL, plan ? plan->meta_fixed : NULL);
	sv->sup.runner = plan && plan->wraps;
	sv->worker = NULL;
	sv->listener = in->listener;
	in->listener = -1;
	/* A listener that did not reach us supervises nothing: no evidence (handler-files.c). */
	if (sv->listener < 0)
		in->achieved &= ~(unsigned)HARDEN_FILES_SUPERVISED;
	sup_listener_tune(sv->listener);
	for (size_t i = 0; plan && i < ELEMENTSOF(handlers); i++) {
		void *state = NULL;
		if (handlers[i]->wanted(plan) && handlers[i]->new (plan, in, &state) >= 0)
			(void)supervisor_add(&sv->sup, handlers[i], state);
	}
	/* What no handler took. */
	if (in->proxy >= 0)
		(void)close(in->proxy);
	in->proxy = -1;
}

void supervision_ready(supervision *sv, short revents)
{
	if (sv->listener < 0 || !revents)
		return;
	if (revents & POLLIN) {
		supervisor_start(&sv->sup);
		if (!sv->worker && sup_worker_start(&sv->worker, &sv->sup, sv->listener) == 0) {
			sv->listener = -1; /* the worker's now */
			return;
		}
		if (supervisor_handle(&sv->sup, sv->listener) >= 0)
			return;
	}
	(void)close(sv->listener);
	sv->listener = -1;
}

int supervision_refusals(supervision *sv, confine_refusals *ret)
{
	int r = supervisor_refusals(&sv->sup, ret);
	if (r < 0)
		record_free(&confine_refusals_record, ret);
	return r;
}

void supervision_done(supervision *sv)
{
	/* The worker first: it answers with the handlers' states. */
	sup_worker_stop(sv->worker);
	sv->worker = NULL;
	if (sv->listener >= 0)
		(void)close(sv->listener);
	sv->listener = -1;
	supervisor_done(&sv->sup);
}
