/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for termlined's option parser. Input starting with 0x01
 * is an argv (NUL-separated words); anything else is a --config file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "options.h"

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int config_fd = -1;

int LLVMFuzzerInitialize(int *argc _unused_, char ***argv _unused_)
{
	setenv("NODE_NAME", "fuzz-node", 1);
	/* --help and --version print; keep the fuzzer's output readable. */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	config_fd = memfd_create("termline-fuzz-config", MFD_CLOEXEC);
	if (config_fd < 0)
		abort();
	return 0;
}

static void check_result(int r, struct tl_options *o, const char *err)
{
	if (r < 0 && (err[0] == '\0' || strchr(err, '\n')))
		abort();
	if (r == 0 && strncmp(o->config_digest, "sha256:", 7) != 0)
		abort();
	tl_options_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_options o = {0};
	char err[512] = "";
	int r;

	if (size > 0 && data[0] == 0x01) {
		char *buf = malloc(size);
		char *args[MAX_ARGS + 2];
		int argc = 0;

		if (!buf)
			return 0;
		memcpy(buf, data + 1, size - 1);
		buf[size - 1] = '\0';
		args[argc++] = "termlined";
		for (char *p = buf; p < buf + size - 1 && argc < MAX_ARGS; p += strlen(p) + 1)
			args[argc++] = p;
		args[argc] = NULL;
		r = tl_options_parse(&o, argc, args, err, sizeof(err));
		check_result(r, &o, err);
		free(buf);
		return 0;
	}

	char path[64];
	char *args[] = {"termlined", "--config", path, NULL};

	if (ftruncate(config_fd, 0) < 0 || pwrite(config_fd, data, size, 0) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", config_fd);
	r = tl_options_parse(&o, 3, args, err, sizeof(err));
	check_result(r, &o, err);
	return 0;
}
