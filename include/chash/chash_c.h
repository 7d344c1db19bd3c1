/* chash's C API: nginx- and pingora-ketama-compatible consistent-hash rings
 * for C programs and foreign-function interfaces (C99, no C++ types; the
 * same header compiles as C++).
 *
 *   chash_builder *b;
 *   chash_ring *ring;
 *   if (chash_builder_new(CHASH_FLAVOR_PINGORA_V1, 0, &b) != CHASH_OK) ...;
 *   if (chash_builder_add(b, "10.0.0.1:443", 12, 100) != CHASH_OK)
 *     fprintf(stderr, "%s\n", chash_builder_error(b));   (names the server)
 *   int rc = chash_builder_build(b, &ring);               (b is gone now)
 *   uint32_t node = chash_ring_find(ring, "/some/url", 9);
 *   size_t len;
 *   const char *addr = chash_ring_node_address(ring, node, &len);
 *   chash_ring_free(ring);
 *
 * Errors. A function that can fail returns an int: CHASH_OK (0) or a
 * negative CHASH_E_* code; chash_strerror(code) names it. The full message
 * of the last failed call on a builder is chash_builder_error(builder); the
 * message of the last failed call of any function on this thread is
 * chash_last_error(). Lookups that answer a node id answer CHASH_NO_NODE
 * instead of an error (an empty ring, a NULL ring, no available node).
 *
 * Exceptions never cross this API: every function catches everything at
 * the boundary, and an allocation that fails is CHASH_E_OUT_OF_MEMORY.
 *
 * Bad input. NULL handles and NULL out-parameters give CHASH_E_NULL_ARGUMENT
 * (or CHASH_NO_NODE, NULL, 0 from the functions that answer those), never a
 * crash; a NULL data pointer is accepted with a length of 0; node ids out of
 * range give NULL / CHASH_NO_NODE / 0. What cannot be checked is the
 * caller's: lengths must match the memory behind the pointers, and a handle
 * must not be used after it is freed.
 *
 * Threads. A chash_ring is immutable once built: any number of threads may
 * look keys up in it at once, without locks. A chash_node_mask is a plain
 * value: share it read-only, or change it from one thread while no lookup
 * uses it; to change availability while lookups run, publish masks through
 * a chash_availability. A chash_migration's lookups and controls are
 * thread-safe and lock-free. A builder belongs to one thread at a time.
 * Cursors and walks live on the caller's stack and belong to one thread.
 *
 * Costs below: n = points of the ring, N = nodes. "No allocation" means
 * the call never allocates; such calls cannot fail with
 * CHASH_E_OUT_OF_MEMORY.
 *
 * ABI: libchash.so.0 (the SONAME names the major version). Within a major
 * version functions and error codes are only added; the structs here keep
 * their size and fields.
 */
#ifndef CHASH_CHASH_C_H_
#define CHASH_CHASH_C_H_

#include <stddef.h>
#include <stdint.h>

#include "chash/version.h"

#if defined(_WIN32)
#define CHASH_C_API
#elif defined(__GNUC__) || defined(__clang__)
#define CHASH_C_API __attribute__((visibility("default")))
#else
#define CHASH_C_API
#endif

#ifdef __cplusplus
#define CHASH_C_NOEXCEPT noexcept
extern "C" {
#else
#define CHASH_C_NOEXCEPT
#endif

/* ---- Handles and constants -------------------------------------------------- */

typedef struct chash_builder chash_builder;
typedef struct chash_ring chash_ring;
typedef struct chash_node_mask chash_node_mask;
typedef struct chash_availability chash_availability;
typedef struct chash_migration chash_migration;
typedef struct chash_snapshot chash_snapshot;

typedef enum chash_flavor {
  CHASH_FLAVOR_NGINX = 0,      /* nginx `hash $key consistent;` (1.22) */
  CHASH_FLAVOR_PINGORA_V1 = 1, /* pingora-ketama Continuum::new */
  CHASH_FLAVOR_PINGORA_V2 = 2, /* pingora-ketama Version::V2 { point_multiple } */
  CHASH_FLAVOR_RESTY = 3       /* OpenResty resty.chash (APISIX): opaque ids, CRC32(ID) chains */
} chash_flavor;

#define CHASH_OK 0
#define CHASH_NO_NODE 0xFFFFFFFFu
#define CHASH_MAX_NODES 65536u            /* node ids are 0..65535 */
#define CHASH_DEFAULT_POINT_MULTIPLE 160u /* nginx, pingora v1 (fixed), v2 (default) */
#define CHASH_ROLLOUT_SCALE 1000000u      /* migration rollouts are in ppm */
#define CHASH_FINGERPRINT_SIZE 32         /* SHA-256 */

/* Error codes: -1 to -10 are -(the C++ chash::StatusCode); -11 and -12 are
 * the C API's own; -13 and -14 are kBadSnapshot and kUntrusted (StatusCode
 * 11 and 12), so a C code is not always a C++ code negated: compare with
 * these names. Later codes are appended, never renumbered. */
#define CHASH_E_BAD_ADDRESS (-1)     /* address text the flavor cannot hash */
#define CHASH_E_DUPLICATE_NODE (-2)  /* two nodes hash the same bytes */
#define CHASH_E_TOO_MANY_NODES (-3)  /* more than 65,536 nodes */
#define CHASH_E_TOO_MANY_POINTS (-4) /* weight x multiple, or the total, over the cap */
#define CHASH_E_BAD_MULTIPLE (-5)    /* multiple != 160 for nginx / pingora v1 */
#define CHASH_E_BAD_NODE_ID (-6)     /* a node id >= the node count */
#define CHASH_E_BAD_WEIGHT (-7)      /* a weight out of range */
#define CHASH_E_BAD_ARGUMENT (-8)    /* any other malformed argument */
#define CHASH_E_OUT_OF_MEMORY (-9)   /* an allocation failed; nothing changed */
#define CHASH_E_IO (-10)             /* a file could not be read */
#define CHASH_E_NULL_ARGUMENT (-11)  /* a NULL handle, out-parameter or array */
#define CHASH_E_INTERNAL (-12)       /* an unexpected failure inside chash (a bug) */
#define CHASH_E_BAD_SNAPSHOT (-13)   /* a snapshot fails a format or integrity check */
#define CHASH_E_UNTRUSTED (-14)      /* a snapshot fails the policy: key, signature, version */

/* ---- Library ---------------------------------------------------------------- */

/* "bad_address", "null_argument", ...; "ok" for 0, "unknown" for others.
 * Static storage; no allocation. */
CHASH_C_API const char *chash_strerror(int code) CHASH_C_NOEXCEPT;
/* The message of the last failed call of any chash_* function on this
 * thread ("" if none); valid until this thread's next failing call.
 * Truncated to 1023 bytes. */
CHASH_C_API const char *chash_last_error(void) CHASH_C_NOEXCEPT;
/* The loaded library's version: "0.2.0" and 200 (CHASH_VERSION_NUMBER). */
CHASH_C_API const char *chash_version(void) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_version_number(void) CHASH_C_NOEXCEPT;
/* The SIMD target lookups run on ("AVX3", "AVX2", "NEON", ...) and the
 * CRC32 implementation ("pclmul", "armv8-crc32", ...), chosen once per
 * process from the CPU. Static storage. */
CHASH_C_API const char *chash_simd_target(void) CHASH_C_NOEXCEPT;
CHASH_C_API const char *chash_crc32_implementation(void) CHASH_C_NOEXCEPT;

/* CRC-32/IEEE (zlib's crc32()): the key hash of every flavor, so
 * chash_ring_find(r, k, n) == chash_ring_find_hash(r, chash_crc32(k, n)).
 * chash_crc32_extend(chash_crc32(a), b) == chash_crc32(a then b);
 * extend(0, x) == crc32(x). No allocation; data may be NULL if len is 0. */
CHASH_C_API uint32_t chash_crc32(const void *data, size_t len) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_crc32_extend(uint32_t crc, const void *data,
                                        size_t len) CHASH_C_NOEXCEPT;

/* ---- Building a ring -------------------------------------------------------- */

/* A builder of `flavor` with `point_multiple` points per weight unit
 * (0 = the flavor's default, 160; nginx and pingora v1 take only 160).
 * Errors: CHASH_E_BAD_ARGUMENT (unknown flavor), CHASH_E_BAD_MULTIPLE,
 * CHASH_E_OUT_OF_MEMORY, CHASH_E_NULL_ARGUMENT; *out is NULL on error. */
CHASH_C_API int chash_builder_new(chash_flavor flavor, uint32_t point_multiple,
                                  chash_builder **out) CHASH_C_NOEXCEPT;
/* Caps the generated points (sum of weight x multiple) of the ring: default
 * 2^30 (6 GiB of columns), at most 2^31 - 1. Only before the first add:
 * CHASH_E_BAD_ARGUMENT afterwards or out of range. */
CHASH_C_API int chash_builder_set_max_points(chash_builder *builder,
                                             uint64_t max_points) CHASH_C_NOEXCEPT;
/* Threads chash_builder_build may use, the caller's included: 0 (the
 * default) = every hardware thread, 1 = the calling thread only; above 256
 * counts as 256. The ring is bit-identical whatever the count. Only before
 * the first add: CHASH_E_BAD_ARGUMENT afterwards. */
CHASH_C_API int chash_builder_set_threads(chash_builder *builder,
                                          uint32_t threads) CHASH_C_NOEXCEPT;
/* Adds a server, `address_len` bytes of text (no NUL needed; a NUL byte in
 * it is refused with CHASH_E_BAD_ADDRESS), as an nginx `server` line or a
 * Rust SocketAddr takes it; for CHASH_FLAVOR_RESTY any id of 1..4096 bytes,
 * NUL bytes included (APISIX's "host\0port"). Validates as the C++ RingBuilder::Add does
 * (address, duplicates, node count, points); weight 0 is a drained node that
 * keeps its id. A failed add leaves the builder unchanged and sets
 * chash_builder_error, which names the node ("node 3 '10.0.0.1:99999': ...").
 * Node ids are given in call order from 0. Cost: O(address_len) amortized;
 * allocates. */
CHASH_C_API int chash_builder_add(chash_builder *builder, const char *address, size_t address_len,
                                  uint32_t weight) CHASH_C_NOEXCEPT;
/* Nodes added so far; 0 for NULL. */
CHASH_C_API uint32_t chash_builder_num_nodes(const chash_builder *builder) CHASH_C_NOEXCEPT;
/* The message of the builder's last failed call, "" if none (or for
 * NULL). Valid until the builder's next call or its free. */
CHASH_C_API const char *chash_builder_error(const chash_builder *builder) CHASH_C_NOEXCEPT;
/* Builds the ring and frees the builder, on success and on error alike (the
 * message of a failed build is then chash_last_error()). A builder with no
 * node gives the empty ring (every lookup: CHASH_NO_NODE). Cost: O(points);
 * peak memory about 10 bytes a generated point (14 under 512K points);
 * CHASH_E_OUT_OF_MEMORY if it does not fit. *out is NULL on error. */
CHASH_C_API int chash_builder_build(chash_builder *builder, chash_ring **out) CHASH_C_NOEXCEPT;
/* Frees a builder that was never built; NULL is a no-op. */
CHASH_C_API void chash_builder_free(chash_builder *builder) CHASH_C_NOEXCEPT;

/* A point given directly, for rings from your own point generator. */
typedef struct chash_raw_point {
  uint32_t hash;
  uint32_t node; /* < num_nodes */
} chash_raw_point;

/* A ring of `num_nodes` nodes (no addresses) from raw points. Among points
 * of equal hash, the node of smaller tie_rank wins (tie_rank: NULL, or
 * num_nodes entries, a permutation of 0..num_nodes-1); with tie_rank NULL
 * the smaller node id wins. max_points 0 = the default cap (2^30).
 * Errors: CHASH_E_TOO_MANY_NODES (num_nodes > 65,536), CHASH_E_BAD_NODE_ID
 * (a point's node >= num_nodes), CHASH_E_TOO_MANY_POINTS,
 * CHASH_E_BAD_ARGUMENT (tie_rank), CHASH_E_OUT_OF_MEMORY,
 * CHASH_E_NULL_ARGUMENT (points NULL with n > 0, or out NULL); the message
 * is chash_last_error(). Cost: O(n log n). */
CHASH_C_API int chash_ring_from_points(uint32_t num_nodes, const chash_raw_point *points,
                                       size_t num_points, const uint32_t *tie_rank,
                                       uint64_t max_points, chash_ring **out) CHASH_C_NOEXCEPT;

/* Drops the caller's reference to the ring; the ring is freed once no
 * chash_migration holds it either. NULL is a no-op. Not concurrently with
 * lookups through this handle. */
CHASH_C_API void chash_ring_free(chash_ring *ring) CHASH_C_NOEXCEPT;

/* ---- Lookups: thread-safe, no allocation ---------------------------------------- */

/* Node of the first point with hash >= CRC32(key), wrapping to the first
 * point; CHASH_NO_NODE if the ring is empty or NULL, or key is NULL with
 * key_len > 0. O(key_len + log16 n). */
CHASH_C_API uint32_t chash_ring_find(const chash_ring *ring, const void *key,
                                     size_t key_len) CHASH_C_NOEXCEPT;
/* The same for a precomputed key hash (chash_crc32). O(log16 n). */
CHASH_C_API uint32_t chash_ring_find_hash(const chash_ring *ring, uint32_t hash) CHASH_C_NOEXCEPT;
/* Batches: out[i] = chash_ring_find_hash(ring, hashes[i]) /
 * chash_ring_find(ring, keys[i], key_lens[i]) for i < n. Lookups in a batch
 * overlap their cache misses: several times faster a key than single calls
 * on rings that do not fit in cache. Errors: CHASH_E_NULL_ARGUMENT (ring, or
 * an array NULL with n > 0, or keys[i] NULL with key_lens[i] > 0; out is
 * then unspecified). O(n log16 points). */
CHASH_C_API int chash_ring_find_hashes(const chash_ring *ring, const uint32_t *hashes, size_t n,
                                       uint32_t *out) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_ring_find_keys(const chash_ring *ring, const char *const *keys,
                                     const size_t *key_lens, size_t n,
                                     uint32_t *out) CHASH_C_NOEXCEPT;

/* ---- Failover walks: on the caller's stack, no allocation ------------------------- */

/* A cursor over the points in ring order: the failover walk of pingora's
 * node_iter and nginx's `hp->hash++`. It cycles forever (after
 * chash_ring_num_points steps it is back at its start). Valid while its
 * ring lives; copy it freely. A zero-initialized cursor is an empty walk. */
typedef struct chash_cursor {
  uint64_t opaque[4];
} chash_cursor;

/* Puts the cursor at the point chash_ring_find_hash(ring, hash) answers with.
 * CHASH_E_NULL_ARGUMENT for a NULL cursor or ring (a NULL ring leaves an
 * empty cursor). O(log16 n). */
CHASH_C_API int chash_ring_walk(const chash_ring *ring, uint32_t hash,
                                chash_cursor *cursor) CHASH_C_NOEXCEPT;
/* pingora NodeIterator::next: the node of the current point, then advances.
 * CHASH_NO_NODE on an empty ring or cursor, or NULL. O(1). */
CHASH_C_API uint32_t chash_cursor_next(chash_cursor *cursor) CHASH_C_NOEXCEPT;
/* Node and hash of the current point without advancing; CHASH_NO_NODE and
 * 0 on an empty cursor or NULL. O(1). */
CHASH_C_API uint32_t chash_cursor_node(const chash_cursor *cursor) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_cursor_hash(const chash_cursor *cursor) CHASH_C_NOEXCEPT;

/* Each node once, in ring order from a key's point: the failover order
 * (nodes without points never come). About 8 KiB (a seen-set of 65,536
 * bits), meant for the caller's stack. A whole walk visits each point at
 * most once: O(n) in total over all its steps. */
typedef struct chash_distinct_walk {
  uint64_t opaque[1032];
} chash_distinct_walk;

/* Positions: each kept point's index in ring (ascending-hash) order,
 * 0..num_points-1; resty.chash's `find` answers with one and `next` walks
 * them. chash_ring_find_position: the position of the point
 * chash_ring_find_hash(ring, hash) answers with; CHASH_NO_NODE for an empty
 * or NULL ring. O(log16 n). chash_ring_point_at: the node at `position`
 * and, if `hash` is not NULL, its hash; CHASH_NO_NODE (hash 0) past the last
 * point or for NULL. O(1). No allocation. */
CHASH_C_API uint32_t chash_ring_find_position(const chash_ring *ring,
                                              uint32_t hash) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_ring_point_at(const chash_ring *ring, uint64_t position,
                                         uint32_t *hash) CHASH_C_NOEXCEPT;
/* The points collisions dropped (the losers at a hash another node won):
 * `count` hashes ascending and their nodes, the best-ranked loser of a hash
 * first, each distinct (hash, node) once. Pointers into the ring, valid
 * while it lives; NULL and 0 when there were no collisions.
 * CHASH_E_NULL_ARGUMENT for a NULL argument. O(1), no allocation. */
CHASH_C_API int chash_ring_collision_losers(const chash_ring *ring, const uint32_t **hashes,
                                            const uint16_t **nodes,
                                            uint64_t *count) CHASH_C_NOEXCEPT;

/* Starts the walk at the point chash_ring_find_hash(ring, hash) answers with.
 * CHASH_E_NULL_ARGUMENT for a NULL walk or ring (a NULL ring leaves a walk
 * that is done). O(log16 n) plus clearing 8 KiB. */
CHASH_C_API int chash_ring_walk_distinct(const chash_ring *ring, uint32_t hash,
                                         chash_distinct_walk *walk) CHASH_C_NOEXCEPT;
/* The next node not yet returned; CHASH_NO_NODE when every node with points
 * has come (or NULL). Only on a walk chash_ring_walk_distinct started. */
CHASH_C_API uint32_t chash_distinct_walk_next(chash_distinct_walk *walk) CHASH_C_NOEXCEPT;

/* ---- Shape of a ring: O(1), no allocation; 0 / NULL for a NULL ring --------------- */

CHASH_C_API uint32_t chash_ring_num_nodes(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* Points kept after collisions; points generated = sum of weight x multiple. */
CHASH_C_API uint64_t chash_ring_num_points(const chash_ring *ring) CHASH_C_NOEXCEPT;
CHASH_C_API uint64_t chash_ring_points_generated(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* Nodes that own at least one kept point. */
CHASH_C_API uint32_t chash_ring_nodes_with_points(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* 1 if node `node` owns a kept point, else 0 (out of range included). */
CHASH_C_API int chash_ring_owns_points(const chash_ring *ring, uint32_t node) CHASH_C_NOEXCEPT;
/* The flavor (CHASH_FLAVOR_*), or -1 for a raw-point ring or NULL. */
CHASH_C_API int chash_ring_flavor(const chash_ring *ring) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_ring_point_multiple(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* The node's address exactly as written to chash_builder_add (not
 * NUL-terminated in general: use *len; it is followed by a NUL byte all the
 * same), "" for a raw-point ring's node; NULL if node is out of range or the
 * ring NULL. len may be NULL. Valid while the ring lives. */
CHASH_C_API const char *chash_ring_node_address(const chash_ring *ring, uint32_t node,
                                                size_t *len) CHASH_C_NOEXCEPT;
/* The node's weight; 0 if out of range (or drained). */
CHASH_C_API uint32_t chash_ring_node_weight(const chash_ring *ring, uint32_t node) CHASH_C_NOEXCEPT;

/* ---- Node masks: lookups that skip unavailable nodes ------------------------------ */

/* A mask of `num_nodes` ids (at most 65,536), all available (available != 0)
 * or none. Ids at or past num_nodes count as unavailable. A masked lookup
 * answers exactly what the ring built from the available nodes alone would
 * answer, without building it. O(num_nodes / 64); allocates. */
CHASH_C_API int chash_node_mask_new(uint32_t num_nodes, int available,
                                    chash_node_mask **out) CHASH_C_NOEXCEPT;
/* Sets one node; CHASH_E_BAD_NODE_ID (no change) if node >= the size. O(1). */
CHASH_C_API int chash_node_mask_set(chash_node_mask *mask, uint32_t node,
                                    int available) CHASH_C_NOEXCEPT;
/* 1 if available, else 0 (out of range or NULL included). O(1). */
CHASH_C_API int chash_node_mask_get(const chash_node_mask *mask, uint32_t node) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_node_mask_size(const chash_node_mask *mask) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_node_mask_count_available(const chash_node_mask *mask) CHASH_C_NOEXCEPT;
CHASH_C_API void chash_node_mask_free(chash_node_mask *mask) CHASH_C_NOEXCEPT;

/* The node the ring of the available nodes would answer; CHASH_NO_NODE if no
 * available node has a point (or NULL ring / mask). Thread-safe, no
 * allocation. Cost: one lookup and a bit test when the key's node is up;
 * otherwise a walk of about 1/a points when a fraction a of the points is
 * available, bounded by O(N) when no available node has points. */
CHASH_C_API uint32_t chash_ring_find_available(const chash_ring *ring, const chash_node_mask *mask,
                                               const void *key, size_t key_len) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_ring_find_available_hash(const chash_ring *ring,
                                                    const chash_node_mask *mask,
                                                    uint32_t hash) CHASH_C_NOEXCEPT;
/* Batches, as chash_ring_find_hashes / chash_ring_find_keys. */
CHASH_C_API int chash_ring_find_available_hashes(const chash_ring *ring,
                                                 const chash_node_mask *mask,
                                                 const uint32_t *hashes, size_t n,
                                                 uint32_t *out) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_ring_find_available_keys(const chash_ring *ring, const chash_node_mask *mask,
                                               const char *const *keys, const size_t *key_lens,
                                               size_t n, uint32_t *out) CHASH_C_NOEXCEPT;

/* ---- Availability: a mask replaced atomically while lookups run ------------------- */

/* `num_nodes` ids (at most 65,536), all available, version 0. One per ring
 * (or per fleet), shared by every thread. Readers take no lock and each
 * lookup answers under exactly one published mask. Allocates. */
CHASH_C_API int chash_availability_new(uint32_t num_nodes,
                                       chash_availability **out) CHASH_C_NOEXCEPT;
/* Replaces the mask (any thread; publishers serialize on a mutex):
 * CHASH_E_BAD_ARGUMENT unless chash_node_mask_size(mask) equals the size.
 * Each success increments the version. O(num_nodes / 64); no allocation. */
CHASH_C_API int chash_availability_publish(chash_availability *availability,
                                           const chash_node_mask *mask) CHASH_C_NOEXCEPT;
/* The number of successful publishes; 0 for NULL. */
CHASH_C_API uint64_t chash_availability_version(const chash_availability *availability)
    CHASH_C_NOEXCEPT;
/* A copy of the current mask (free it with chash_node_mask_free) and its
 * version (version may be NULL). Allocates. */
CHASH_C_API int chash_availability_snapshot(const chash_availability *availability,
                                            chash_node_mask **out,
                                            uint64_t *version) CHASH_C_NOEXCEPT;
/* Masked lookups through the current mask; thread-safe, no allocation,
 * costs as chash_ring_find_available plus two loads and a fence. */
CHASH_C_API uint32_t chash_availability_find(const chash_availability *availability,
                                             const chash_ring *ring, const void *key,
                                             size_t key_len) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_availability_find_hash(const chash_availability *availability,
                                                  const chash_ring *ring,
                                                  uint32_t hash) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_availability_find_keys(const chash_availability *availability,
                                             const chash_ring *ring, const char *const *keys,
                                             const size_t *key_lens, size_t n,
                                             uint32_t *out) CHASH_C_NOEXCEPT;
CHASH_C_API void chash_availability_free(chash_availability *availability) CHASH_C_NOEXCEPT;

/* ---- Bounded loads (consistent hashing with bounded loads, SODA 2018) ------------- */

/* ceil(c * (total_load + 1) / nodes), saturated to UINT64_MAX; 0 if nodes is
 * 0 or c is not a finite number > 1 (c in parts per million). O(1). */
CHASH_C_API uint64_t chash_bounded_load_capacity(uint64_t total_load, uint32_t nodes,
                                                 double balance_factor) CHASH_C_NOEXCEPT;
/* The first node in the (masked; mask NULL = all available) walk from
 * `hash` whose load is below `capacity`; nodes at or past num_loads are
 * skipped; CHASH_NO_NODE if none. loads may be NULL only if num_loads is 0.
 * Thread-safe, no allocation; costs as a masked lookup that walks past every
 * full node. */
CHASH_C_API uint32_t chash_ring_find_under_capacity(const chash_ring *ring, uint32_t hash,
                                                    const uint64_t *loads, size_t num_loads,
                                                    uint64_t capacity,
                                                    const chash_node_mask *mask) CHASH_C_NOEXCEPT;
/* The bounded-load lookup in one call: capacity from the loads of the
 * available nodes that own points and balance_factor c, then the walk.
 * *node is CHASH_NO_NODE if no available node owns a point. Errors:
 * CHASH_E_BAD_ARGUMENT (c not finite > 1, num_loads < the ring's nodes),
 * CHASH_E_NULL_ARGUMENT. O(N) to sum the loads, then the walk; no
 * allocation. */
CHASH_C_API int chash_ring_find_bounded_load(const chash_ring *ring, uint32_t hash,
                                             const uint64_t *loads, size_t num_loads,
                                             double balance_factor, const chash_node_mask *mask,
                                             uint32_t *node) CHASH_C_NOEXCEPT;

/* ---- Dual-ring migration ------------------------------------------------------- */

typedef enum chash_side { CHASH_SIDE_OLD = 0, CHASH_SIDE_NEW = 1 } chash_side;

/* Both rings in memory, each key routed through one of them by a stable
 * 64-bit hash of the key (seeded by `seed`): a key takes the new ring iff
 * the migration is in scope and its bucket is below the rollout (ppm).
 * Both controls start closed (out of scope, 0 ppm). The migration holds a
 * reference to each ring: the caller may chash_ring_free its own at once.
 * The rings must come from one backend snapshot (same servers and weights)
 * unless allow_backend_mismatch != 0: CHASH_E_BAD_ARGUMENT otherwise, the
 * message (chash_last_error) listing the differences. O(N log N);
 * allocates. */
CHASH_C_API int chash_migration_new(const chash_ring *old_ring, const chash_ring *new_ring,
                                    uint64_t seed, int allow_backend_mismatch,
                                    chash_migration **out) CHASH_C_NOEXCEPT;
/* Controls, any thread, lock-free. set_rollout: 0 <= fraction <= 1, else
 * CHASH_E_BAD_ARGUMENT; set_rollout_ppm: over CHASH_ROLLOUT_SCALE is
 * CHASH_E_BAD_ARGUMENT. Raising the rollout only moves keys from old to
 * new; lowering it returns exactly those keys. */
CHASH_C_API int chash_migration_set_rollout(chash_migration *migration,
                                            double fraction) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_migration_set_rollout_ppm(chash_migration *migration,
                                                uint32_t ppm) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_migration_set_in_scope(chash_migration *migration,
                                             int in_scope) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_migration_rollout_ppm(const chash_migration *migration) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_migration_in_scope(const chash_migration *migration) CHASH_C_NOEXCEPT;
/* The key's node on its ring (a node id of chash_migration_ring(m, *side)),
 * counted; side may be NULL. CHASH_NO_NODE for NULL (side: OLD).
 * Thread-safe, no allocation: a ring lookup plus, while the rollout is
 * strictly between 0 and 100%, the key's 64-bit hash. */
CHASH_C_API uint32_t chash_migration_find(const chash_migration *migration, const void *key,
                                          size_t key_len, chash_side *side) CHASH_C_NOEXCEPT;
/* Batch: nodes[i] and sides[i] (CHASH_SIDE_* as bytes) for keys[i]; sides
 * may be NULL. No allocation. */
CHASH_C_API int chash_migration_find_keys(const chash_migration *migration, const char *const *keys,
                                          const size_t *key_lens, size_t n, uint32_t *nodes,
                                          uint8_t *sides) CHASH_C_NOEXCEPT;
/* Lookups answered by each ring so far (concurrent ones may be missing). */
CHASH_C_API int chash_migration_counters(const chash_migration *migration, uint64_t *old_ring,
                                         uint64_t *new_ring) CHASH_C_NOEXCEPT;
/* The migration's ring of a side (owned by the migration: valid while it
 * lives; do not free it); NULL for NULL or a bad side. */
CHASH_C_API const chash_ring *chash_migration_ring(const chash_migration *migration,
                                                   chash_side side) CHASH_C_NOEXCEPT;
/* 1 unless created with allow_backend_mismatch over differing snapshots. */
CHASH_C_API int chash_migration_backends_match(const chash_migration *migration) CHASH_C_NOEXCEPT;
CHASH_C_API void chash_migration_free(chash_migration *migration) CHASH_C_NOEXCEPT;
/* The per-key hash and bucket (0..999,999) that pick the ring, specified in
 * include/chash/migration.h, for other processes to agree with. */
CHASH_C_API uint64_t chash_migration_key_hash(const void *key, size_t key_len,
                                              uint64_t seed) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_migration_bucket(uint64_t key_hash) CHASH_C_NOEXCEPT;

/* ---- Statistics and identity ------------------------------------------------------ */

typedef struct chash_memory_usage {
  uint64_t column_bytes;          /* hash + node columns: 6 bytes a point */
  uint64_t other_bytes;           /* node table, names, bookkeeping: O(N) */
  uint64_t index_bytes;           /* the search index above the columns */
  uint64_t collision_table_bytes; /* collided points kept for masked lookups */
} chash_memory_usage;

/* O(1), no allocation. */
CHASH_C_API int chash_ring_memory_usage(const chash_ring *ring,
                                        chash_memory_usage *out) CHASH_C_NOEXCEPT;

/* What `chash stats` prints (fields as in its --json output). */
typedef struct chash_ring_stats {
  uint32_t nodes; /* drained ones included */
  uint32_t nodes_with_points;
  uint64_t points_generated; /* sum of weight x multiple */
  uint64_t points;           /* kept after collisions */
  uint64_t collisions;       /* points_generated - points */
  uint64_t column_bytes;
  uint64_t other_bytes;
  uint64_t index_bytes;
  uint64_t collision_table_bytes;
  double bytes_per_point; /* column_bytes / points */
  double build_ms;
  double cv_predicted; /* sqrt((N-1)/(N*k+1)) */
  double cv_measured;  /* over nodes of weight > 0, from exact shares */
  double max_share_ratio;
  double min_share_ratio;
} chash_ring_stats;

/* O(n) (one scan of the ring); allocates O(N). */
CHASH_C_API int chash_ring_stats_compute(const chash_ring *ring,
                                         chash_ring_stats *out) CHASH_C_NOEXCEPT;

/* SHA-256 fingerprints (byte layouts in include/chash/identity.h), equal on
 * every machine: the routing (equal = every key routes alike; O(N)), the
 * points as built (O(n)), the backend snapshot (O(N log N)). out holds
 * CHASH_FINGERPRINT_SIZE bytes. Allocate temporarily. */
CHASH_C_API int chash_ring_fingerprint(const chash_ring *ring, uint8_t *out) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_ring_points_digest(const chash_ring *ring, uint8_t *out) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_ring_backend_fingerprint(const chash_ring *ring,
                                               uint8_t *out) CHASH_C_NOEXCEPT;
/* 64 lower-case hex digits and a NUL into out (65 bytes). */
CHASH_C_API int chash_fingerprint_hex(const uint8_t *fingerprint, char *out) CHASH_C_NOEXCEPT;

/* ---- Snapshots (include/chash/snapshot.h: the file format, the checks) ---- */

#define CHASH_PUBLIC_KEY_SIZE 32 /* an Ed25519 public key */
#define CHASH_KEY_ID_SIZE 8      /* the key id a signed snapshot names */

/* How a snapshot is loaded. All zero (or a NULL pointer) is the default:
 * map the file, verify every check, no key required, any config version. */
typedef struct chash_snapshot_options {
  /* 0: map the file read-only, zero-copy (its pages are the ring's columns,
   * shared by every process; never truncate or rewrite it in place: SIGBUS).
   * 1: read it into this process's memory (immune to that). */
  int copy;
  /* Nonzero: skip the XXH3 checksum pass (files this process has verified
   * before); every structural check still runs. */
  int skip_checksum;
  /* Refuse a snapshot whose config version is lower (CHASH_E_UNTRUSTED). */
  uint64_t min_config_version;
  /* n_trusted_keys public keys, CHASH_PUBLIC_KEY_SIZE bytes each, end to
   * end; n > 0: the snapshot must be signed by one of them
   * (CHASH_E_UNTRUSTED otherwise). NULL with n = 0: no signature needed. */
  const uint8_t *trusted_keys;
  size_t n_trusted_keys;
} chash_snapshot_options;

/* What a snapshot's header says (chash inspect). */
typedef struct chash_snapshot_info {
  uint16_t major_version, minor_version;
  uint64_t file_bytes;
  uint64_t config_version;
  int64_t created_unix_seconds;
  int flavor; /* chash_flavor */
  uint32_t point_multiple;
  uint32_t nodes;
  uint64_t points;
  uint64_t points_generated;
  uint32_t subsets;
  int is_signed;
  uint8_t key_id[CHASH_KEY_ID_SIZE]; /* zero when unsigned */
  int mapped;                        /* 1: the columns are the file's pages */
} chash_snapshot_info;

/* Loads and checks the snapshot at path (O(file): a checksum pass, or with
 * trusted keys the signature's SHA-256 pass in its place, a pass over each
 * column, the stored search index checked, or built for a file without one;
 * the order of the checks: chash/snapshot.h). Errors: CHASH_E_IO (open,
 * fstat, mmap or read failed), CHASH_E_BAD_SNAPSHOT (a format or integrity
 * check failed: chash_last_error() starts with the check's name, e.g.
 * "checksum: ..."), CHASH_E_UNTRUSTED (signature, key or minimum version),
 * CHASH_E_OUT_OF_MEMORY, CHASH_E_NULL_ARGUMENT (path or out; trusted_keys
 * NULL with n > 0). *out is NULL on error. The snapshot is immutable and
 * may be used from any number of threads. */
CHASH_C_API int chash_snapshot_load(const char *path, const chash_snapshot_options *options,
                                    chash_snapshot **out) CHASH_C_NOEXCEPT;
/* The same checks on bytes in memory (copied; options->copy is ignored). */
CHASH_C_API int chash_snapshot_load_bytes(const void *bytes, size_t n,
                                          const chash_snapshot_options *options,
                                          chash_snapshot **out) CHASH_C_NOEXCEPT;
/* Loads, checks and releases: CHASH_OK if the file passes every check and
 * the policy in options, else the error chash_snapshot_load would give. */
CHASH_C_API int chash_snapshot_verify(const char *path,
                                      const chash_snapshot_options *options) CHASH_C_NOEXCEPT;
/* Frees the handle; rings taken from it stay valid (they keep the mapping). */
CHASH_C_API void chash_snapshot_free(chash_snapshot *snapshot) CHASH_C_NOEXCEPT;

/* The snapshot's ring as a new ring handle (free it with chash_ring_free);
 * O(1), shares the columns, no copy. */
CHASH_C_API int chash_snapshot_ring(const chash_snapshot *snapshot,
                                    chash_ring **out) CHASH_C_NOEXCEPT;
CHASH_C_API int chash_snapshot_get_info(const chash_snapshot *snapshot,
                                        chash_snapshot_info *out) CHASH_C_NOEXCEPT;
/* The label (UTF-8, NUL-terminated, "" if none); valid while the snapshot
 * lives. NULL for a NULL snapshot. */
CHASH_C_API const char *chash_snapshot_label(const chash_snapshot *snapshot) CHASH_C_NOEXCEPT;
/* The name of subset i (0 <= i < info.subsets), NULL past the end. */
CHASH_C_API const char *chash_snapshot_subset_name(const chash_snapshot *snapshot,
                                                   uint32_t i) CHASH_C_NOEXCEPT;
/* The named subset as a new node mask (free it with chash_node_mask_free),
 * for chash_ring_find_available* on the snapshot's ring: answers exactly as
 * a ring of only those servers. CHASH_E_BAD_ARGUMENT if there is no subset
 * of that name (the message lists the names); O(nodes / 64). */
CHASH_C_API int chash_snapshot_subset(const chash_snapshot *snapshot, const char *name,
                                      chash_node_mask **out) CHASH_C_NOEXCEPT;

/* Reads a public key file written by `chash keygen` (BASE.pub) into out
 * (CHASH_PUBLIC_KEY_SIZE bytes). CHASH_E_IO, CHASH_E_BAD_ARGUMENT. */
CHASH_C_API int chash_public_key_read(const char *path, uint8_t *out) CHASH_C_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CHASH_CHASH_C_H_ */
