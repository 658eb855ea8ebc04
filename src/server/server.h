/* SPDX-License-Identifier: MIT */
/*
 * Internals of the server piece.
 *
 *   frame.c   the stdio framing: one message per line, a limit, overlong lines skipped unread
 *   rpc.c     the JSON-RPC envelope: what a line is, and the answers and notifications written
 *   tools.c   DSH's tool definitions byte for byte, its argument checks, a call's request
 *   read.c    DSH's read tool window (read-render.ts): line numbers, caps, footers
 *   log.c     diagnostics: the front end's log, notifications/message
 *   snapshot.c the runtime-context snapshot the model is shown
 *   meta.c    the eras: a 2026-07-28 request's _meta envelope, what its results carry
 *   state.c   the requestState of input_required results: issued, redeemed once, expiring
 *   elicit.c  approvals in the client: MCP elicitation or input_required, session grants
 *   calls.c   tool calls on their own threads: the registry, cancellation, progress
 *   server.c  dsb_server_run(): the loop, the lifecycle and the methods
 */
#ifndef DSB_SERVER_SERVER_H
#define DSB_SERVER_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <dsb/call.h>
#include <dsb/jobs.h>
#include <dsb/server.h>

#include "../core/core.h"

/* --- frame.c -------------------------------------------------------------------------------- */

/* Reads lines of at most @max bytes from a descriptor, holding at most one such line. */
typedef struct frame_reader {
	char *buf;
	size_t len;	 /* bytes held */
	size_t off;	 /* where the next line starts */
	size_t scanned;	 /* bytes from @off already searched for a newline */
	size_t max, cap; /* the limit; the buffer's size */
	bool skipping;	 /* inside a line past the limit: dropped up to its newline */
	bool eof;
} frame_reader;

typedef enum frame_result {
	FRAME_NEED_MORE, /* no whole line held: frame_fill() */
	FRAME_LINE,	 /* a line, its newline (and one '\r' before it) removed */
	FRAME_TOO_LONG,	 /* a line passed the limit: it is being skipped, never held */
	FRAME_END,	 /* the input ended and nothing is left */
} frame_result;

/* -ENOMEM. */
int frame_init(frame_reader *f, size_t max);
void frame_done(frame_reader *f);

/* Reads what @fd has (once) into @f. 1 read something, 0 end of input, -errno. */
int frame_fill(frame_reader *f, int fd);

/*
 * The next line in *@ret_line (@ret_len bytes, borrowed until the next call), or what stands in
 * its way. A last line without a newline counts once the input has ended.
 */
frame_result frame_next(frame_reader *f, const char **ret_line, size_t *ret_len);

/* --- rpc.c ---------------------------------------------------------------------------------- */

#define RPC_PARSE_ERROR	     (-32700)
#define RPC_INVALID_REQUEST  (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS   (-32602)
#define RPC_INTERNAL_ERROR   (-32603)
/* MCP 2026-07-28: the request names a protocol version the server does not serve. */
#define RPC_UNSUPPORTED_VERSION (-32022)

typedef enum rpc_kind {
	RPC_REQUEST,	  /* method and id */
	RPC_NOTIFICATION, /* method, no id */
	RPC_RESPONSE,	  /* id and result or error: the client answering a request of ours */
	RPC_INVALID,	  /* answer with the error in the message */
} rpc_kind;

/* One line, classified. Owns its references. */
typedef struct rpc_message {
	rpc_kind kind;
	json_t *json;	    /* the parsed line (NULL when it did not parse) */
	json_t *id;	    /* borrowed from json; NULL for a notification or no usable id */
	const char *method; /* borrowed from json */
	json_t *params;	    /* borrowed from json; NULL when absent */
	int error_code;	    /* RPC_INVALID: what to answer */
	const char *error_message;
} rpc_message;

/*
 * Parses and classifies one line (spec: JSON-RPC 2.0 as MCP restricts it): not JSON is
 * RPC_PARSE_ERROR; a batch, a non-object, a jsonrpc other than "2.0", an id that is not a
 * string or an integer, a method that is not a string: RPC_INVALID_REQUEST. -ENOMEM.
 */
int rpc_parse(const char *line, size_t len, rpc_message *ret);
void rpc_message_done(rpc_message *m);

/* The output: one writer at a time, whole lines only. */
typedef struct rpc_writer {
	int fd;
	pthread_mutex_t lock;
	bool broken; /* a write failed (the client is gone): later ones are dropped */
} rpc_writer;

/* Writes @msg as one compact line; takes a reference of nothing. 0, or -EPIPE once broken. */
int rpc_write(rpc_writer *w, const json_t *msg);

/* {"jsonrpc":"2.0","id":ID,"result":RESULT}, stealing @result. */
int rpc_write_result(rpc_writer *w, json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":ID|null,"error":{"code":C,"message":M}}. */
int rpc_write_error(rpc_writer *w, json_t *id, int code, const char *message);

/* The same with "data":DATA, stealing @data. */
int rpc_write_error_data(rpc_writer *w, json_t *id, int code, const char *message, json_t *data);

/* {"jsonrpc":"2.0","method":M,"params":PARAMS}, stealing @params. */
int rpc_write_notification(rpc_writer *w, const char *method, json_t *params);

/* A new JSON string of @s (@len bytes), its invalid UTF-8 read as U+FFFD. NULL on OOM. */
json_t *rpc_string(const char *s, size_t len);

/* --- tools.c -------------------------------------------------------------------------------- */

/* The tools served, in DSH's order. */
typedef enum server_tool {
	TOOL_BASH,
	TOOL_EDIT,
	TOOL_JOB_KILL,
	TOOL_JOB_LIST,
	TOOL_JOB_OUTPUT,
	TOOL_READ,
	TOOL_WRITE,
	_TOOL_MAX,
	_TOOL_INVALID = -1,
} server_tool;

/* The tools/list result's "tools": DSH's seven tools as the model sees them. New reference. */
json_t *tools_list(void);

/* The tool prompt sections of DSH (tool:read, :write, :edit, :bash, :jobs), joined. */
const char *tools_prompt_sections(void);

/* A tool call's arguments, checked and turned into the call's request or the job request. */
typedef struct tool_plan {
	server_tool tool;
	dsb_call_request req;  /* a call: borrows from the arguments object; a job tool: no tool */
	bool background;       /* run_in_background: true */
	uint64_t read_offset;  /* read: 1-based first line */
	uint64_t read_limit;   /* read: at most so many lines */
	const char *job_id;    /* job_output, job_kill: borrowed; NULL when absent */
	bool wait;	       /* job_output */
	double job_timeout_ms; /* job_output: NAN when absent */
} tool_plan;

/* The read tool's line limit (readLimit) and DSH's other read caps. */
#define TOOL_READ_LIMIT		 2000
#define TOOL_READ_MAX_LINE_UNITS 2000
#define TOOL_READ_MAX_BYTES	 ((size_t)50 * 1024)

/* Whether @name is one of the tools; which, or _TOOL_INVALID. */
server_tool tools_find(const char *name);

/*
 * Checks @args (NULL: absent) against @tool's input schema as DSH's validator does, then the
 * tool's own checks in its order, and fills @ret (borrowing from @args). 0; or 1 with
 * *@ret_message, a new string, the message the model reads after "Error: " (`invalid
 * arguments: ...`, `invalid command: ...`, ...). -ENOMEM.
 */
int tools_plan(server_tool tool, json_t *args, tool_plan *ret, char **ret_message);

/* JSON.stringify() of a finite number, as DSH's texts print one. New string, or NULL. */
char *tools_js_number(double v);

/* --- read.c --------------------------------------------------------------------------------- */

/* One window of a text read (read-render.ts buildWindow() and formatReadOutput()). */
typedef struct read_view {
	char *text;    /* the model-facing envelope */
	json_t *value; /* DSH's structured value {path, offset, lines, totalLines} */
	char *error;   /* instead: `offset N is out of range for "P" (T lines)` (FS_NOT_FOUND) */
} read_view;

/*
 * Renders the window [@offset, @offset + @limit) of @text (@len bytes of UTF-8, as the fence
 * read it) for @display_path, with DSH's line cap (TOOL_READ_MAX_LINE_UNITS UTF-16 units) and
 * byte cap (TOOL_READ_MAX_BYTES). -ENOMEM.
 */
int read_render(const char *text, size_t len, const char *display_path, uint64_t offset,
		uint64_t limit, read_view *ret);
void read_view_done(read_view *v);

/* --- calls.c -------------------------------------------------------------------------------- */

typedef struct server server;
typedef struct server_call server_call;

/* The progress message: the newest output line, cut to this many bytes. */
#define PROGRESS_LINE_MAX 512

/* One tools/call on its thread. elicit.c reads @srv and, under the server's lock, @cancelled. */
struct server_call {
	server_call *next;
	server *srv;
	json_t *id;		/* the request's id */
	json_t *params;		/* the tools/call params */
	const json_t *progress; /* params._meta.progressToken, borrowed; NULL: none */
	bool modern;		/* a 2026-07-28 request: its own _meta decides (meta.c) */
	bool elicits;		/* modern: its _meta declares elicitation */
	int log_level;		/* modern: its _meta logLevel (a server_level), or none */
	json_t *approval;	/* modern retry: inputResponses.approval, the person's answer */
	json_t *input_required; /* modern: the question a deferred approval asks instead */
	dsb_call *call;		/* while it runs; under srv->lock */
	dsb_jobs_waiter waiter; /* a job_output wait, ended by a cancellation */
	char started[32];	/* the id of the job a background start started, or "" */
	bool cancelled;		/* notifications/cancelled (or shutdown): no response */
	bool done;		/* its response is being written: too late to cancel */

	/* The output's lines as they come, per stream; the newest whole one; under srv->lock. */
	char partial[2][PROGRESS_LINE_MAX];
	size_t partial_len[2];
	char newest[PROGRESS_LINE_MAX];
	size_t newest_len;
	bool pending;	       /* @newest not sent yet */
	uint64_t sent;	       /* progress notifications sent (the progress value) */
	uint64_t last_sent_ms; /* when the last one was */
};

/* The most tool calls running at once; one more is refused with a JSON-RPC error. */
#define SERVER_MAX_CALLS 128

/* How long the calls still running when the input ends have to answer before they are
 * cancelled: a client that closed its input to stop us sees us gone within 3 s. */
#define SERVER_INPUT_END_GRACE_MS 2000

typedef struct request_meta request_meta;

/*
 * Starts the tools/call request @id with @params on a thread of its own (references taken),
 * in the era @meta says; @approval, a modern retry's answer (a reference taken), or NULL.
 * 0; -EBUSY past SERVER_MAX_CALLS; -ENOMEM, -EAGAIN.
 */
int calls_start(server *srv, json_t *id, json_t *params, const request_meta *meta,
		json_t *approval);

/* notifications/cancelled for @id: the call is cancelled and gets no response. */
void calls_cancel(server *srv, const json_t *id);

/*
 * At the end of the input: waits up to @grace_ms for the running calls to finish and answer
 * (the client may still read). Returns how many did; *@ret_left, how many still run.
 */
size_t calls_finish(server *srv, uint64_t grace_ms, size_t *ret_left);

/* Cancels every call (none gets a response) and waits until every thread is done. */
void calls_cancel_all(server *srv);

/* The jobs' notice callback (dsb_jobs_notice_fn): queues @text for the next tool result. */
void calls_notice(const char *job_id, const char *text, void *userdata);

/* Drops the notices still queued (at the end). */
void calls_drop_notices(server *srv);

/* The progress thread: started with the server, stopped with calls_stop_progress(). */
int calls_start_progress(server *srv);
void calls_stop_progress(server *srv);

/* --- server.c ------------------------------------------------------------------------------- */

/* RFC 5424 levels, the order logging/setLevel uses. */
typedef enum server_level {
	LEVEL_DEBUG,
	LEVEL_INFO,
	LEVEL_NOTICE,
	LEVEL_WARNING,
	LEVEL_ERROR,
	LEVEL_CRITICAL,
	LEVEL_ALERT,
	LEVEL_EMERGENCY,
	_LEVEL_MAX,
	_LEVEL_NONE = -1,
} server_level;

typedef struct server_request server_request;
typedef struct server_state server_state;

/* A file's identity and the times a change to it moves (snapshot.c). */
typedef struct server_file_id {
	bool present;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
} server_file_id;

/* What the runtime-context snapshot is decided from: the session's log, the configuration. */
typedef struct server_snapshot_inputs {
	server_file_id log, config;
} server_snapshot_inputs;

/* A background job's completion notice, waiting for the next tool result to carry it. */
typedef struct server_notice {
	struct server_notice *next;
	char *job_id;
	char *text;
} server_notice;

struct server {
	dsb_call_setup setup; /* borrowed from the caller of dsb_server_run() */
	const char *session;
	const dsb_server_options *options;
	rpc_writer out;
	dsb_observations *observations;
	dsb_jobs *jobs;	  /* the session's background jobs (bash run_in_background) */
	atomic_int level; /* logging/setLevel; _LEVEL_NONE: no notifications/message */
	bool initialized;

	/* The calls: a list under @lock; @changed signals one leaving it. */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	server_call *calls;
	size_t n_calls;
	bool stopping; /* no new call; the progress thread ends */
	pthread_t progress;
	bool progress_started;

	/* Approvals in the client (elicit.c); under @lock but @client_elicits (set once). */
	bool client_elicits;	  /* initialize declared elicitation (form mode) */
	server_request *requests; /* ours in flight, waiting for the client's answer */
	json_int_t last_request_id;
	server_state *states; /* the requestStates issued (state.c), newest first */
	dsb_mode granted; /* "allow-session": the widest mode granted; _DSB_MODE_INVALID: none */

	/* The session's log (set by the first snapshot, then kept), and what the snapshot's
	 * inputs were when a check last found nothing new (snapshot.c); under @lock. */
	char *log_path;
	server_snapshot_inputs seen;
	bool seen_valid;

	/* Completion notices not yet delivered, oldest first; under @lock (calls.c). */
	server_notice *notices;
};

/* --- log.c ---------------------------------------------------------------------------------- */

/*
 * A diagnostic: to the front end's log, and to the client as notifications/message when it
 * asked for @level or less with logging/setLevel.
 */
void server_log(server *srv, server_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A diagnostic of the call @sc: to the client at the level its era asked for. */
void server_call_log(server_call *sc, server_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The level logging/setLevel names ("debug" .. "emergency"), or _LEVEL_NONE. */
server_level server_level_from_string(const char *s);

/* --- snapshot.c ----------------------------------------------------------------------------- */

/*
 * The session's snapshot, decided and logged under the log's lock (dsb_context_project_append()):
 * 1 with *@ret_text when the model must be shown one now; 0 when it already sees it, then with
 * the text in force when @always. -code.
 */
int server_snapshot_text(server *srv, bool always, char **ret_text, dsb_error *reterr);

/*
 * The runtime-context snapshot the model must see now (dsb_context_project_append()): a new
 * string, or NULL when the model already sees the policy in force (or on a failure, logged).
 */
char *server_snapshot(server *srv);

/* --- meta.c ---------------------------------------------------------------------------------- */

/* How long a 2026 client may cache tools/list: the tools never change in a server's life. */
#define SERVER_TOOLS_TTL_MS 3600000

/* The one version served by the 2026 era, per request. */
#define SERVER_MODERN_VERSION "2026-07-28"

/* Every version served, newest first, NULL-terminated: the modern one, then initialize's. */
extern const char *const server_versions[];

/* server_versions as a new JSON array (discover's supportedVersions, -32022's supported). */
json_t *meta_supported(void);

/* What a 2026-07-28 request's _meta says. */
struct request_meta {
	bool modern;		/* the request carries the envelope: served on its own */
	bool elicits;		/* its clientCapabilities declare elicitation in form mode */
	server_level log_level; /* io.modelcontextprotocol/logLevel, or _LEVEL_NONE */
};

/* Whether @params claim the 2026 era: their _meta names a protocol version or capabilities. */
bool meta_claimed(const json_t *params);

/*
 * Reads the 2026 envelope of @params into *@ret: 0; 1 when it is malformed (-32602) or names a
 * version not served (-32022), the error answered to @id; -ENOMEM.
 */
int meta_read(server *srv, json_t *id, const json_t *params, request_meta *ret);

/* A 2026 result finished: resultType "complete" unless it has one, the server in _meta.
 * Steals @result; NULL (it freed) on OOM. */
json_t *meta_result(json_t *result);

/* --- state.c --------------------------------------------------------------------------------- */

/* A requestState: 32 hexadecimal digits and the NUL. */
#define STATE_HANDLE_MAX 33

/*
 * A new requestState for a tools/call of @tool with @args, good for one retry within @ttl_ms.
 * -ENOMEM, -EIO (no random bytes).
 */
int state_issue(server *srv, const char *tool, const json_t *args, uint64_t ttl_ms,
		char ret_handle[STATE_HANDLE_MAX]);

/*
 * Spends the requestState @handle on a tools/call of @tool with @args: 0 when this server issued
 * it for that very call, unused and in time; else 1 with *@ret_why, the -32602 message saying
 * which it is not. -ENOMEM.
 */
int state_redeem(server *srv, const char *handle, const char *tool, const json_t *args,
		 const char **ret_why);

/* Frees every state (at the end). */
void state_drop_all(server *srv);

/* --- elicit.c ------------------------------------------------------------------------------- */

/* Whether initialize's @capabilities declare elicitation in form mode. */
bool elicit_supported(const json_t *capabilities);

/* The client's answer @message to our request @id (ignored when it is none of ours). */
void elicit_response(server *srv, const json_t *id, json_t *message);

/* The answerer callback (dsb_answerer_fn) for a server_call: asks through elicitation/create. */
int elicit_answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret);

/*
 * Who answers an escalation of the call @sc, set on @call: the one place the answerer is chosen.
 * The configured approval.answerer program always wins inside the call (include/dsb/call.h);
 * without one, the human through MCP elicitation when the client declared it (a 2025 client at
 * initialize: a request of ours, waited for; a 2026 request in its _meta: the call is deferred
 * and answered with input_required, its retry carrying the answer), else nobody (the call fails
 * closed as `unavailable`).
 */
void elicit_route(server *srv, server_call *sc, dsb_call *call);

#endif
