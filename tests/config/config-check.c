/* SPDX-License-Identifier: Apache-2.0 */
/* Validates a termlined config file the way the agent does at start:
 * config-check FILE [FLAG...]. Exit 0 and print the effective settings when
 * it is valid, 2 and the agent's error line when not. Used by the manifest
 * test on the ConfigMap's config.yaml. */
#include <stdio.h>
#include <stdlib.h>

#include "options.h"

int main(int argc, char **argv)
{
	struct tl_options o = {0};
	char err[512];
	char **args;
	char *text = NULL;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: config-check FILE [FLAG...]\n");
		return 2;
	}
	args = calloc((size_t)argc + 3, sizeof(*args));
	if (!args)
		return 2;
	args[0] = "termlined";
	args[1] = "--config";
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	r = tl_options_parse(&o, argc + 1, args, err, sizeof(err));
	free(args);
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (r > 0)
		return 0;
	if (tl_options_render(&o, &text) < 0) {
		tl_options_free(&o);
		return 2;
	}
	printf("%s%s\n", text, o.config_digest);
	free(text);
	tl_options_free(&o);
	return 0;
}
