/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A parameter a callback signature imposes but this callback does not use. */
#define _unused_ __attribute__((unused))

/* A macro's value as a string literal: TL_XSTR(4096) is "4096". */
#define TL_STR_(x) #x
#define TL_XSTR(x) TL_STR_(x)
