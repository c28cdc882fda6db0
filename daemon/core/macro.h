/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A parameter a callback signature imposes but this callback does not use. */
#define _unused_ __attribute__((unused))
