/* executor/version.c: cf_version, the loaded library's version, and cf_struct_size, the
 * sizes of the public structs bindings lay out themselves (include/cfuser/version.h). */
#include <string.h>

#include "cfuser/executor.h"
#include "cfuser/optable.h"
#include "cfuser/version.h"

const char *cf_version(void) { return CF_VERSION_STRING; }

size_t cf_struct_size(const char *name) {
  static const struct {
    const char *name;
    size_t size;
  } sizes[] = {{"cf_executor_options", sizeof(cf_executor_options)},
               {"cf_launch_params", sizeof(cf_launch_params)},
               {"cf_op_info", sizeof(cf_op_info)},
               {"DLTensor", sizeof(DLTensor)},
               {"DLManagedTensor", sizeof(DLManagedTensor)}};
  for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
    if (!strcmp(name, sizes[i].name)) return sizes[i].size;
  return 0;
}
