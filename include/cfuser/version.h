/* cfuser/version.h: the version of cfuser, the one place it is written.
 *
 * CMake's project version, the package version file, pkg-config's Version, `cfuser
 * --version` and the Python package's cfuser.__version__ are all read from (or tested
 * against) these macros. cf_version() is the version of the library actually loaded, which
 * may differ from the header a program was compiled with. */
#ifndef CFUSER_VERSION_H
#define CFUSER_VERSION_H

#include <stddef.h>

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
/* The loaded library's sizeof of a struct a binding lays out itself (Python's ctypes):
 * "cf_executor_options", "cf_launch_params", "cf_op_info", "DLTensor" or
 * "DLManagedTensor"; 0 for any other name. A binding compares it with its own layout
 * when it loads the library, so a package and a library of different versions fail
 * there, not by reading a field past the end of a struct. */
CF_API size_t cf_struct_size(const char *name);

#ifdef __cplusplus
}
#endif
#endif
