/* SPDX-License-Identifier: Apache-2.0 */
/* termline-findings IN DIR FILE: reads the timeline document IN (written by
 * the agent with empty "findings"), computes its findings with the rules of
 * docs/findings.md, writes the document with them to DIR/FILE atomically
 * (temp file, fsync, rename, fsync DIR), removes IN, and writes the
 * findings' summary (findings-summary.h, a typed record) on stdout.
 *
 * The agent runs this as a child so that neither parsing a 20k-event
 * document with json-c (~0.2 s) nor the syncs and the rename stall its
 * loop, and so that the tree's memory is returned to the system when the
 * child exits rather than left in the agent's heap (docs/http-api.md,
 * "Findings of a closed timeline"). Exit status 0 on success, 1 on any
 * failure (IN is then left for the agent, which writes it as it is). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "fileio.h"
#include "findings.h"
#include "findings-summary.h"

/* A document of the agent is at most a few tens of MiB (max events per
 * timeline, docs/timeline-format.md); anything larger is not one of its
 * own. */
#define MAX_DOC_BYTES (512ul << 20)

int main(int argc, char **argv)
{
	struct json_tokener *tok = NULL;
	struct json_object *doc = NULL, *findings = NULL;
	struct tl_findings_summary sum;
	uint8_t rec[TL_FINDINGS_SUMMARY_MAX];
	const char *out;
	char *text = NULL;
	struct tl_model m;
	size_t len = 0, n;
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: termline-findings IN DIR FILE\n");
		return 1;
	}
	r = tl_read_file(argv[1], MAX_DOC_BYTES, &text, &len);
	if (r < 0) {
		fprintf(stderr, "termline-findings: %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	tok = json_tokener_new();
	if (tok && len <= INT32_MAX)
		doc = json_tokener_parse_ex(tok, text, (int)len);
	if (!doc || json_tokener_get_error(tok) != json_tokener_success) {
		fprintf(stderr, "termline-findings: %s: not a JSON document\n", argv[1]);
		r = -EBADMSG;
		goto out;
	}
	free(text);
	text = NULL;
	r = tl_findings_attach(doc);
	if (r == 0 && !json_object_object_get_ex(doc, "findings", &findings))
		r = -EINVAL;
	if (r == 0) {
		r = tl_model_build(doc, &m);
		if (r == 0)
			r = tl_findings_summarize(findings, &m, &sum);
		tl_model_done(&m);
	}
	if (r < 0) {
		fprintf(stderr, "termline-findings: %s: %s\n", argv[1], strerror(-r));
		goto out;
	}
	out = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!out) {
		r = -ENOMEM;
		goto out;
	}
	r = tl_file_write_atomic(argv[2], argv[3], out, strlen(out));
	if (r < 0) {
		fprintf(stderr, "termline-findings: %s/%s: %s\n", argv[2], argv[3], strerror(-r));
		goto out;
	}
	/* The document is in place: the input is no longer needed. */
	if (unlink(argv[1]) < 0 && errno != ENOENT)
		fprintf(stderr, "termline-findings: %s: %s\n", argv[1], strerror(errno));
	n = tl_findings_summary_encode(&sum, rec);
	r = tl_write_all(STDOUT_FILENO, rec, n, NULL);
out:
	json_tokener_free(tok);
	json_object_put(doc);
	free(text);
	return r < 0 ? 1 : 0;
}
