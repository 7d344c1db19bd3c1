/* A C99 consumer of chash_c.h: builds a ring from a servers file and checks
 * every answer of a golden file recorded from the real nginx or
 * pingora-ketama. Compiled in tree with -std=c99 -pedantic -Werror (against
 * the static library) and out of tree through pkg-config against the
 * installed shared library; standard C only.
 *
 *   golden_route FLAVOR MULTIPLE SERVERS GOLDEN [route|iter|distinct]
 *
 * FLAVOR: nginx, pingora-v1 or pingora-v2; MULTIPLE: 0 for the default.
 * SERVERS: "ADDR [WEIGHT]" lines, '#' comments. GOLDEN:
 *   route     "key,addr" (split at the last comma): chash_ring_find,
 *             chash_ring_find_hash(chash_crc32) and chash_ring_find_keys
 *   iter      "key,addr1,...": the failover cursor (pingora node_iter)
 *   distinct  "key,addr1,...": the distinct-node walk, then its end
 * Prints "ok N" (N keys) and exits 0, or names the first mismatches and
 * exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash/chash_c.h"

#define MAX_LINE 8192
#define MAX_KEYS 100000
#define MAX_ANSWERS 16

static char *copy_text(const char *text, size_t len) {
  char *copy = (char *)malloc(len + 1);
  if (copy == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  return copy;
}

static void chomp(char *line) {
  size_t len = strlen(line);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
}

/* The flavor's name as libchash's table spells it (chash_flavor_from_name). */
static int parse_flavor(const char *name, uint32_t *flavor) {
  return chash_flavor_from_name(name, strlen(name), flavor) == CHASH_OK;
}

static chash_ring *build_ring(uint32_t flavor, uint32_t multiple, const char *path) {
  chash_builder *builder = NULL;
  chash_ring *ring = NULL;
  char line[MAX_LINE];
  unsigned line_number = 0;
  FILE *file = fopen(path, "r");
  int rc;
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  rc = chash_builder_new(flavor, multiple, &builder);
  if (rc != CHASH_OK) {
    fprintf(stderr, "chash_builder_new: %s: %s\n", chash_strerror(rc), chash_last_error());
    fclose(file);
    return NULL;
  }
  while (fgets(line, sizeof(line), file) != NULL) {
    char *address = line;
    char *end;
    unsigned long weight = 1;
    ++line_number;
    chomp(line);
    while (*address == ' ' || *address == '\t') ++address;
    if (*address == '\0' || *address == '#') continue;
    end = address;
    while (*end != '\0' && *end != ' ' && *end != '\t') ++end;
    if (*end != '\0') {
      *end++ = '\0';
      weight = strtoul(end, NULL, 10);
    }
    rc = chash_builder_add(builder, address, strlen(address), (uint32_t)weight);
    if (rc != CHASH_OK) {
      fprintf(stderr, "%s:%u: %s: %s\n", path, line_number, chash_strerror(rc),
              chash_builder_error(builder));
      chash_builder_free(builder);
      fclose(file);
      return NULL;
    }
  }
  fclose(file);
  rc = chash_builder_build(builder, &ring);
  if (rc != CHASH_OK) {
    fprintf(stderr, "build: %s: %s\n", chash_strerror(rc), chash_last_error());
    return NULL;
  }
  return ring;
}

/* The node's address, NUL-terminated, as written in the servers file. */
static const char *address_of(const chash_ring *ring, uint32_t node) {
  size_t len = 0;
  const char *address = chash_ring_node_address(ring, node, &len);
  return address == NULL ? "(none)" : address;
}

int main(int argc, char **argv) {
  uint32_t flavor;
  chash_ring *ring;
  const char *mode = argc > 5 ? argv[5] : "route";
  FILE *golden;
  char line[MAX_LINE];
  char **keys;
  size_t *key_lens;
  char **answers;
  uint32_t *batch;
  size_t n = 0, i, mismatches = 0;
  if (argc < 5 || !parse_flavor(argv[1], &flavor)) {
    fprintf(stderr, "usage: golden_route FLAVOR MULTIPLE SERVERS GOLDEN [route|iter|distinct]\n");
    return 2;
  }
  ring = build_ring(flavor, (uint32_t)strtoul(argv[2], NULL, 10), argv[3]);
  if (ring == NULL) return 2;
  golden = fopen(argv[4], "r");
  if (golden == NULL) {
    fprintf(stderr, "cannot open %s\n", argv[4]);
    return 2;
  }
  keys = (char **)calloc(MAX_KEYS, sizeof(char *));
  key_lens = (size_t *)calloc(MAX_KEYS, sizeof(size_t));
  answers = (char **)calloc(MAX_KEYS, sizeof(char *));
  batch = (uint32_t *)calloc(MAX_KEYS, sizeof(uint32_t));
  if (keys == NULL || key_lens == NULL || answers == NULL || batch == NULL) return 2;

  while (fgets(line, sizeof(line), golden) != NULL && n < MAX_KEYS) {
    char *split;
    chomp(line);
    if (line[0] == '#' || line[0] == '\0') continue;
    split = strcmp(mode, "route") == 0 ? strrchr(line, ',') : strchr(line, ',');
    if (split == NULL) {
      fprintf(stderr, "%s: a line without a comma\n", argv[4]);
      return 2;
    }
    keys[n] = copy_text(line, (size_t)(split - line));
    key_lens[n] = (size_t)(split - line);
    answers[n] = copy_text(split + 1, strlen(split + 1));
    ++n;
  }
  fclose(golden);
  if (n == 0) {
    fprintf(stderr, "%s: no answers\n", argv[4]);
    return 2;
  }

  if (strcmp(mode, "route") == 0) {
    int rc = chash_ring_find_keys(ring, (const char *const *)keys, key_lens, n, batch);
    if (rc != CHASH_OK) {
      fprintf(stderr, "chash_ring_find_keys: %s\n", chash_strerror(rc));
      return 1;
    }
    for (i = 0; i < n; ++i) {
      const uint32_t node = chash_ring_find(ring, keys[i], key_lens[i]);
      const uint32_t by_hash = chash_ring_find_hash(ring, chash_crc32(keys[i], key_lens[i]));
      if (node == CHASH_NO_NODE || strcmp(address_of(ring, node), answers[i]) != 0 ||
          by_hash != node || batch[i] != node) {
        if (++mismatches <= 5) {
          fprintf(stderr, "key '%s': want %s, got %s (by hash %s, batch %s)\n", keys[i], answers[i],
                  address_of(ring, node), address_of(ring, by_hash), address_of(ring, batch[i]));
        }
      }
    }
  } else if (strcmp(mode, "iter") == 0 || strcmp(mode, "distinct") == 0) {
    const int distinct = strcmp(mode, "distinct") == 0;
    /* The walk's memory: its size follows the ring (chash_walk_size). */
    uint64_t *memory = malloc(chash_walk_size(ring));
    chash_walk *walk = NULL;
    if (memory == NULL) return 2;
    for (i = 0; i < n; ++i) {
      chash_cursor cursor;
      const uint32_t hash = chash_crc32(keys[i], key_lens[i]);
      char *expected = answers[i];
      char *next;
      int step = 0, bad = 0;
      if (distinct) {
        bad |= chash_walk_start(memory, chash_walk_size(ring), ring, NULL, hash, &walk) !=
               CHASH_OK;
      } else {
        bad |= chash_ring_walk(ring, hash, &cursor) != CHASH_OK;
        bad |= chash_cursor_node(&cursor) != chash_ring_find_hash(ring, hash);
      }
      while (!bad && expected != NULL) {
        uint32_t node;
        next = strchr(expected, ',');
        if (next != NULL) *next++ = '\0';
        node = distinct ? chash_walk_next(walk) : chash_cursor_next(&cursor);
        if (node == CHASH_NO_NODE || strcmp(address_of(ring, node), expected) != 0) {
          bad = 1;
          if (mismatches < 5) {
            fprintf(stderr, "key '%s' step %d: want %s, got %s\n", keys[i], step, expected,
                    address_of(ring, node));
          }
        }
        expected = next;
        ++step;
      }
      /* A distinct walk ends once every node with points has come. */
      if (!bad && distinct && (uint32_t)step == chash_ring_nodes_with_points(ring) &&
          chash_walk_next(walk) != CHASH_NO_NODE) {
        bad = 1;
        if (mismatches < 5) fprintf(stderr, "key '%s': the walk did not end\n", keys[i]);
      }
      if (bad) ++mismatches;
    }
    free(memory);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }

  for (i = 0; i < n; ++i) {
    free(keys[i]);
    free(answers[i]);
  }
  free(keys);
  free(key_lens);
  free(answers);
  free(batch);
  chash_ring_free(ring);
  if (mismatches != 0) {
    fprintf(stderr, "%lu of %lu keys wrong\n", (unsigned long)mismatches, (unsigned long)n);
    return 1;
  }
  printf("ok %lu\n", (unsigned long)n);
  return 0;
}
