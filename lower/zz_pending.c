/* TEMPORARY (removed before commit): weak fallbacks for passes still being written. */
#include "lower/lower.h"
__attribute__((weak)) void lower_tmem_pattern(LowerCtx *c) { (void)c; }
__attribute__((weak)) void lower_tmem_lifetime(LowerCtx *c) { (void)c; }
