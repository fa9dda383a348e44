/* executor/version.c: cf_version, the loaded library's version (include/cfuser/version.h). */
#include "cfuser/version.h"

const char *cf_version(void) { return CF_VERSION_STRING; }
