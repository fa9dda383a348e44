/* cfuser/version.h: the version of cfuser, the one place it is written.
 *
 * CMake's project version, the package version file, pkg-config's Version, `cfuser
 * --version` and the Python package's cfuser.__version__ are all read from (or tested
 * against) these macros. cf_version() is the version of the library actually loaded, which
 * may differ from the header a program was compiled with. */
#ifndef CFUSER_VERSION_H
#define CFUSER_VERSION_H

#include "cfuser/status.h"

#define CF_VERSION_MAJOR 0
#define CF_VERSION_MINOR 1
#define CF_VERSION_PATCH 0
#define CF_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* The loaded library's version, e.g. "0.1.0". */
CF_API const char *cf_version(void);

#ifdef __cplusplus
}
#endif
#endif
