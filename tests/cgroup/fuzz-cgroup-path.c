/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Cgroup names come from whoever can mkdir in the cgroup tree (delegated
 * subtrees, nested runtimes): the parser must hold for any bytes. Inputs go
 * up to twice PATH_MAX so the length limit itself is exercised. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_cgroup_path p, before;
	char *s;
	int r;

	if (size > 2 * PATH_MAX)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&p, 0x5a, sizeof(p));
	memcpy(&before, &p, sizeof(p));
	r = tl_cgroup_path_parse(s, &p);
	if (r < 0) {
		if (r != -EINVAL || memcmp(&p, &before, sizeof(p)) != 0)
			abort();
	} else {
		if (r != 0 || memchr(p.pod_uid, '\0', sizeof(p.pod_uid)) == NULL ||
		    memchr(p.container_id, '\0', sizeof(p.container_id)) == NULL)
			abort();
		/* ids are only ever set together with the kinds that carry them */
		if (p.container_id[0] && p.kind != TL_CGROUP_CONTAINER && !p.conmon)
			abort();
		if (p.pod_uid[0] && p.driver == TL_DRIVER_UNKNOWN)
			abort();
		if (p.kind == TL_CGROUP_SANDBOX || (p.conmon && p.kind != TL_CGROUP_OTHER))
			abort();
	}
	free(s);
	return 0;
}
