/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The workload a Pod belongs to, from its controller owner (the document's
 * pod.owner, the Pod model's owner_kind/owner_name) alone, without asking
 * the API server: what per-workload metrics and the OTLP resource name
 * (docs/export.md). */
#include <stdbool.h>
#include <stddef.h>

/* The Deployment of a ReplicaSet named NAME-HASH, HASH in the alphabet of
 * Kubernetes' SafeEncodeString (the pod-template-hash the Deployment
 * controller appends): NAME into ret[size]. False for a name without such
 * a hash (a ReplicaSet of its own) or one that does not fit. */
bool tl_workload_deployment_of(const char *replicaset, char *ret, size_t size);

/* The workload of a Pod whose controller is owner_kind/owner_name: a
 * ReplicaSet's Deployment (tl_workload_deployment_of; an Argo Rollout's
 * ReplicaSets are named the same way, so a Rollout's Pods are its own), a
 * Job named NAME-TIME (TIME 8 to 10 digits, as the CronJob controller
 * names the Jobs it makes) CronJob NAME's, else the owner itself
 * (StatefulSet, DaemonSet, another Job, a ReplicaSet without a hash, any
 * other controller). *kind is "Deployment" or the
 * owner's kind; the name goes into name[size]. False when there is no
 * owner (a bare Pod), or the name does not fit. Kinds are "Deployment",
 * "CronJob" or the owner's. */
bool tl_workload_of(const char *owner_kind, const char *owner_name, const char **kind, char *name,
		    size_t size);
