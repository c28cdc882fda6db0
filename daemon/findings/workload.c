/* SPDX-License-Identifier: Apache-2.0 */
/* A Pod's workload from its owner (workload.h). */
#include <string.h>

#include "workload.h"

bool tl_workload_deployment_of(const char *rs, char *ret, size_t size)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	const char *dash = rs ? strrchr(rs, '-') : NULL;
	size_t n;

	if (!dash || dash == rs || !dash[1] || strlen(dash + 1) > 10)
		return false;
	for (const char *p = dash + 1; *p; p++)
		if (!strchr(alphabet, *p))
			return false;
	n = (size_t)(dash - rs);
	if (n >= size)
		return false;
	memcpy(ret, rs, n);
	ret[n] = '\0';
	return true;
}

/* A Job a CronJob made: NAME-TIME, TIME its scheduled time in minutes
 * since the epoch (8 digits until the year 2160). */
static bool cronjob_of(const char *job, char *ret, size_t size)
{
	const char *dash = strrchr(job, '-');
	size_t digits, n;

	if (!dash || dash == job)
		return false;
	digits = strlen(dash + 1);
	if (digits < 8 || digits > 10 || strspn(dash + 1, "0123456789") != digits)
		return false;
	n = (size_t)(dash - job);
	if (n >= size)
		return false;
	memcpy(ret, job, n);
	ret[n] = '\0';
	return true;
}

bool tl_workload_of(const char *owner_kind, const char *owner_name, const char **kind, char *name,
		    size_t size)
{
	if (!owner_kind || !owner_kind[0] || !owner_name || !owner_name[0] || !size)
		return false;
	if (strcmp(owner_kind, "ReplicaSet") == 0 &&
	    tl_workload_deployment_of(owner_name, name, size)) {
		*kind = "Deployment";
		return true;
	}
	if (strcmp(owner_kind, "Job") == 0 && cronjob_of(owner_name, name, size)) {
		*kind = "CronJob";
		return true;
	}
	if (strlen(owner_name) >= size)
		return false;
	memcpy(name, owner_name, strlen(owner_name) + 1);
	*kind = owner_kind;
	return true;
}
