// Asks the installed libmemcached (Debian 12: libmemcached-dev 1.1.4) which server
// each key maps to, offline: memcached_generate_hash() builds the continuum and
// looks the key up without contacting any server.
//
// Built and run by libmemcached_oracle.py (cc ... $(pkg-config --cflags --libs
// libmemcached)); it is not part of chash.
//
//   libmemcached_oracle MODE HASH SERVERS KEYS
//     MODE     weighted (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED=1)
//              ketama   (MEMCACHED_BEHAVIOR_KETAMA=1)
//              spy      (distribution CONSISTENT_KETAMA_SPY)
//     HASH     keep (the key hash the MODE sets), or one of default md5 crc fnv1_64
//              fnv1a_64 fnv1_32 fnv1a_32 hsieh murmur jenkins murmur3, set with
//              MEMCACHED_BEHAVIOR_HASH after MODE
//     SERVERS  "HOST PORT WEIGHT" lines, added in order with
//              memcached_server_add_with_weight()
//     KEYS     one key a line (the bytes before '\n'; the file ends with '\n')
//   Output: "server I HOST PORT" for each server as libmemcached holds it, then one
//   line per key: the index memcached_generate_hash() returned.
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hash_by_name(const char *name, memcached_hash_t *out) {
  static const struct {
    const char *name;
    memcached_hash_t hash;
  } table[] = {
      {"default", MEMCACHED_HASH_DEFAULT}, {"md5", MEMCACHED_HASH_MD5},
      {"crc", MEMCACHED_HASH_CRC},         {"fnv1_64", MEMCACHED_HASH_FNV1_64},
      {"fnv1a_64", MEMCACHED_HASH_FNV1A_64}, {"fnv1_32", MEMCACHED_HASH_FNV1_32},
      {"fnv1a_32", MEMCACHED_HASH_FNV1A_32}, {"hsieh", MEMCACHED_HASH_HSIEH},
      {"murmur", MEMCACHED_HASH_MURMUR},   {"jenkins", MEMCACHED_HASH_JENKINS},
      {"murmur3", MEMCACHED_HASH_MURMUR3},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (strcmp(name, table[i].name) == 0) {
      *out = table[i].hash;
      return 1;
    }
  }
  return 0;
}

static char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (size_t got; buf != NULL && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  *size = len;
  return buf;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s weighted|ketama|spy HASH SERVERS KEYS\n", argv[0]);
    return 2;
  }
  memcached_st *m = memcached_create(NULL);
  if (m == NULL) return 1;
  memcached_return_t rc;
  if (strcmp(argv[1], "weighted") == 0) {
    rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
  } else if (strcmp(argv[1], "ketama") == 0) {
    rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA, 1);
  } else if (strcmp(argv[1], "spy") == 0) {
    rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY);
  } else {
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  if (rc != MEMCACHED_SUCCESS) {
    fprintf(stderr, "mode: %s\n", memcached_strerror(m, rc));
    return 1;
  }
  if (strcmp(argv[2], "keep") != 0) {
    memcached_hash_t hash;
    if (!hash_by_name(argv[2], &hash)) {
      fprintf(stderr, "unknown hash %s\n", argv[2]);
      return 2;
    }
    rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, (uint64_t) hash);
    if (rc != MEMCACHED_SUCCESS) {
      fprintf(stderr, "hash %s: %s\n", argv[2], memcached_strerror(m, rc));
      return 1;
    }
  }
  FILE *servers = fopen(argv[3], "r");
  if (servers == NULL) {
    perror(argv[3]);
    return 1;
  }
  char host[1024];
  unsigned port;
  unsigned weight;
  while (fscanf(servers, "%1023s %u %u", host, &port, &weight) == 3) {
    rc = memcached_server_add_with_weight(m, host, (in_port_t) port, weight);
    if (rc != MEMCACHED_SUCCESS) {
      fprintf(stderr, "add %s %u %u: %s\n", host, port, weight, memcached_strerror(m, rc));
      return 1;
    }
  }
  fclose(servers);
  const uint32_t count = memcached_server_count(m);
  for (uint32_t i = 0; i < count; ++i) {
    const memcached_instance_st *s = memcached_server_instance_by_position(m, i);
    printf("server %u %s %u\n", i, memcached_server_name(s), (unsigned) memcached_server_port(s));
  }
  size_t size = 0;
  char *keys = read_all(argv[4], &size);
  if (keys == NULL) {
    perror(argv[4]);
    return 1;
  }
  for (size_t start = 0; start < size;) {
    char *nl = memchr(keys + start, '\n', size - start);
    const size_t end = nl ? (size_t)(nl - keys) : size;
    printf("%u\n", memcached_generate_hash(m, keys + start, end - start));
    start = end + 1;
  }
  free(keys);
  memcached_free(m);
  return 0;
}
