/* SPDX-License-Identifier: Apache-2.0 */
/* termline-findings IN DIR FILE: reads the timeline document IN (written by
 * the agent with empty "findings"), computes its findings with the rules of
 * docs/findings.md, writes the document with them to DIR/FILE atomically
 * (temp file, fsync, rename, fsync DIR), removes IN, and prints the number
 * of findings and of failed requests on stdout ("N F").
 *
 * The agent runs this as a child so that neither parsing a 20k-event
 * document with json-c (~0.2 s) nor the syncs and the rename stall its
 * loop, and so that the tree's memory is returned to the system when the
 * child exits rather than left in the agent's heap (docs/http-api.md,
 * "Findings of a closed timeline"). Exit status 0 on success, 1 on any failure (IN is then left
 * for the agent, which writes it as it is). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "fileio.h"
#include "findings.h"

/* A document of the agent is at most a few tens of MiB (max events per
 * timeline, docs/timeline-format.md); anything larger is not one of its
 * own. */
#define MAX_DOC_BYTES (512ul << 20)

static int read_file(const char *path, char **ret, size_t *len)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (unsigned long)st.st_size > MAX_DOC_BYTES) {
		r = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			free(buf);
			goto out;
		}
		off += (size_t)n;
	}
	buf[off] = '\0';
	*ret = buf;
	*len = off;
out:
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	struct json_tokener *tok = NULL;
	struct json_object *doc = NULL, *findings;
	const char *out;
	char *text = NULL;
	struct tl_model m;
	size_t len = 0, n = 0, failed = 0;
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: termline-findings IN DIR FILE\n");
		return 1;
	}
	r = read_file(argv[1], &text, &len);
	if (r < 0) {
		fprintf(stderr, "termline-findings: %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	tok = json_tokener_new();
	if (tok)
		doc = json_tokener_parse_ex(tok, text, (int)len);
	if (!doc || json_tokener_get_error(tok) != json_tokener_success) {
		fprintf(stderr, "termline-findings: %s: not a JSON document\n", argv[1]);
		r = -EBADMSG;
		goto out;
	}
	free(text);
	text = NULL;
	r = tl_findings_attach(doc);
	if (r < 0) {
		fprintf(stderr, "termline-findings: %s: %s\n", argv[1], strerror(-r));
		goto out;
	}
	if (json_object_object_get_ex(doc, "findings", &findings))
		n = json_object_array_length(findings);
	/* failed requests as kubectl-termline counts them: a request seen
	 * twice (socket and log) once */
	if (tl_model_build(doc, &m) == 0)
		for (size_t i = 0; i < m.n_req; i++)
			failed += m.reqs[i].failed && !m.reqs[i].dup;
	tl_model_done(&m);
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
	if (printf("%zu %zu\n", n, failed) < 0 || fflush(stdout) != 0)
		r = -EIO;
out:
	json_tokener_free(tok);
	json_object_put(doc);
	free(text);
	return r < 0 ? 1 : 0;
}
