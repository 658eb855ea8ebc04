/* SPDX-License-Identifier: MIT */
/*
 * DSH's read tool window (packages/fs/tool-fs/src/read-render.ts buildWindow() and
 * formatReadOutput(), read.ts render()): the text split into lines at "\n", one trailing "\r"
 * dropped per line, no empty line after a final newline; the lines from @offset on, at most
 * @limit, each cut to 2000 UTF-16 code units with a suffix, until their UTF-8 bytes (plus one
 * per newline between them) would pass 50 KiB; numbered, with a footer that says how to go
 * on. Lengths are JavaScript's (UTF-16 code units), not bytes or code points, as DSH counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

void read_view_done(read_view *v)
{
	free(v->text);
	free(v->error);
	if (v->value)
		json_decref(v->value);
	*v = (read_view){0};
}

/* What the window has gathered so far (WindowAccumulator). */
typedef struct window {
	uint64_t offset, limit;
	uint64_t total; /* lines seen */
	uint64_t n;	/* lines kept */
	uint64_t last;	/* the number of the last line kept */
	size_t bytes;	/* their output bytes */
	bool capped;	/* the byte cap stopped the window */
	strbuf body;	/* "N: TEXT" lines joined by "\n" */
	json_t *lines;	/* [{number, text}] */
	strbuf line;	/* scratch: one line as shown */
} window;

/* Appends the UTF-8 of @cp to @sb. */
static int put_code_point(strbuf *sb, uint32_t cp)
{
	char b[4];
	size_t n;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return strbuf_append(sb, b, n);
}

/*
 * truncateLine(): @s (@len bytes) into @w->line, cut after TOOL_READ_MAX_LINE_UNITS UTF-16
 * units with DSH's suffix when longer. A cut through a surrogate pair leaves JavaScript a lone
 * surrogate, which reaches the model as U+FFFD: written so.
 */
static int truncate_line(window *w, const char *s, size_t len)
{
	size_t units = 0, cut = len;
	bool lone = false;
	for (size_t at = 0; at < len;) {
		size_t before = at;
		uint32_t cp = utf8_next(s, len, &at);
		size_t u = cp >= 0x10000 ? 2 : 1;
		if (units + u > TOOL_READ_MAX_LINE_UNITS && cut == len) {
			cut = before;
			lone = units + 1 == TOOL_READ_MAX_LINE_UNITS && u == 2;
		}
		units += u;
	}
	w->line.len = 0;
	int r = strbuf_append(&w->line, "", 0);
	if (units <= TOOL_READ_MAX_LINE_UNITS)
		return r < 0 ? r : strbuf_append(&w->line, s, len);
	if (r >= 0)
		r = strbuf_append(&w->line, s, cut);
	if (r >= 0 && lone)
		r = put_code_point(&w->line, 0xfffd);
	if (r >= 0)
		r = strbuf_printf(&w->line, "... (line truncated to %d chars)",
				  TOOL_READ_MAX_LINE_UNITS);
	return r;
}

/* consumeLine(): one line of the file (its newline and one "\r" already gone). -ENOMEM. */
static int consume(window *w, const char *s, size_t len)
{
	w->total++;
	if (w->capped || w->total < w->offset || w->n >= w->limit)
		return 0;
	int r = truncate_line(w, s, len);
	if (r < 0)
		return r;
	size_t bytes = w->line.len + (w->n > 0 ? 1 : 0);
	if (w->bytes + bytes > TOOL_READ_MAX_BYTES) {
		w->capped = true;
		return 0;
	}
	w->bytes += bytes;
	w->n++;
	w->last = w->total;
	r = strbuf_printf(&w->body, "%s%llu: ", w->n > 1 ? "\n" : "", (unsigned long long)w->total);
	if (r >= 0)
		r = strbuf_append(&w->body, w->line.buf, w->line.len);
	json_t *line = r >= 0 ? json_pack("{s:I, s:s%}", "number", (json_int_t)w->total, "text",
					  w->line.buf, w->line.len)
			      : NULL;
	if (!line || json_array_append_new(w->lines, line) < 0)
		return -ENOMEM;
	return 0;
}

int read_render(const char *text, size_t len, const char *display_path, uint64_t offset,
		uint64_t limit, read_view *ret)
{
	window w = {.offset = offset, .limit = limit, .lines = json_array()};
	int r = w.lines ? 0 : -ENOMEM;
	*ret = (read_view){0};

	for (size_t pos = 0; r >= 0 && pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t n = end - pos;
		if (n > 0 && text[end - 1] == '\r')
			n--;
		r = consume(&w, text + pos, n);
		pos = nl ? end + 1 : len;
	}

	/* finish(): an offset past the end is an error, except 1 on an empty file. */
	if (r >= 0 && !w.capped && offset > w.total && !(w.total == 0 && offset == 1)) {
		r = asprintf(&ret->error, "offset %llu is out of range for \"%s\" (%llu lines)",
			     (unsigned long long)offset, display_path,
			     (unsigned long long)w.total) < 0
			    ? -ENOMEM
			    : 0;
		goto out;
	}

	/* render() then formatReadOutput(): the footer tells the model how to go on. */
	uint64_t end = w.n > 0 ? w.last : offset - 1;
	bool capped = w.n < limit && end < w.total;
	strbuf footer = STRBUF_INIT;
	if (r >= 0 && capped)
		r = strbuf_printf(&footer,
				  "(Output capped. Showing lines %llu-%llu. Use offset=%llu to "
				  "continue.)",
				  (unsigned long long)offset, (unsigned long long)end,
				  (unsigned long long)end + 1);
	else if (r >= 0 && end < w.total)
		r = strbuf_printf(&footer,
				  "(Showing lines %llu-%llu of %llu. Use offset=%llu to continue.)",
				  (unsigned long long)offset, (unsigned long long)end,
				  (unsigned long long)w.total, (unsigned long long)end + 1);
	else if (r >= 0)
		r = strbuf_printf(&footer, "(End of file - total %llu lines)",
				  (unsigned long long)w.total);
	strbuf out = STRBUF_INIT;
	if (r >= 0)
		r = strbuf_printf(&out, "<path>%s</path>\n<type>file</type>\n<content>\n",
				  display_path);
	if (r >= 0 && w.n > 0)
		r = strbuf_append(&out, w.body.buf, w.body.len) < 0 ? -ENOMEM
								    : strbuf_puts(&out, "\n\n");
	if (r >= 0)
		r = strbuf_printf(&out, "%s\n</content>", footer.buf);
	strbuf_done(&footer);
	if (r >= 0)
		ret->value = json_pack("{s:s, s:I, s:O, s:I}", "path", display_path, "offset",
				       (json_int_t)offset, "lines", w.lines, "totalLines",
				       (json_int_t)w.total);
	if (r >= 0 && ret->value)
		ret->text = strbuf_take(&out);
	if (r >= 0 && (!ret->value || !ret->text))
		r = -ENOMEM;
	strbuf_done(&out);
out:
	strbuf_done(&w.body);
	strbuf_done(&w.line);
	if (w.lines)
		json_decref(w.lines);
	if (r < 0)
		read_view_done(ret);
	return r;
}
