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
 * ABI: libchash.so.1 (the SONAME names the major version). Within a major
 * version functions, constants and error codes are only added, and structs
 * only grow at their end. Every parameter is a fixed-width integer, a
 * pointer or size_t: no enum type crosses the ABI (the CHASH_* constants
 * are plain integers).
 *
 * Structs that grow. chash_ring_options, chash_snapshot_options, chash_snapshot_info,
 * chash_ring_stats, chash_memory_usage, chash_reloader_options,
 * chash_reload_result and chash_reload_report begin with `uint32_t size`:
 * set it to sizeof the struct as your program was compiled, e.g.
 *
 *   chash_snapshot_options options = {.size = sizeof options};  (C99; the rest 0)
 *   chash_snapshot_options options{}; options.size = sizeof options;  (C++)
 *
 * The library reads an input struct's fields only up to `size` (a field
 * past it is zero: its default) and writes an output struct's only up to
 * `size`, so a program built against an older header keeps working with a
 * newer library, and a newer program with an older library as long as the
 * fields it sets past what that library knows are zero. A size below 8
 * bytes is CHASH_E_BAD_ARGUMENT; so is an input whose bytes past what this library
 * knows are not zero.
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

/* Flavors: which program's ring to reproduce (uint32_t). */
#define CHASH_FLAVOR_NGINX 0u      /* nginx `hash $key consistent;` (1.22) */
#define CHASH_FLAVOR_PINGORA_V1 1u /* pingora-ketama Continuum::new */
#define CHASH_FLAVOR_PINGORA_V2 2u /* pingora-ketama Version::V2 { point_multiple } */
#define CHASH_FLAVOR_RESTY 3u      /* OpenResty resty.chash (APISIX): opaque ids, CRC32(ID) chains */
/* The other programs' rings (include/chash/flavors.h), with their options in
 * chash_ring_options (chash_builder_new_with_options). Their keys hash as
 * their program hashes them: chash_ring_find and chash_ring_key_hash; a
 * key hash of envoy-ring and envoy-maglev is 64 bits (chash_ring_find_hash64). */
#define CHASH_FLAVOR_HAPROXY 4u       /* HAProxy `hash-type consistent` */
#define CHASH_FLAVOR_KETAMA_MD5 5u    /* libmemcached, twemproxy, libketama */
#define CHASH_FLAVOR_VARNISH_SHARD 6u /* Varnish vmod_directors shard */
#define CHASH_FLAVOR_ENVOY_RING 7u    /* Envoy RING_HASH */
#define CHASH_FLAVOR_ENVOY_MAGLEV 8u  /* Envoy MAGLEV */

#define CHASH_OK 0
#define CHASH_NO_NODE 0xFFFFFFFFu
#define CHASH_NO_POSITION 0xFFFFFFFFu    /* a position (point index) that is none */
#define CHASH_MESSAGE_SIZE 512           /* message buffers in the structs below */
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
/* The loaded library's version: "1.0.0" and 10000 (CHASH_VERSION_NUMBER). */
CHASH_C_API const char *chash_version(void) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_version_number(void) CHASH_C_NOEXCEPT;
/* The SIMD target lookups run on ("AVX3", "AVX2", "NEON", ...) and the
 * CRC32 implementation ("pclmul", "armv8-crc32", ...), chosen once per
 * process from the CPU. Static storage. */
CHASH_C_API const char *chash_simd_target(void) CHASH_C_NOEXCEPT;
CHASH_C_API const char *chash_crc32_implementation(void) CHASH_C_NOEXCEPT;
/* This header's declarations as C text, for foreign-function interfaces
 * that parse C at run time (LuaJIT's ffi.cdef, Python's cffi.cdef): every
 * typedef, struct and prototype as written here, and each integer CHASH_*
 * constant as `static const uint32_t` (written with a `u`) or
 * `static const int32_t`; no comments, no preprocessor lines, no
 * CHASH_C_API or CHASH_C_NOEXCEPT (chash/version.h's macros are not in it:
 * chash_version answers them). It is the header the loaded library was
 * built from, so a binding that declares from it (chash.resty does) always
 * matches the library it calls. Static storage, made on the first call (it
 * allocates then); NULL only if that allocation failed (chash_last_error). */
CHASH_C_API const char *chash_c_declarations(void) CHASH_C_NOEXCEPT;

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
CHASH_C_API int chash_builder_new(uint32_t flavor, uint32_t point_multiple,
                                  chash_builder **out) CHASH_C_NOEXCEPT;
/* Caps the generated points (sum of weight x multiple) of the ring: default
 * 2^30 (6 GiB of columns), at most 2^31 - 1. Only before the first add:
 * CHASH_E_BAD_ARGUMENT afterwards or out of range. */
CHASH_C_API int chash_builder_set_max_points(chash_builder *builder,
                                             uint64_t max_points) CHASH_C_NOEXCEPT;
/* Threads chash_builder_build may use, the caller's included: 0 (the
 * default) = the CPUs this process may run on (its affinity mask, bounded
 * by its cgroup's CPU quota; at most 64), 1 = the calling thread only;
 * above 256 counts as 256. The ring is bit-identical whatever the count. Only before
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

/* The options of a ring (C++ RingOptions), for chash_builder_new_with_options.
 * A struct that grows ("Structs that grow"): every field 0 is its default,
 * which is the program's own. A flavor reads only its own fields; the others
 * must stay 0 (CHASH_E_BAD_ARGUMENT, naming the option). */
typedef struct chash_ring_options {
  uint32_t size;           /* sizeof(chash_ring_options) */
  uint32_t point_multiple; /* pingora-v2, resty; 0 = 160 */
  /* haproxy: the key hash, CHASH_HAPROXY_HASH_*; avalanche 0 = on (HAProxy's
   * `hash-type consistent` alone), 1 = on, 2 = off (`hash-type consistent
   * djb2` without `avalanche`); server key 0 = id x 4096 + j (HAProxy 2.x,
   * 3.3 on), 1 = HAProxy 3.0-3.2 without commit 03e9a5a1e. */
  uint32_t haproxy_hash;
  uint32_t haproxy_avalanche;
  uint32_t haproxy_server_key;
  /* ketama-md5: CHASH_KETAMA_*; the key hash, CHASH_KETAMA_HASH_* (0: the
   * variant's); the port of servers written without one and left out of
   * labels (0 = 11211); twemproxy's hash_tag, its two bytes (0, 0: none). */
  uint32_t ketama_variant;
  uint32_t ketama_key_hash;
  uint32_t ketama_default_port;
  uint8_t ketama_hash_tag[2];
  uint8_t reserved0[2]; /* 0 */
  uint32_t varnish_replicas; /* varnish-shard; 0 = 67 */
  uint32_t envoy_hash;       /* envoy-ring's point hash: 0 xxHash, 1 MurmurHash2 */
  uint64_t envoy_minimum_ring_size; /* 0 = 1024 */
  uint64_t envoy_maximum_ring_size; /* 0 = 8,388,608 */
  uint64_t maglev_table_size;       /* a prime; 0 = 65,537 */
} chash_ring_options;
#define CHASH_HAPROXY_HASH_SDBM 0u
#define CHASH_HAPROXY_HASH_DJB2 1u
#define CHASH_HAPROXY_HASH_WT6 2u
#define CHASH_HAPROXY_HASH_CRC32 3u
#define CHASH_KETAMA_LIBMEMCACHED_WEIGHTED 0u
#define CHASH_KETAMA_LIBMEMCACHED_UNWEIGHTED 1u
#define CHASH_KETAMA_TWEMPROXY 2u
#define CHASH_KETAMA_LIBKETAMA 3u
#define CHASH_KETAMA_LIBMEMCACHED_SPY 4u
#define CHASH_KETAMA_LIBMEMCACHED_SPY_WEIGHTED 5u
/* The key hashes, in ring.h's KetamaKeyHash order: 0 default, 1 md5,
 * 2 one_at_a_time, 3 fnv1a_64, 4 fnv1_64, 5 fnv1_32, 6 fnv1a_32, 7 crc32a,
 * 8 crc32, 9 crc16, 10 hsieh, 11 murmur, 12 jenkins, 13 murmur3. */
#define CHASH_KETAMA_HASH_DEFAULT 0u
#define CHASH_KETAMA_HASH_MURMUR3 13u

/* A builder of any flavor (CHASH_FLAVOR_*) with its options (NULL: every
 * default). Errors as chash_builder_new, and CHASH_E_BAD_ARGUMENT for an
 * option out of range or of another flavor (chash_last_error() names it). */
CHASH_C_API int chash_builder_new_with_options(uint32_t flavor, const chash_ring_options *options,
                                               chash_builder **out) CHASH_C_NOEXCEPT;
/* chash_builder_add with what the flavor reads beside the address: haproxy's
 * server id (`id`, 1..2,147,483,647; 0 = assigned at build as HAProxy
 * assigns it), twemproxy's server name or varnish-shard's backend ident
 * (name_len 1..4096 bytes; name NULL or name_len 0: none). A flavor that
 * does not read one given (CHASH_PROPERTY_NODE_FIELD): CHASH_E_BAD_ARGUMENT.
 * The same as chash_builder_add_fields with those two fields. */
CHASH_C_API int chash_builder_add_node(chash_builder *builder, const char *address,
                                       size_t address_len, uint32_t weight, uint32_t server_id,
                                       const char *name, size_t name_len) CHASH_C_NOEXCEPT;

/* What a node carries beside its address and weight, for the flavors that
 * read it (CHASH_PROPERTY_NODE_FIELD says which; C++ NodeOptions). A struct
 * that grows ("Structs that grow"): every field 0 (a NULL text, a length 0)
 * is "not given". The library, not the binding, decides what the ring then
 * hashes and Ring's address answers: the address; varnish-shard's name;
 * Envoy's hash_key when not empty, else with hash_hostname the hostname
 * (then required), else the address as Envoy prints it. (1.1) */
typedef struct chash_node_fields {
  uint32_t size;        /* sizeof(chash_node_fields) */
  uint32_t server_id;   /* haproxy's `id`, 1..2,147,483,647 */
  const char *name;     /* twemproxy's server name; varnish-shard's */
  size_t name_len;      /*   backend ident (else its VCL name) */
  const char *hostname; /* Envoy's host hostname */
  size_t hostname_len;
  const char *hash_key; /* Envoy's envoy.lb hash_key metadata */
  size_t hash_key_len;
  uint32_t hash_hostname; /* 1: Envoy's use_hostname_for_hashing; 0 */
  /* 1: real_weight is the node's weight, Varnish's REAL weight (finite,
   * >= 0; the weight argument then 0). A ring with one counts every
   * backend's points as Varnish does, trunc(replicas x max(w, 1)), and is
   * built with replicas 1 and those counts as its weights. */
  uint32_t has_real_weight;
  double real_weight;
} chash_node_fields;
/* chash_builder_add with `fields` (NULL: none): errors as chash_builder_add,
 * and CHASH_E_BAD_ARGUMENT for a field the flavor does not read (the
 * message names it and the flavors that do), a text pointer NULL with a
 * length, hash_hostname without a hostname (Envoy would hash the empty
 * one), or a real weight beside a weight that is not 0. */
CHASH_C_API int chash_builder_add_fields(chash_builder *builder, const char *address,
                                         size_t address_len, uint32_t weight,
                                         const chash_node_fields *fields) CHASH_C_NOEXCEPT;

/* ---- The flavor table (1.1) -------------------------------------------------
 * What a binding needs to know about a flavor, from the one table the engine
 * keeps (engine/flavors.h, engine/flavor_options.h): names, the options of
 * the other programs' flavors, and the properties a binding branches on. A
 * binding that reads them states no per-flavor fact of its own. */

/* The flavor's name ("nginx", "pingora-v1", ..., "envoy-maglev"), a static
 * string; NULL for a value no flavor has. Flavors are numbered from 0 with
 * no gap: list them by calling this from 0 until NULL. */
CHASH_C_API const char *chash_flavor_name(uint32_t flavor) CHASH_C_NOEXCEPT;
/* The flavor named name[0..name_len) into *flavor. CHASH_E_BAD_ARGUMENT
 * (chash_last_error() lists the names) for any other text. */
CHASH_C_API int chash_flavor_from_name(const char *name, size_t name_len,
                                       uint32_t *flavor) CHASH_C_NOEXCEPT;

/* Properties of a flavor (chash_flavor_property). */
#define CHASH_PROPERTY_KEY_HASH_BITS 0u /* 32, or 64 (Envoy's XXH64) */
#define CHASH_PROPERTY_LOOKUP_RULE 1u /* CHASH_LOOKUP_* */
#define CHASH_PROPERTY_TAKES_MULTIPLE 2u /* 1: any point_multiple (pingora-v2, resty) */
#define CHASH_PROPERTY_NODE_FIELD 3u /* CHASH_NODE_FIELD_* bits: what a node carries
                                        * (chash_node_fields) */
#define CHASH_PROPERTY_RETRY 4u /* CHASH_RETRY_*: the way to a next server */
#define CHASH_PROPERTY_REMOVES_DOWN 5u /* 1: the program takes a down server out of
                                          * its ring; a mask of the live nodes answers
                                          * as it does where chash_ring_masks_exactly */
#define CHASH_PROPERTY_OTHER_PROGRAM 6u  /* 1: another program's ring (haproxy ..
                                          * envoy-maglev): options in
                                          * chash_ring_options, nodes by
                                          * chash_builder_add_node, keys by
                                          * chash_ring_key_hash */
#define CHASH_LOOKUP_SUCCESSOR 0u         /* the first point >= h, wrapping */
#define CHASH_LOOKUP_SUCCESSOR_CLAMPED 1u /* the first point >= h, else the last */
#define CHASH_LOOKUP_NEAREST 2u           /* the nearer neighbour (HAProxy) */
#define CHASH_LOOKUP_TABLE 3u             /* table[h mod size] (Maglev) */
#define CHASH_NODE_FIELD_NONE 0u
#define CHASH_NODE_FIELD_SERVER_ID 1u /* haproxy's `id` */
#define CHASH_NODE_FIELD_NAME 2u      /* twemproxy's server name, Varnish's ident */
#define CHASH_NODE_FIELD_HOSTNAME 4u  /* Envoy's host hostname (and hash_hostname) */
#define CHASH_NODE_FIELD_HASH_KEY 8u  /* Envoy's envoy.lb hash_key */
#define CHASH_NODE_FIELD_REAL_WEIGHT 16u /* Varnish's REAL weight */
#define CHASH_RETRY_POINT_WALK 0u     /* the next point's node (nginx's chash) */
#define CHASH_RETRY_DISTINCT 1u       /* each node once in ring order: chash_walk_* */
#define CHASH_RETRY_ATTEMPT 2u        /* Envoy's attempts: chash_ring_find_attempt */
/* One property of a flavor into *value. CHASH_E_BAD_ARGUMENT for an unknown
 * flavor or property. */
CHASH_C_API int chash_flavor_property(uint32_t flavor, uint32_t property,
                                      uint64_t *value) CHASH_C_NOEXCEPT;

/* The i-th option name of a flavor (0, 1, ... until NULL; a static string,
 * snake_case: "variant", "key_hash", ...); NULL for none or a flavor without
 * options. A binding spells it its way: nginx NAME=VALUE, Lua NAME = VALUE,
 * the chash tool --NAME-WITH-DASHES. */
CHASH_C_API const char *chash_flavor_option_name(uint32_t flavor, uint32_t i) CHASH_C_NOEXCEPT;
/* The i-th option's second spelling, which chash_ring_options_set also
 * takes (Envoy's field name where chash's is shorter: "minimum_ring_size"
 * for min_ring_size); "" for none; NULL as chash_flavor_option_name. */
CHASH_C_API const char *chash_flavor_option_alias(uint32_t flavor, uint32_t i) CHASH_C_NOEXCEPT;
/* What the i-th option of a flavor takes, for help text ("one of sdbm, djb2,
 * wt6, crc32", "an integer 1..65535", "on or off", "two bytes, neither
 * NUL"), its default ("sdbm") and one phrase on what it chooses; static
 * strings, NULL as chash_flavor_option_name. */
CHASH_C_API const char *chash_flavor_option_values(uint32_t flavor, uint32_t i) CHASH_C_NOEXCEPT;
CHASH_C_API const char *chash_flavor_option_default(uint32_t flavor, uint32_t i) CHASH_C_NOEXCEPT;
CHASH_C_API const char *chash_flavor_option_what(uint32_t flavor, uint32_t i) CHASH_C_NOEXCEPT;
/* Sets option `name` of `flavor` in *options from its text: a word, a
 * decimal integer, "on"/"off", or two bytes (NUL-terminated strings; an
 * option also answers to its alias, Envoy's field name where chash's is
 * shorter: minimum_ring_size). options->size must be set. Naming haproxy's
 * hash_function turns avalanche off unless avalanche is set, in either
 * order. CHASH_E_BAD_ARGUMENT, chash_last_error() naming the option and
 * what it takes (or the flavors whose option it is), for an option the
 * flavor does not have or a value it does not take. The whole set is
 * checked by chash_builder_new_with_options (a prime table size, a
 * minimum ring size over the maximum). */
CHASH_C_API int chash_ring_options_set(chash_ring_options *options, uint32_t flavor,
                                       const char *name, const char *value) CHASH_C_NOEXCEPT;

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
/* The key's hash as the ring's program computes it (CRC32 for nginx,
 * pingora and resty; the flavor's own for the others, 64 bits for
 * envoy-ring and envoy-maglev); 0 for a NULL ring or key. */
CHASH_C_API uint64_t chash_ring_key_hash(const chash_ring *ring, const void *key,
                                         size_t key_len) CHASH_C_NOEXCEPT;
/* 32, or 64 for envoy-ring and envoy-maglev rings; 0 for NULL. */
CHASH_C_API uint32_t chash_ring_key_hash_bits(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* The node of any flavor's key hash (chash_ring_key_hash's values): the
 * 64-bit lookup of envoy-ring and envoy-maglev; on 32-bit rings
 * chash_ring_find_hash, and CHASH_NO_NODE above 2^32 - 1. */
CHASH_C_API uint32_t chash_ring_find_hash64(const chash_ring *ring, uint64_t hash) CHASH_C_NOEXCEPT;
/* The node the program picks on retry `attempt` (0: the first pick) when it
 * retries without being told which node failed (C++ Ring::FindNodeForAttempt:
 * Envoy's ring and table retries; elsewhere the point `attempt` steps on). */
CHASH_C_API uint32_t chash_ring_find_attempt(const chash_ring *ring, uint64_t hash,
                                             uint32_t attempt) CHASH_C_NOEXCEPT;
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
 * empty cursor); CHASH_E_BAD_ARGUMENT and an empty cursor on a ring whose
 * key hash is 64 bits (chash_ring_key_hash_bits: envoy-ring, envoy-maglev,
 * which retry by chash_ring_find_attempt). O(log16 n). */
CHASH_C_API int chash_ring_walk(const chash_ring *ring, uint32_t hash,
                                chash_cursor *cursor) CHASH_C_NOEXCEPT;
/* pingora NodeIterator::next: the node of the current point, then advances.
 * CHASH_NO_NODE on an empty ring or cursor, or NULL. O(1). */
CHASH_C_API uint32_t chash_cursor_next(chash_cursor *cursor) CHASH_C_NOEXCEPT;
/* Node and hash of the current point without advancing; CHASH_NO_NODE and
 * 0 on an empty cursor or NULL. O(1). */
CHASH_C_API uint32_t chash_cursor_node(const chash_cursor *cursor) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_cursor_hash(const chash_cursor *cursor) CHASH_C_NOEXCEPT;

/* Positions: each kept point's index in ring (ascending-hash) order,
 * 0..num_points-1; resty.chash's `find` answers with one and `next` walks
 * them. A position is a uint32_t below 2^31 (a ring holds at most 2^31 - 1
 * points). chash_ring_find_position: the position of the point
 * chash_ring_find_hash(ring, hash) answers with; CHASH_NO_POSITION for an
 * empty or NULL ring. O(log16 n). chash_ring_point_at: the node at
 * `position` and, if `hash` is not NULL, its hash; CHASH_NO_NODE (hash 0)
 * past the last point, for CHASH_NO_POSITION or for NULL. O(1). No
 * allocation. */
CHASH_C_API uint32_t chash_ring_find_position(const chash_ring *ring,
                                              uint32_t hash) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_ring_point_at(const chash_ring *ring, uint32_t position,
                                         uint32_t *hash) CHASH_C_NOEXCEPT;
/* The points collisions dropped (the losers at a hash another node won):
 * `count` hashes ascending and their nodes, the best-ranked loser of a hash
 * first, each distinct (hash, node) once. Pointers into the ring, valid
 * while it lives; NULL and 0 when there were no collisions.
 * CHASH_E_NULL_ARGUMENT for a NULL argument. O(1), no allocation. */
CHASH_C_API int chash_ring_collision_losers(const chash_ring *ring, const uint32_t **hashes,
                                            const uint16_t **nodes,
                                            uint64_t *count) CHASH_C_NOEXCEPT;

/* ---- The failover order over distinct nodes: in the caller's memory --------------- */

/* Each node once, in the order the ring of the available nodes would walk
 * them from a key's point: the first is chash_ring_find_available_hash's
 * answer, the next ones the failover order (a down winner's point goes to
 * its first available collision loser, as every masked lookup rules);
 * without a mask, every node that owns a point, in ring order. The one
 * walk behind retries over distinct nodes in nginx, chash.resty and the
 * Rust crate. It lives in memory the caller provides (a stack buffer, a
 * request's pool, a Lua cdata), chash_walk_size(ring) bytes, 8-byte
 * aligned: one bit a node and a fixed header, so its size follows the
 * ring's node count, not a limit compiled into the ABI. Nothing to free. */
typedef struct chash_walk chash_walk;
/* Bytes a walk of this ring needs: 128 + 8 * ceil(nodes / 64). O(1). */
CHASH_C_API size_t chash_walk_size(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* Starts a walk of ring (through mask unless it is NULL) at the point of
 * `hash` in `memory`; *out points into memory. The ring and mask must
 * outlive the walk and the mask must not change during it.
 * CHASH_E_NULL_ARGUMENT, CHASH_E_BAD_ARGUMENT (bytes too small, memory
 * misaligned, or a ring whose key hash is 64 bits: Envoy's retry by
 * chash_ring_find_attempt). O(log16 n + nodes / 64); no allocation. */
CHASH_C_API int chash_walk_start(void *memory, size_t bytes, const chash_ring *ring,
                                 const chash_node_mask *mask, uint32_t hash,
                                 chash_walk **out) CHASH_C_NOEXCEPT;
/* The next node, CHASH_NO_NODE once every reachable node has come (or for
 * NULL). All the calls of one walk visit each point at most once. */
CHASH_C_API uint32_t chash_walk_next(chash_walk *walk) CHASH_C_NOEXCEPT;

/* ---- Shape of a ring: O(1), no allocation; 0 / NULL for a NULL ring --------------- */

CHASH_C_API uint32_t chash_ring_num_nodes(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* Points kept after collisions; points generated = sum of weight x multiple. */
CHASH_C_API uint64_t chash_ring_num_points(const chash_ring *ring) CHASH_C_NOEXCEPT;
CHASH_C_API uint64_t chash_ring_points_generated(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* Nodes that own at least one kept point. */
CHASH_C_API uint32_t chash_ring_nodes_with_points(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* 1 if node `node` owns a kept point, else 0 (out of range included). */
CHASH_C_API int chash_ring_owns_points(const chash_ring *ring, uint32_t node) CHASH_C_NOEXCEPT;
/* The flavor (CHASH_FLAVOR_*), or CHASH_NO_FLAVOR for a raw-point ring or
 * NULL. */
#define CHASH_NO_FLAVOR 0xFFFFFFFFu
CHASH_C_API uint32_t chash_ring_flavor(const chash_ring *ring) CHASH_C_NOEXCEPT;
CHASH_C_API uint32_t chash_ring_point_multiple(const chash_ring *ring) CHASH_C_NOEXCEPT;
/* The node's address exactly as written to chash_builder_add, or the text
 * chash_node_fields made the ring hash instead (varnish-shard's name,
 * Envoy's hash_key, hostname or printed address) (not
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

/* What every masked lookup (chash_ring_find_available*,
 * chash_availability_find*) answers on a ring that masks inexactly: not a
 * node id (no ring has that many nodes) and not CHASH_NO_NODE. Those rings'
 * programs rebuild without the nodes that are out instead of skipping them
 * (weighted libmemcached and twemproxy ketama, libketama, envoy-ring,
 * envoy-maglev): build the ring of the available nodes instead. */
#define CHASH_MASK_REFUSED 0xFFFFFFFEu
/* 1 if masked lookups on this ring answer as its program would (every
 * flavor but those named at CHASH_MASK_REFUSED; raw-point rings too), 0 if
 * they answer CHASH_MASK_REFUSED, or for a NULL ring. */
CHASH_C_API int chash_ring_masks_exactly(const chash_ring *ring) CHASH_C_NOEXCEPT;

/* The node the ring of the available nodes would answer; CHASH_NO_NODE if no
 * available node has a point (or NULL ring / mask); CHASH_MASK_REFUSED on a
 * ring that masks inexactly (chash_ring_masks_exactly). Thread-safe, no
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
 * skipped; CHASH_NO_NODE if none; CHASH_MASK_REFUSED where
 * chash_ring_find_bounded_load refuses (and says why): Envoy's rings, and
 * a mask on a ring that masks inexactly (chash_ring_masks_exactly). loads
 * may be NULL only if num_loads is 0. Thread-safe, no allocation; costs as
 * a masked lookup that walks past every full node. */
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

#define CHASH_SIDE_OLD 0u /* the ring a migration starts from */
#define CHASH_SIDE_NEW 1u /* the ring it moves keys to */

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
                                          size_t key_len, uint32_t *side) CHASH_C_NOEXCEPT;
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
                                                   uint32_t side) CHASH_C_NOEXCEPT;
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
  uint32_t size; /* sizeof(chash_memory_usage): see "Structs that grow" */
  uint32_t reserved;
  uint64_t column_bytes;          /* hash + node columns: 6 bytes a point */
  uint64_t other_bytes;           /* node table, names, bookkeeping: O(N) */
  uint64_t index_bytes;           /* the search index above the columns */
  uint64_t collision_table_bytes; /* collided points kept for masked lookups */
} chash_memory_usage;

/* O(1), no allocation. CHASH_E_BAD_ARGUMENT for a bad out->size. */
CHASH_C_API int chash_ring_memory_usage(const chash_ring *ring,
                                        chash_memory_usage *out) CHASH_C_NOEXCEPT;

/* What `chash stats` prints (fields as in its --json output). */
typedef struct chash_ring_stats {
  uint32_t size;  /* sizeof(chash_ring_stats): see "Structs that grow" */
  uint32_t nodes; /* drained ones included */
  uint32_t nodes_with_points;
  uint32_t reserved;
  uint64_t points_generated; /* sum of weight x multiple */
  uint64_t points;           /* kept after collisions */
  uint64_t collisions;       /* points_generated - points */
  uint64_t column_bytes;
  uint64_t other_bytes;
  uint64_t index_bytes;
  uint64_t collision_table_bytes;
  double bytes_per_point; /* column_bytes / points */
  double cv_predicted; /* sqrt((N-1)/(N*k+1)) */
  double cv_measured;  /* over nodes of weight > 0, from exact shares */
  double max_share_ratio;
  double min_share_ratio;
} chash_ring_stats;

/* O(n) (one scan of the ring); allocates O(N). CHASH_E_BAD_ARGUMENT for a
 * bad out->size. */
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

/* ---- Snapshots (the format: engine/snapshot/FORMAT.md; the checks: snapshot.h) */

#define CHASH_PUBLIC_KEY_SIZE 32 /* an Ed25519 public key */
#define CHASH_KEY_ID_SIZE 8      /* the key id a signed snapshot names */

/* Where a loaded ring lives (chash_snapshot_options.mode). */
#define CHASH_LOAD_SEALED 0u /* default: a sealed memory file (memfd) read once from the file
                                and checked there: nothing done to the file afterwards can
                                change or crash the ring; shareable by the host's processes
                                (chash_reloader with a state directory) */
#define CHASH_LOAD_MAP 1u    /* zero-copy: the file's own pages. Only for files nothing
                                rewrites in place (a truncation raises SIGBUS) */
#define CHASH_LOAD_COPY 2u   /* this process's anonymous memory */
/* chash_snapshot_options.flags */
#define CHASH_LOAD_SKIP_CHECKSUM 1u         /* skip the XXH3 pass (files verified before) */
#define CHASH_LOAD_VERIFY_POINTS_DIGEST 2u  /* also recompute the points digest (SHA-256) */

/* How a snapshot is loaded: {.size = sizeof options} (the rest zero) or a
 * NULL pointer is the default: a sealed copy, every check, no key required, any
 * config version, files up to 2 GiB, threads from the CPUs this process may
 * use. */
typedef struct chash_snapshot_options {
  uint32_t size;  /* sizeof(chash_snapshot_options): see "Structs that grow" */
  uint32_t mode;  /* CHASH_LOAD_SEALED, CHASH_LOAD_MAP or CHASH_LOAD_COPY */
  uint32_t flags; /* CHASH_LOAD_* flags */
  /* Threads a load may hash on, the caller's included: 0 = the CPUs this
   * process may run on (affinity mask, cgroup CPU quota; at most 64). */
  uint32_t threads;
  /* Refuse a snapshot whose config version is lower (CHASH_E_UNTRUSTED). */
  uint64_t min_config_version;
  /* Larger files are refused before their body is read; 0 = 2 GiB. */
  uint64_t max_file_bytes;
  /* n_trusted_keys public keys, CHASH_PUBLIC_KEY_SIZE bytes each, end to
   * end; n > 0: the snapshot must be signed by one of them
   * (CHASH_E_UNTRUSTED otherwise). NULL with n = 0: no signature needed. */
  const uint8_t *trusted_keys;
  size_t n_trusted_keys;
} chash_snapshot_options;

/* What a snapshot's header says (chash inspect). */
typedef struct chash_snapshot_info {
  uint32_t size; /* sizeof(chash_snapshot_info): see "Structs that grow" */
  uint16_t major_version, minor_version;
  uint64_t file_bytes;
  uint64_t config_version;
  int64_t created_unix_seconds;
  int64_t expires_unix_seconds; /* 0: never */
  uint32_t flavor;              /* CHASH_FLAVOR_* */
  uint32_t point_multiple;
  uint32_t nodes;
  uint32_t subsets;
  uint64_t points;
  uint64_t points_generated;
  uint32_t is_signed;
  uint32_t mode;                     /* CHASH_LOAD_*: where the ring lives */
  uint8_t key_id[CHASH_KEY_ID_SIZE]; /* zero when unsigned */
  uint8_t fingerprint[CHASH_FINGERPRINT_SIZE]; /* the header's RingFingerprint */
} chash_snapshot_info;

/* Snapshot checks, in the order a load runs them, then the reload policy's
 * and an embedder's (include/chash/snapshot.h, SnapshotCheck): a refusal
 * names one. chash_check_name() spells it as messages do. */
#define CHASH_CHECK_NONE 0u
#define CHASH_CHECK_IO 1u
#define CHASH_CHECK_NOT_REGULAR 2u
#define CHASH_CHECK_MAX_SIZE 3u
#define CHASH_CHECK_SPARSE 4u
#define CHASH_CHECK_SIZE 5u
#define CHASH_CHECK_MAGIC 6u
#define CHASH_CHECK_VERSION 7u
#define CHASH_CHECK_HEADER 8u
#define CHASH_CHECK_SECTIONS 9u
#define CHASH_CHECK_MIN_VERSION 10u
#define CHASH_CHECK_EXPIRED 11u
#define CHASH_CHECK_SIGNATURE 12u
#define CHASH_CHECK_CHECKSUM 13u
#define CHASH_CHECK_LABEL 14u
#define CHASH_CHECK_NODE_TABLE 15u
#define CHASH_CHECK_HASH_COLUMN 16u
#define CHASH_CHECK_NODE_COLUMN 17u
#define CHASH_CHECK_COLLISIONS 18u
#define CHASH_CHECK_SUBSETS 19u
#define CHASH_CHECK_INDEX 20u
#define CHASH_CHECK_FINGERPRINT 21u
#define CHASH_CHECK_POINTS_DIGEST 22u
#define CHASH_CHECK_ROLLBACK 23u         /* a version below the highest served */
#define CHASH_CHECK_SAME_VERSION 24u     /* the version served, with another ring */
#define CHASH_CHECK_OUT_OF_MEMORY 25u    /* not remembered: tried again */
#define CHASH_CHECK_FLAVOR 26u           /* an embedder's: not the flavor it routes with */
#define CHASH_CHECK_ADDRESS 27u          /* an embedder's: addresses it cannot use */
#define CHASH_CHECK_BACKEND_MISMATCH 28u /* an embedder's: a migration partner's backends */
#define CHASH_CHECK_EMBEDDER 29u         /* any other check of the embedder */
#define CHASH_CHECK_OPTIONS 30u          /* 1.4: a flavor options section */
#define CHASH_CHECK_LOW_COLUMN 31u       /* 1.4: envoy-ring's low halves */
/* "checksum", "not_regular", ...; "unknown" past the list. Static storage. */
CHASH_C_API const char *chash_check_name(uint32_t check) CHASH_C_NOEXCEPT;
/* The check the last failed snapshot call on this thread named (its
 * chash_last_error() message starts with it), CHASH_CHECK_NONE if another
 * kind of error. */
CHASH_C_API uint32_t chash_last_check(void) CHASH_C_NOEXCEPT;

/* Loads and checks the snapshot at path: before its body is read, refused
 * for what is not a regular file, its size cap, holes, its header, version,
 * expiry or signer (O(1), never blocking: a FIFO is not waited on); then
 * read (a sealed copy by default) and checked (O(file): a checksum pass, or
 * with trusted keys the signature's SHA-256 on `threads` threads in its
 * place, a pass over each column, the stored search index checked; the
 * order of the checks: chash/snapshot.h). Errors: CHASH_E_IO (missing,
 * unreadable, not a regular file), CHASH_E_BAD_SNAPSHOT (a format or
 * integrity check: chash_last_check() names it and chash_last_error()
 * starts with its name, e.g. "checksum: ..."), CHASH_E_UNTRUSTED
 * (signature, key, minimum version, expiry), CHASH_E_OUT_OF_MEMORY,
 * CHASH_E_BAD_ARGUMENT (options->size), CHASH_E_NULL_ARGUMENT (path or
 * out; trusted_keys NULL with n > 0). *out is NULL on error. The snapshot
 * is immutable and may be used from any number of threads. Blocking: off
 * any event loop. */
CHASH_C_API int chash_snapshot_load(const char *path, const chash_snapshot_options *options,
                                    chash_snapshot **out) CHASH_C_NOEXCEPT;
/* The same checks on bytes in memory (copied; options->mode is ignored). */
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
/* CHASH_E_BAD_ARGUMENT for a bad out->size. */
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

/* ---- Reloading a snapshot path: the reload policy ----------------------------- */

/* The one reload policy of chash (include/chash/snapshot.h,
 * SnapshotReloader), for every embedder: a path's file is loaded with every
 * check when its identity (device, inode, size, mtime) changes; an identity
 * refused for its bytes is never verified again (one that could not be read
 * is read again, less often while it keeps failing); versions only go up;
 * with a state directory the last file that passed is kept (BASE.good), is
 * the version floor across restarts once it passes every check itself, and
 * is served when the path's is refused at start; and the host's processes
 * with one state directory map each other's sealed copy (BASE.share) after
 * every check instead of reading the file again: one copy of the columns a
 * host. What is trusted in the state directory: SECURITY.md. Every call
 * that takes a reloader touches the file system and may block: off any
 * event loop. A reloader is thread-safe; its calls serialize. */
typedef struct chash_reloader chash_reloader;

#define CHASH_RELOAD_NO_SHARE 1u     /* read every file in this process, map no other's copy */
#define CHASH_RELOAD_NO_LAST_GOOD 2u /* keep no BASE.good (no floor across restarts either) */
#define CHASH_RELOAD_NO_WRITE 4u     /* read the state directory, write nothing (nginx -t) */
#define CHASH_RELOAD_DEFER 8u        /* chash_reloader_new touches no file; the first check
                                        finds the first ring (NEW) */

typedef struct chash_reloader_options {
  uint32_t size;  /* sizeof(chash_reloader_options): see "Structs that grow" */
  uint32_t flags; /* CHASH_RELOAD_* */
  const chash_snapshot_options *load; /* the checks of every file; NULL: defaults */
  /* A directory for BASE.good, .share and .lock: it must exist (unless
   * CHASH_RELOAD_NO_WRITE), not be a symbolic link, and not be writable by
   * its group or others; only a process whose effective uid owns it writes
   * in it. NULL or "": nothing persists, nothing is shared. */
  const char *state_dir;
  /* 1..128 bytes of [A-Za-z0-9._-] (BASE is it, ".p" and 8 hex digits of
   * SHA-256 of the path); NULL: BASE derived from the path alone. */
  const char *name;
} chash_reloader_options;

/* Serves the newest ring that passes every check: the path's file, else
 * BASE.good, else the newer of the two that fails only its expiry
 * (reported: serving_expired). Errors as chash_snapshot_load's (the
 * message names the path's refusal and BASE.good's); CHASH_E_BAD_ARGUMENT for a bad name or
 * options->size, CHASH_E_IO for a state directory that cannot be used.
 * With CHASH_RELOAD_DEFER it touches no file and serves nothing until the
 * first check's NEW candidate is accepted (so it may run on an event loop,
 * and the checks on a thread). */
CHASH_C_API int chash_reloader_new(const char *path, const chash_reloader_options *options,
                                   chash_reloader **out) CHASH_C_NOEXCEPT;
CHASH_C_API void chash_reloader_free(chash_reloader *reloader) CHASH_C_NOEXCEPT;
/* The snapshot served now, as a new handle (free it with
 * chash_snapshot_free; it stays valid after later reloads); *out NULL
 * (CHASH_OK) while a deferred reloader serves nothing yet. A pointer copy:
 * no file is touched. */
CHASH_C_API int chash_reloader_current(const chash_reloader *reloader,
                                       chash_snapshot **out) CHASH_C_NOEXCEPT;

#define CHASH_RELOAD_UNCHANGED 0u /* the path names the file served, or one refused before */
#define CHASH_RELOAD_NEW 1u       /* a new ring passed every check: accept or refuse it */
#define CHASH_RELOAD_SAME_RING 2u /* another file with the ring served: no swap */
#define CHASH_RELOAD_REFUSED 3u   /* a check failed (check, message); the ring served stays */

typedef struct chash_reload_result {
  uint32_t size;    /* sizeof(chash_reload_result): see "Structs that grow" */
  uint32_t outcome; /* CHASH_RELOAD_* */
  uint32_t check;   /* REFUSED: CHASH_CHECK_* */
  uint32_t adopted; /* NEW: 1 if another process of the host verified it */
  int32_t error;    /* REFUSED: the CHASH_E_* a load of the file would return */
  uint32_t reserved;
  uint64_t token;   /* NEW: what accept and refuse match */
  uint64_t config_version; /* NEW: the candidate's */
  /* NEW: the candidate, a new handle the caller owns (free it with
   * chash_snapshot_free, accepted or not); NULL otherwise. */
  chash_snapshot *snapshot;
  char message[CHASH_MESSAGE_SIZE]; /* REFUSED: why, NUL-terminated */
} chash_reload_result;

/* Looks at the path once. A NEW candidate is served only once
 * chash_reloader_accept takes it: an embedder first runs checks of its own
 * (peers to build, a flavor to match) and may chash_reloader_refuse it. */
CHASH_C_API int chash_reloader_check(chash_reloader *reloader,
                                     chash_reload_result *out) CHASH_C_NOEXCEPT;
/* The copy of the path's file another process of the host published, if
 * it holds a newer ring than the one served and passes every check (NEW,
 * adopted); else the last good file if it is newer (NEW); else UNCHANGED.
 * Reads the path's header and trailer, never its body (a worker respawned
 * after a crash catches up with its siblings without a copy of its own). */
CHASH_C_API int chash_reloader_adopt_shared(chash_reloader *reloader,
                                            chash_reload_result *out) CHASH_C_NOEXCEPT;
/* Serves the last NEW candidate of check or adopt_shared; the first ring
 * writes BASE.good now (file system work: off any event loop), a reload
 * leaves it to the next check. CHASH_E_IO if the state could not be
 * written (the ring is served all the same; retried at the next check);
 * CHASH_E_BAD_ARGUMENT if the candidate is not the last one. */
CHASH_C_API int chash_reloader_accept(chash_reloader *reloader,
                                      const chash_reload_result *candidate) CHASH_C_NOEXCEPT;
/* Remembers the candidate's file as refused by the embedder's check
 * (CHASH_CHECK_FLAVOR, _ADDRESS, _BACKEND_MISMATCH, _EMBEDDER) with its
 * message: it is never loaded again. */
CHASH_C_API int chash_reloader_refuse(chash_reloader *reloader,
                                      const chash_reload_result *candidate, uint32_t check,
                                      const char *message) CHASH_C_NOEXCEPT;
/* check, then accept a NEW candidate: CHASH_OK when nothing changed or the
 * new file is served, else the refusal's error (chash_last_check names it). */
CHASH_C_API int chash_reloader_poll(chash_reloader *reloader) CHASH_C_NOEXCEPT;

typedef struct chash_reload_report {
  uint32_t size;       /* sizeof(chash_reload_report): see "Structs that grow" */
  uint32_t last_check; /* of the last refusal, CHASH_CHECK_NONE if none */
  uint32_t serving_last_good; /* 1: BASE.good is served, the path's file was refused */
  uint32_t state_error;       /* 1: the last write of BASE.good failed (state_message) */
  int32_t last_error;         /* the last refusal's CHASH_E_*, CHASH_OK if none */
  uint32_t reserved;
  uint64_t served_version;
  uint64_t highest_version; /* ever served under this name (persisted) */
  uint64_t accepted;        /* files served after the first */
  uint64_t adopted;         /* of those, verified by another process */
  uint64_t refused;         /* files refused, each identity once */
  int64_t last_refused_unix_seconds;
  int64_t checking_since_unix_seconds; /* a check in flight since, 0 if none */
  char last_message[CHASH_MESSAGE_SIZE];
  char state_message[CHASH_MESSAGE_SIZE];
  /* 1.1 */
  int64_t served_expires_unix_seconds; /* the served ring's expiry, 0: never */
  uint32_t serving_expired; /* 1: past it (served while nothing newer passes) */
  uint32_t reserved2;
  char state_file[CHASH_MESSAGE_SIZE]; /* BASE.good's path, "" without a state directory */
} chash_reload_report;

/* Never waits for a check in flight. */
CHASH_C_API int chash_reloader_report(const chash_reloader *reloader,
                                      chash_reload_report *out) CHASH_C_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CHASH_CHASH_C_H_ */
