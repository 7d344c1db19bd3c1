/* Out of memory through the C API: a C process linking libchash.so limits
 * its own address space (RLIMIT_AS), then asks for a ring far too big for
 * it. The build must answer CHASH_E_OUT_OF_MEMORY; no exception may cross
 * the API (an uncaught one would abort this process, failing the test).
 * Then, with almost no address space left, every allocating call must
 * answer CHASH_OK or CHASH_E_OUT_OF_MEMORY; and with the limit lifted, the
 * library still works. Prints "ok ..." and exits 0 on success. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "chash/chash_c.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* The process's address space now, in bytes (first field of statm). */
static unsigned long long address_space(void) {
  unsigned long long pages = 0;
  FILE *statm = fopen("/proc/self/statm", "r");
  if (statm == NULL || fscanf(statm, "%llu", &pages) != 1) {
    fprintf(stderr, "cannot read /proc/self/statm\n");
    exit(2);
  }
  fclose(statm);
  return pages * 4096ull;
}

static void limit_address_space(unsigned long long bytes) {
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) != 0) exit(2);
  limit.rlim_cur = bytes;
  if (setrlimit(RLIMIT_AS, &limit) != 0) {
    perror("setrlimit");
    exit(2);
  }
}

/* A pingora-v2 builder of `nodes` servers 10.x.y.z:80 of `weight`. */
static int build(uint32_t nodes, uint32_t weight, uint32_t multiple, chash_ring **ring) {
  chash_builder *builder = NULL;
  uint32_t i;
  int rc = chash_builder_new(CHASH_FLAVOR_PINGORA_V2, multiple, &builder);
  if (rc != CHASH_OK) return rc;
  for (i = 0; i < nodes; ++i) {
    char address[32];
    sprintf(address, "10.%u.%u.%u:80", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    rc = chash_builder_add(builder, address, strlen(address), weight);
    if (rc != CHASH_OK) {
      chash_builder_free(builder);
      return rc;
    }
  }
  return chash_builder_build(builder, ring);
}

static int ok_or_oom(int rc) { return rc == CHASH_OK || rc == CHASH_E_OUT_OF_MEMORY; }

int main(void) {
  chash_ring *small = NULL, *huge = NULL, *ring = NULL;
  unsigned long long base;
  int rc, oom_answers = 0, i;
  const unsigned long long headroom = 256ull << 20;

  CHECK(build(50, 10, 16, &small) == CHASH_OK);
  base = address_space();
  limit_address_space(base + headroom);

  /* 4,096 servers x weight 16,384 x 16 = 2^30 points: 10 GiB at peak. */
  rc = build(4096, 16384, 16, &huge);
  printf("build of 2^30 points under %llu MiB of address space: %s (%s)\n", (base + headroom) >> 20,
         chash_strerror(rc), chash_last_error());
  CHECK(rc == CHASH_E_OUT_OF_MEMORY);
  CHECK(huge == NULL);
  CHECK(strlen(chash_last_error()) > 0);

  /* Almost nothing left: every allocating call answers ok or out of memory. */
  limit_address_space(address_space() + (64u << 10));
  for (i = 0; i < 20; ++i) {
    chash_node_mask *mask = NULL;
    chash_availability *availability = NULL;
    chash_migration *migration = NULL;
    chash_ring_stats stats = {.size = sizeof stats};
    uint8_t fingerprint[CHASH_FINGERPRINT_SIZE];
    const int results[] = {
        build(300, 5, 64, &ring),
        chash_node_mask_new(65536, 1, &mask),
        chash_availability_new(65536, &availability),
        chash_migration_new(small, small, 0, 0, &migration),
        chash_ring_stats_compute(small, &stats),
        chash_ring_fingerprint(small, fingerprint),
        chash_ring_backend_fingerprint(small, fingerprint),
    };
    size_t r;
    for (r = 0; r < sizeof(results) / sizeof(results[0]); ++r) {
      CHECK(ok_or_oom(results[r]));
      oom_answers += results[r] == CHASH_E_OUT_OF_MEMORY;
    }
    chash_ring_free(ring);
    ring = NULL;
    chash_node_mask_free(mask);
    chash_availability_free(availability);
    chash_migration_free(migration);
  }
  printf("allocating calls under a 64 KiB margin: %d answered out_of_memory\n", oom_answers);

  /* Lifted: the library still works. */
  limit_address_space(RLIM_INFINITY);
  CHECK(build(300, 5, 64, &ring) == CHASH_OK);
  CHECK(chash_ring_num_nodes(ring) == 300);
  CHECK(chash_ring_find(ring, "key", 3) < 300);
  CHECK(chash_ring_find(small, "key", 3) < 50);
  chash_ring_free(ring);
  chash_ring_free(small);
  if (failures != 0) return 1;
  printf("ok\n");
  return 0;
}
