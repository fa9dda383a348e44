/* executor/mesh_store.c: a small TCP store of our own, as torchrun's launchers expect
 * (MASTER_ADDR, MASTER_PORT): rank 0 serves, every other rank keeps one connection to
 * it. It carries NCCL's unique id once, then stays open as the group's failure channel:
 * a rank that fails says so in one line, rank 0 relays it to all, and a rank whose
 * connection closes (it crashed, or was killed) is reported as gone. Every wait has a
 * deadline, so nothing here can hang.
 * Key decision: failures travel outside NCCL. A rank that fails before a collective
 * never enters it, and NCCL alone would leave its peers waiting until their timeout;
 * through the store they learn it at once, abort their communicators and report the
 * failed rank's own message. */
#include "executor/mesh_store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STORE_MAX_RANKS 1024

struct MeshStore {
  int rank, size, timeout_ms;
  int listen_fd;
  int *fds;        /* rank 0: the connection of each rank (its own -1); others: fds[0] */
  char failed[256]; /* the first failure heard, or "" */
};

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static bool io_all(int fd, void *buf, size_t n, bool write_it, long long deadline) {
  size_t done = 0;
  while (done < n) {
    struct pollfd p = {fd, write_it ? POLLOUT : POLLIN, 0};
    long long left = deadline - now_ms();
    if (left <= 0 || poll(&p, 1, (int)left) <= 0) return false;
    ssize_t k = write_it ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL) : recv(fd, (char *)buf + done, n - done, 0);
    if (k <= 0) return false;
    done += (size_t)k;
  }
  return true;
}

static int connect_to(const char *addr, int port, long long deadline) {
  char ports[16];
  snprintf(ports, sizeof ports, "%d", port);
  while (now_ms() < deadline) {
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(addr, ports, &hints, &ai) == 0) {
      int fd = socket(ai->ai_family, ai->ai_socktype, 0);
      if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        freeaddrinfo(ai);
        return fd;
      }
      if (fd >= 0) close(fd);
      freeaddrinfo(ai);
    }
    usleep(50000);
  }
  return -1;
}

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, STORE_MAX_RANKS)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Rank 0: accepts every other rank; each says its rank first. */
static bool accept_all(MeshStore *s, long long deadline, char *err, size_t errlen) {
  for (int got = 1; got < s->size; got++) {
    struct pollfd p = {s->listen_fd, POLLIN, 0};
    long long left = deadline - now_ms();
    int fd = left > 0 && poll(&p, 1, (int)left) > 0 ? accept(s->listen_fd, NULL, NULL) : -1;
    int32_t r = -1;
    if (fd < 0 || !io_all(fd, &r, sizeof r, false, deadline) || r <= 0 || r >= s->size || s->fds[r] >= 0) {
      if (fd >= 0) close(fd);
      snprintf(err, errlen, "mesh store: %d of %d ranks joined within %d ms", got, s->size, s->timeout_ms);
      return false;
    }
    s->fds[r] = fd;
  }
  return true;
}

MeshStore *mesh_store_open(int rank, int size, const char *addr, int port, int timeout_ms, char *err, size_t errlen) {
  if (size < 1 || size > STORE_MAX_RANKS || rank < 0 || rank >= size) {
    snprintf(err, errlen, "mesh store: rank %d of %d is out of range (1..%d ranks)", rank, size, STORE_MAX_RANKS);
    return NULL;
  }
  MeshStore *s = calloc(1, sizeof *s);
  if (s) s->fds = malloc(sizeof(int) * (size_t)size);
  if (!s || !s->fds) {
    free(s);
    snprintf(err, errlen, "mesh store: out of memory");
    return NULL;
  }
  *s = (MeshStore){rank, size, timeout_ms, -1, s->fds, ""};
  for (int i = 0; i < size; i++) s->fds[i] = -1;
  long long deadline = now_ms() + timeout_ms;
  bool ok;
  if (rank == 0) {
    ok = (s->listen_fd = listen_on(port)) >= 0;
    if (!ok) snprintf(err, errlen, "mesh store: cannot listen on port %d: %s", port, strerror(errno));
    else ok = accept_all(s, deadline, err, errlen);
  } else {
    int32_t r = rank;
    ok = (s->fds[0] = connect_to(addr, port, deadline)) >= 0 && io_all(s->fds[0], &r, sizeof r, true, deadline);
    if (!ok) snprintf(err, errlen, "mesh store: rank %d cannot reach rank 0 at %s:%d within %d ms", rank, addr, port, timeout_ms);
  }
  if (!ok) mesh_store_close(s), s = NULL;
  return s;
}

void mesh_store_close(MeshStore *s) {
  if (!s) return;
  for (int i = 0; i < s->size; i++)
    if (s->fds[i] >= 0) close(s->fds[i]);
  if (s->listen_fd >= 0) close(s->listen_fd);
  free(s->fds);
  free(s);
}

cf_status mesh_store_broadcast(MeshStore *s, void *bytes, size_t n, char *err, size_t errlen) {
  long long deadline = now_ms() + s->timeout_ms;
  for (int i = 0; i < s->size; i++) {
    int fd = s->rank == 0 ? s->fds[i] : i == 0 ? s->fds[0] : -1;
    if (fd < 0) continue;
    if (!io_all(fd, bytes, n, s->rank == 0, deadline)) {
      snprintf(err, errlen, "mesh store: the id did not reach %s within %d ms", s->rank == 0 ? "every rank" : "this rank",
               s->timeout_ms);
      return CF_ERR_RUNTIME;
    }
  }
  return CF_OK;
}

/* A failure line: 'F', the rank, the message, '\n'. */
static void send_line(int fd, const char *line) {
  if (fd >= 0) (void)!send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void mesh_store_report(MeshStore *s, const char *what) {
  char line[300];
  snprintf(line, sizeof line, "rank %d failed: %.240s\n", s->rank, what);
  if (!s->failed[0]) snprintf(s->failed, sizeof s->failed, "%.*s", (int)strcspn(line, "\n"), line);
  for (int i = 0; i < s->size; i++) send_line(s->fds[i], line);
}

/* Reads what fd has (never blocking); a closed connection is reported as `gone`. */
static bool poll_fd(MeshStore *s, int fd, int who) {
  struct pollfd p = {fd, POLLIN, 0};
  if (fd < 0 || poll(&p, 1, 0) <= 0) return false;
  char buf[300];
  ssize_t k = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (k <= 0) snprintf(buf, sizeof buf, "rank %d exited", who);
  else buf[k] = 0;
  buf[strcspn(buf, "\n")] = 0;
  if (!s->failed[0]) snprintf(s->failed, sizeof s->failed, "%.250s", buf);
  return true;
}

bool mesh_store_failed(MeshStore *s, char *msg, size_t len) {
  if (!s) return false;
  if (!s->failed[0]) {
    if (s->rank == 0) {
      for (int i = 1; i < s->size; i++)
        if (poll_fd(s, s->fds[i], i)) {
          char line[300];
          snprintf(line, sizeof line, "%s\n", s->failed);
          for (int j = 1; j < s->size; j++)
            if (j != i) send_line(s->fds[j], line);
          break;
        }
    } else poll_fd(s, s->fds[0], 0);
  }
  if (s->failed[0] && msg) snprintf(msg, len, "%s", s->failed);
  return s->failed[0] != 0;
}

cf_status mesh_id_file_exchange(const char *path, int rank, void *bytes, size_t n, int timeout_ms, char *err,
                                size_t errlen) {
  if (rank == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *fp = fopen(tmp, "wb");
    bool ok = fp && fwrite(bytes, 1, n, fp) == n;
    if (fp) ok &= fclose(fp) == 0;
    if (ok && rename(tmp, path) == 0) return CF_OK;
    snprintf(err, errlen, "mesh: cannot write the NCCL id file %s: %s", path, strerror(errno));
    return CF_ERR_IO;
  }
  long long deadline = now_ms() + timeout_ms;
  while (now_ms() < deadline) {
    FILE *fp = fopen(path, "rb");
    size_t got = fp ? fread(bytes, 1, n, fp) : 0;
    if (fp) fclose(fp);
    if (got == n) return CF_OK;
    usleep(20000);
  }
  snprintf(err, errlen, "mesh: the NCCL id file %s did not appear within %d ms", path, timeout_ms);
  return CF_ERR_RUNTIME;
}
