/* executor/mesh_store.h: the bootstrap of a process group and its failure channel
 * (mesh_store.c). Internal. */
#ifndef CFUSER_MESH_STORE_H
#define CFUSER_MESH_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "cfuser/status.h"

typedef struct MeshStore MeshStore;

/* Joins the group: rank 0 listens on addr:port and accepts size-1 connections, the
 * others connect (retrying until timeout_ms). NULL with err set on failure. */
MeshStore *mesh_store_open(int rank, int size, const char *addr, int port, int timeout_ms, char *err, size_t errlen);
void mesh_store_close(MeshStore *s);
/* Rank 0's bytes (n of them, e.g. NCCL's unique id) to every rank, within the timeout. */
cf_status mesh_store_broadcast(MeshStore *s, void *bytes, size_t n, char *err, size_t errlen);
/* Tells every rank that this one failed (`what`, one line). */
void mesh_store_report(MeshStore *s, const char *what);
/* Whether some rank reported a failure or went away (its connection closed): the message
 * ("rank 1 failed: ...", "rank 2 exited") in msg. Never blocks; rank 0 relays what it
 * hears to the others, so each call there also forwards. */
bool mesh_store_failed(MeshStore *s, char *msg, size_t len);

/* The file variant (CFUSER_NCCL_ID_FILE): rank 0 writes the bytes atomically, the others
 * wait for the file until timeout_ms. */
cf_status mesh_id_file_exchange(const char *path, int rank, void *bytes, size_t n, int timeout_ms, char *err,
                                size_t errlen);

#endif
