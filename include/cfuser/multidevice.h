/* cfuser/multidevice.h: fusions sharded over a mesh of devices (nvFuser's multidevice).
 *
 * A device mesh is an array of device ids, 1-D or 2-D ({0 1 2 3}, {{0 1}{2 3}}). A tensor
 * placed on a mesh (cf_tv_set_device_mesh) is either replicated on every device of it, or
 * sharded: one of its logical axes is parallelized on deviceIdx.x (DIDx), the innermost
 * mesh axis, or deviceIdx.y (DIDy, the outer axis of a 2-D mesh), and each device holds a
 * contiguous block of that axis: device at mesh index k along the axis holds elements
 * [k * N/D, (k+1) * N/D) (N must be divisible by D). Two spellings, as in nvFuser:
 *   - the logical axis itself parallelized (its extent must equal D; each device holds
 *     one element of it): cf_parallelize(f, tv, axis, CF_PT_DIDX);
 *   - the outer split of the axis by D, parallelized (loop-domain sharding):
 *     cf_split_outer(f, tv, axis, D); cf_parallelize(f, tv, axis, CF_PT_DIDX).
 * A tensor without a mesh gets its producers' mesh and sharding (propagated through ops
 * axis by axis, as nvFuser's propagation does); a tensor the user placed on a mesh keeps
 * exactly the sharding the user gave (none: replicated). Fusion inputs without a mesh
 * take the mesh of the fusion and are replicated.
 *
 * Where a consumer needs another layout than its producer has (resharding), the fusion is
 * cut: compute segments run per device on the local shards (scheduled and compiled by
 * define and run), and communications move data between them: sharded -> replicated is
 * an allgather, replicated -> sharded a local slice (no communication), a reduction over
 * a sharded axis a local reduction then an allreduce (or a reduce-scatter where its
 * output, or every reader of it, is sharded on the same mesh axis), a tensor moving to
 * another mesh a broadcast (or a send/recv between single devices); a set placed in
 * another layout than its operand's is that communication (nvFuser's resharding set).
 * CFUSER_DUMP=segments prints the plan.
 *
 * Two executors run a plan: the host mesh simulates N devices in one process (a loop
 * over ranks, collectives over memory with NCCL's semantics), so every sharded fusion is
 * tested without GPUs; the NCCL executor runs one process per GPU (cf_comm_init). */
#ifndef CFUSER_MULTIDEVICE_H
#define CFUSER_MULTIDEVICE_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor.h"
#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most devices of a mesh, and of a simulated host mesh. */
#define CF_MESH_MAX_DEVICES 64

/* A mesh: ndims (1 or 2) axes of shape[i] devices, the ids row-major. A value: copy it
 * freely; a tensor keeps its own copy. */
typedef struct cf_device_mesh {
  int ndims;
  int shape[2];
  int devices[CF_MESH_MAX_DEVICES];
} cf_device_mesh;

/* Fills *m: ndims 1 or 2, shape[i] >= 1, at most CF_MESH_MAX_DEVICES devices, ids
 * distinct and >= 0 (devices NULL: 0, 1, 2, ...). */
CF_API cf_status cf_device_mesh_init(cf_device_mesh *m, int ndims, const int *shape, const int *devices);
/* The 1-D mesh {0 .. n-1} (nvFuser's DeviceMesh::createForNumDevices). */
CF_API cf_status cf_device_mesh_linear(cf_device_mesh *m, int n);
CF_API int cf_device_mesh_size(const cf_device_mesh *m);
/* The position of device in m (row-major), or -1 when m does not hold it. */
CF_API int cf_device_mesh_index(const cf_device_mesh *m, int device);
CF_API bool cf_device_mesh_equal(const cf_device_mesh *a, const cf_device_mesh *b);
/* Prints nvFuser's notation, "DeviceMesh{0 1}" or "DeviceMesh{{0 1}{2 3}}", into buf. */
CF_API void cf_device_mesh_str(const cf_device_mesh *m, char *buf, size_t len);

/* Places tv on mesh m (copied into the fusion). Printed after the tensor's domain:
 * T0_g_float[ideviceIdx.x0{2}, iS1{4}] (DeviceMesh{0 1}). */
CF_API cf_status cf_tv_set_device_mesh(cf_fusion *f, cf_tv *tv, const cf_device_mesh *m);
/* tv's mesh, or NULL when it has none. */
CF_API const cf_device_mesh *cf_tv_device_mesh(const cf_tv *tv);

/* Gives every tensor without a mesh its producers' mesh and sharding, as the executors
 * do (nvFuser's sharding propagation), so that printing shows them: each of its logical
 * axes mapped to a sharded producer axis is parallelized on that axis's DID type (a
 * split axis is split the same way). Errors name the tensors: producers on different
 * meshes, an axis sharded where the mesh has no such axis, a sharding cfuser does not
 * take (see the top of this file). */
CF_API cf_status cf_propagate_shardings(cf_fusion *f);
/* The logical axis of tv sharded on p (CF_PT_DIDX or CF_PT_DIDY) after propagation, or
 * -1 when none (or on an error, recorded on f). */
CF_API int cf_tv_sharded_axis(cf_fusion *f, cf_tv *tv, cf_parallel_type p);

/* The shard that device holds of `global`, a host tensor of tv's logical shape (reduction
 * axes left out) (nvFuser's shardTensor): a new contiguous host tensor in *local, or, for
 * a device outside tv's mesh, an error. Refused with the tensor and axis named: a size
 * not divisible by the mesh axis. */
CF_API cf_status cf_shard_tensor(cf_fusion *f, cf_tv *tv, const DLTensor *global, int device, DLManagedTensor **local);

/* ---- the multi-device executor (define and run on a mesh) ---------------------------- */

typedef struct cf_mesh_executor cf_mesh_executor;
typedef struct cf_comm cf_comm;

/* An executor for f (unscheduled, sharded as above); f is copied, and may be destroyed
 * after. NULL only when out of memory; an error of f is reported by each run. opts (NULL:
 * defaults) go to every compute segment's define-and-run cache, but the backend follows
 * where the shards live, not the machine: cf_mesh_run_host runs every device on the host
 * backend (its shards and collectives are host memory), even where a GPU exists or
 * CFUSER_BACKEND says cuda; cf_mesh_run runs on CUDA. CF_BACKEND_AUTO means that backend;
 * naming the other one is refused by the run with the reason. */
CF_API cf_mesh_executor *cf_mesh_executor_create(cf_fusion *f, const cf_executor_options *opts);
CF_API void cf_mesh_executor_destroy(cf_mesh_executor *x);
/* The message of the last failed call on x, or "". */
CF_API const char *cf_mesh_executor_error(const cf_mesh_executor *x);

/* The host mesh: runs f on ndevices simulated devices (ids 0 .. ndevices-1) in this
 * process, every one on the host backend. inputs[d * ninputs + i] is device d's local
 * shard of input i (host tensors, kDLCPU or kDLCUDAHost: a shard elsewhere is refused,
 * naming the device and input; NULL for a device outside the input's mesh);
 * outputs[d * noutputs + o] receives device d's shard of output o (NULL for a device
 * outside its mesh), freed by the caller with cf_tensor_free. Collectives run over
 * memory with NCCL's semantics; each compute segment runs through define and run, once
 * per device. */
CF_API cf_status cf_mesh_run_host(cf_mesh_executor *x, int ndevices, int ninputs, const DLTensor *const *inputs,
                                  int noutputs, DLManagedTensor **outputs);

/* The plan of the last run (the steps: compute segments and communications), in the
 * form CFUSER_DUMP=segments prints; an error when nothing ran yet. */
CF_API cf_status cf_mesh_executor_print_plan(cf_mesh_executor *x, FILE *out);
/* Compute segments and communications of the last run's plan. */
CF_API int cf_mesh_executor_num_segments(const cf_mesh_executor *x);
CF_API int cf_mesh_executor_num_communications(const cf_mesh_executor *x);

/* ---- NCCL: one process per GPU ------------------------------------------------------- */

/* Whether NCCL can be used here (libnccl.so.2 loads and has the entry points cfuser
 * calls); when not, *why says what is missing ("NCCL unavailable: libnccl.so.2 not
 * found"). The library is loaded with dlopen, once. */
CF_API bool cf_nccl_available(const char **why);

/* Joins the process group of this process: rank and world size from RANK and WORLD_SIZE
 * (torchrun's), the GPU from LOCAL_RANK, NCCL's unique id from rank 0 through a TCP store
 * at MASTER_ADDR:MASTER_PORT (rank 0 serves), or through the file CFUSER_NCCL_ID_FILE
 * when set. The communicator is non-blocking: every NCCL wait polls its asynchronous
 * error with a deadline of timeout_ms (0: CFUSER_NCCL_TIMEOUT_MS, default 60000), and a
 * failure or timeout aborts the communicator and is reported. */
CF_API cf_status cf_comm_init(cf_comm **comm, int timeout_ms, char *err, size_t errlen);
CF_API void cf_comm_destroy(cf_comm *comm);
CF_API int cf_comm_rank(const cf_comm *comm);
CF_API int cf_comm_size(const cf_comm *comm);
/* The message of the last failure on comm, or "". */
CF_API const char *cf_comm_error(const cf_comm *comm);
/* Reports a failure of this rank to every rank (they see it within their timeout, never
 * hang): each rank's next collective returns CF_ERR_RUNTIME naming the failed rank. */
CF_API cf_status cf_comm_report_failure(cf_comm *comm, const char *what);

/* Runs f on this process's GPU, on the CUDA backend: inputs are this device's local
 * shards (CUDA tensors: a shard in host memory is refused, named),
 * outputs receive its shards (allocated, freed with cf_tensor_free). Collectives run
 * through NCCL on a stream of their own ordered by events. A failure on any rank is
 * reported on every rank within the communicator's timeout. */
CF_API cf_status cf_mesh_run(cf_mesh_executor *x, cf_comm *comm, int ninputs, const DLTensor *const *inputs,
                             int noutputs, DLManagedTensor **outputs);

#ifdef __cplusplus
}
#endif
#endif
