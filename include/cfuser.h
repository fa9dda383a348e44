/* cfuser.h: the umbrella header of cfuser, a tensor-fusion compiler for NVIDIA GPUs.
 *
 *   fusion.h    building a Fusion of TensorViews, printing it
 *   optable.h   the op table (names, kinds, dtypes) for frontends and conformance tests
 *   schedule.h  split, merge, reorder, swizzle, parallelize, memory types, inlining
 *   domain.h    a tensor's root, logical, allocation and loop domains; IterDomain maps
 *   tensor.h    DLPack host tensors and the reference evaluator
 *   executor.h  compiling and running kernels (CUDA or the host backend)
 *   execute.h   define and run: an unscheduled fusion scheduled, compiled and cached per call signature
 *   multidevice.h  device meshes, sharded tensors, the host-mesh and NCCL executors
 *   layout.h    CuTe's layout algebra
 *   cache.h     the on-disk kernel cache: its size, `cfuser cache info|clear`
 *   version.h   CF_VERSION_MAJOR/MINOR/PATCH, CF_VERSION_STRING, cf_version()
 *   repro.h     a standalone C reproducer of a fusion and its call (cf_fusion_write_repro) */
#ifndef CFUSER_H
#define CFUSER_H

#include "cfuser/status.h"
#include "cfuser/types.h"
#include "cfuser/fusion.h"
#include "cfuser/optable.h"
#include "cfuser/schedule.h"
#include "cfuser/domain.h"
#include "cfuser/tensor.h"
#include "cfuser/executor.h"
#include "cfuser/execute.h"
#include "cfuser/multidevice.h"
#include "cfuser/layout.h"
#include "cfuser/picture.h"
#include "cfuser/cache.h"
#include "cfuser/repro.h"
#include "cfuser/version.h"

#endif
