//! The part of include/chash/chash_c.h this crate calls, declared by hand (no
//! bindgen). Keep it in step with the header: names, argument types and the
//! sizes of the caller-allocated structs.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

// Opaque C objects: only pointers to them cross the API.
macro_rules! opaque {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {$(
        $(#[$meta])*
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}

opaque!(
    chash_builder,
    chash_ring,
    chash_node_mask,
    chash_availability,
    chash_migration,
    chash_snapshot
);

/// Flavors (`CHASH_FLAVOR_*`): plain `uint32_t` constants.
pub const CHASH_FLAVOR_NGINX: u32 = 0;
pub const CHASH_FLAVOR_PINGORA_V1: u32 = 1;
pub const CHASH_FLAVOR_PINGORA_V2: u32 = 2;
pub const CHASH_FLAVOR_RESTY: u32 = 3;
pub const CHASH_FLAVOR_HAPROXY: u32 = 4;
pub const CHASH_FLAVOR_KETAMA_MD5: u32 = 5;
pub const CHASH_FLAVOR_VARNISH_SHARD: u32 = 6;
pub const CHASH_FLAVOR_ENVOY_RING: u32 = 7;
pub const CHASH_FLAVOR_ENVOY_MAGLEV: u32 = 8;
/// HAProxy's key hashes (`chash_ring_options.haproxy_hash`).
pub const CHASH_HAPROXY_HASH_SDBM: u32 = 0;
pub const CHASH_HAPROXY_HASH_DJB2: u32 = 1;
pub const CHASH_HAPROXY_HASH_WT6: u32 = 2;
pub const CHASH_HAPROXY_HASH_CRC32: u32 = 3;
/// The ketama rings (`chash_ring_options.ketama_variant`).
pub const CHASH_KETAMA_LIBMEMCACHED_WEIGHTED: u32 = 0;
pub const CHASH_KETAMA_LIBMEMCACHED_UNWEIGHTED: u32 = 1;
pub const CHASH_KETAMA_TWEMPROXY: u32 = 2;
pub const CHASH_KETAMA_LIBKETAMA: u32 = 3;
pub const CHASH_KETAMA_LIBMEMCACHED_SPY: u32 = 4;
pub const CHASH_KETAMA_LIBMEMCACHED_SPY_WEIGHTED: u32 = 5;
/// The ketama key hashes: 0 to 13 in the header's (ring.h's KetamaKeyHash)
/// order; the header names the first and the last.
pub const CHASH_KETAMA_HASH_DEFAULT: u32 = 0;
pub const CHASH_KETAMA_HASH_MURMUR3: u32 = 13;
/// `chash_ring_flavor` of a raw-point ring.
pub const CHASH_NO_FLAVOR: u32 = 0xFFFF_FFFF;

pub const CHASH_OK: c_int = 0;
pub const CHASH_NO_NODE: u32 = 0xFFFF_FFFF;
pub const CHASH_MASK_REFUSED: u32 = 0xFFFF_FFFE;
pub const CHASH_MESSAGE_SIZE: usize = 512;

pub const CHASH_E_BAD_ADDRESS: c_int = -1;
pub const CHASH_E_DUPLICATE_NODE: c_int = -2;
pub const CHASH_E_TOO_MANY_NODES: c_int = -3;
pub const CHASH_E_TOO_MANY_POINTS: c_int = -4;
pub const CHASH_E_BAD_MULTIPLE: c_int = -5;
pub const CHASH_E_BAD_NODE_ID: c_int = -6;
pub const CHASH_E_BAD_ARGUMENT: c_int = -8;
pub const CHASH_E_BAD_WEIGHT: c_int = -7;
pub const CHASH_E_OUT_OF_MEMORY: c_int = -9;
pub const CHASH_E_IO: c_int = -10;
pub const CHASH_E_INTERNAL: c_int = -12;
pub const CHASH_E_BAD_SNAPSHOT: c_int = -13;
pub const CHASH_E_UNTRUSTED: c_int = -14;

pub const CHASH_ROLLOUT_SCALE: u32 = 1_000_000;
pub const CHASH_PUBLIC_KEY_SIZE: usize = 32;
pub const CHASH_KEY_ID_SIZE: usize = 8;

/// Migration sides (`CHASH_SIDE_*`): plain `uint32_t` constants.
pub const CHASH_SIDE_OLD: u32 = 0;
pub const CHASH_SIDE_NEW: u32 = 1;

/// A walk over the points in ring order, caller-allocated; all zeros is an
/// empty walk. Valid while its ring lives; copyable as bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct chash_cursor {
    pub opaque: [u64; 4],
}

opaque!(
    /// The failover walk over distinct nodes: it lives in memory the caller
    /// provides (`chash_walk_size` bytes, 8-byte aligned); only pointers to it
    /// cross the API.
    chash_walk,
);

/// `chash_memory_usage`: the bytes a ring holds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct chash_memory_usage {
    pub size: u32,
    pub reserved: u32,
    pub column_bytes: u64,
    pub other_bytes: u64,
    pub index_bytes: u64,
    pub collision_table_bytes: u64,
}

/// `chash_ring_options`: a ring's options (chash_builder_new_with_options);
/// `size` set and the rest zero = every default. A flavor reads only its own
/// fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct chash_ring_options {
    pub size: u32,
    pub point_multiple: u32,
    pub haproxy_hash: u32,
    pub haproxy_avalanche: u32,
    pub haproxy_server_key: u32,
    pub ketama_variant: u32,
    pub ketama_key_hash: u32,
    pub ketama_default_port: u32,
    pub ketama_hash_tag: [u8; 2],
    pub reserved0: [u8; 2],
    pub varnish_replicas: u32,
    pub envoy_hash: u32,
    pub envoy_minimum_ring_size: u64,
    pub envoy_maximum_ring_size: u64,
    pub maglev_table_size: u64,
}

/// `chash_ring_stats`: what `chash stats` prints.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct chash_ring_stats {
    pub size: u32,
    pub nodes: u32,
    pub nodes_with_points: u32,
    pub reserved: u32,
    pub points_generated: u64,
    pub points: u64,
    pub collisions: u64,
    pub column_bytes: u64,
    pub other_bytes: u64,
    pub index_bytes: u64,
    pub collision_table_bytes: u64,
    pub bytes_per_point: f64,
    pub cv_predicted: f64,
    pub cv_measured: f64,
    pub max_share_ratio: f64,
    pub min_share_ratio: f64,
}

/// `chash_node_fields`: what a node carries beside its address and
/// weight; the library decides what the ring then hashes.
#[repr(C)]
pub struct chash_node_fields {
    pub size: u32,
    pub server_id: u32,
    pub name: *const c_char,
    pub name_len: usize,
    pub hostname: *const c_char,
    pub hostname_len: usize,
    pub hash_key: *const c_char,
    pub hash_key_len: usize,
    pub hash_hostname: u32,
    pub has_real_weight: u32,
    pub real_weight: f64,
}

pub const CHASH_FINGERPRINT_SIZE: usize = 32;

/// Where a loaded ring lives (`chash_snapshot_options.mode`).
pub const CHASH_LOAD_SEALED: u32 = 0;
pub const CHASH_LOAD_MAP: u32 = 1;
pub const CHASH_LOAD_COPY: u32 = 2;
/// `chash_snapshot_options.flags`.
pub const CHASH_LOAD_SKIP_CHECKSUM: u32 = 1;
pub const CHASH_LOAD_VERIFY_POINTS_DIGEST: u32 = 2;

/// `chash_snapshot_options`: how a snapshot is loaded; `size` set and the
/// rest zero = a sealed copy, every check, no key, any version.
#[repr(C)]
pub struct chash_snapshot_options {
    pub size: u32,
    pub mode: u32,
    pub flags: u32,
    pub threads: u32,
    pub min_config_version: u64,
    pub max_file_bytes: u64,
    pub trusted_keys: *const u8,
    pub n_trusted_keys: usize,
}

/// `chash_snapshot_info`: what a snapshot's header says.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct chash_snapshot_info {
    pub size: u32,
    pub major_version: u16,
    pub minor_version: u16,
    pub file_bytes: u64,
    pub config_version: u64,
    pub created_unix_seconds: i64,
    pub expires_unix_seconds: i64,
    pub flavor: u32,
    pub point_multiple: u32,
    pub nodes: u32,
    pub subsets: u32,
    pub points: u64,
    pub points_generated: u64,
    pub is_signed: u32,
    pub mode: u32,
    pub key_id: [u8; 8],
    pub fingerprint: [u8; 32],
}

/// Snapshot checks (`CHASH_CHECK_*`); `chash_check_name` spells them.
pub const CHASH_CHECK_NONE: u32 = 0;
pub const CHASH_CHECK_IO: u32 = 1;
pub const CHASH_CHECK_NOT_REGULAR: u32 = 2;
pub const CHASH_CHECK_MAX_SIZE: u32 = 3;
pub const CHASH_CHECK_SPARSE: u32 = 4;
pub const CHASH_CHECK_SIZE: u32 = 5;
pub const CHASH_CHECK_MAGIC: u32 = 6;
pub const CHASH_CHECK_VERSION: u32 = 7;
pub const CHASH_CHECK_HEADER: u32 = 8;
pub const CHASH_CHECK_SECTIONS: u32 = 9;
pub const CHASH_CHECK_MIN_VERSION: u32 = 10;
pub const CHASH_CHECK_EXPIRED: u32 = 11;
pub const CHASH_CHECK_SIGNATURE: u32 = 12;
pub const CHASH_CHECK_CHECKSUM: u32 = 13;
pub const CHASH_CHECK_LABEL: u32 = 14;
pub const CHASH_CHECK_NODE_TABLE: u32 = 15;
pub const CHASH_CHECK_HASH_COLUMN: u32 = 16;
pub const CHASH_CHECK_NODE_COLUMN: u32 = 17;
pub const CHASH_CHECK_COLLISIONS: u32 = 18;
pub const CHASH_CHECK_SUBSETS: u32 = 19;
pub const CHASH_CHECK_INDEX: u32 = 20;
pub const CHASH_CHECK_FINGERPRINT: u32 = 21;
pub const CHASH_CHECK_POINTS_DIGEST: u32 = 22;
pub const CHASH_CHECK_ROLLBACK: u32 = 23;
pub const CHASH_CHECK_SAME_VERSION: u32 = 24;
pub const CHASH_CHECK_OUT_OF_MEMORY: u32 = 25;
pub const CHASH_CHECK_FLAVOR: u32 = 26;
pub const CHASH_CHECK_ADDRESS: u32 = 27;
pub const CHASH_CHECK_BACKEND_MISMATCH: u32 = 28;
pub const CHASH_CHECK_EMBEDDER: u32 = 29;
pub const CHASH_CHECK_OPTIONS: u32 = 30;
pub const CHASH_CHECK_LOW_COLUMN: u32 = 31;

opaque!(chash_reloader);

/// `chash_reloader_options.flags`.
pub const CHASH_RELOAD_NO_SHARE: u32 = 1;
pub const CHASH_RELOAD_NO_LAST_GOOD: u32 = 2;
pub const CHASH_RELOAD_NO_WRITE: u32 = 4;

/// `chash_reloader_options`: the reload policy's options.
#[repr(C)]
pub struct chash_reloader_options {
    pub size: u32,
    pub flags: u32,
    pub load: *const chash_snapshot_options,
    pub state_dir: *const c_char,
    pub name: *const c_char,
}

/// `chash_reload_result.outcome`.
pub const CHASH_RELOAD_UNCHANGED: u32 = 0;
pub const CHASH_RELOAD_NEW: u32 = 1;
pub const CHASH_RELOAD_SAME_RING: u32 = 2;
pub const CHASH_RELOAD_REFUSED: u32 = 3;

/// `chash_reload_result`: what one look at the path found.
#[repr(C)]
pub struct chash_reload_result {
    pub size: u32,
    pub outcome: u32,
    pub check: u32,
    pub adopted: u32,
    pub error: i32,
    pub reserved: u32,
    pub token: u64,
    pub config_version: u64,
    pub snapshot: *mut chash_snapshot,
    pub message: [c_char; 512],
}

/// `chash_reload_report`: what the reloader has done.
#[repr(C)]
pub struct chash_reload_report {
    pub size: u32,
    pub last_check: u32,
    pub serving_last_good: u32,
    pub state_error: u32,
    pub last_error: i32,
    pub reserved: u32,
    pub served_version: u64,
    pub highest_version: u64,
    pub accepted: u64,
    pub adopted: u64,
    pub refused: u64,
    pub last_refused_unix_seconds: i64,
    pub checking_since_unix_seconds: i64,
    pub last_message: [c_char; 512],
    pub state_message: [c_char; 512],
    pub served_expires_unix_seconds: i64,
    pub serving_expired: u32,
    pub reserved2: u32,
    pub state_file: [c_char; 512],
}

extern "C" {
    pub fn chash_strerror(code: c_int) -> *const c_char;
    pub fn chash_last_error() -> *const c_char;
    pub fn chash_check_name(check: u32) -> *const c_char;
    pub fn chash_last_check() -> u32;
    pub fn chash_version() -> *const c_char;
    pub fn chash_flavor_name(flavor: u32) -> *const c_char;
    pub fn chash_flavor_from_name(name: *const c_char, name_len: usize, flavor: *mut u32) -> c_int;
    pub fn chash_crc32(data: *const c_void, len: usize) -> u32;

    pub fn chash_builder_new(
        flavor: u32,
        point_multiple: u32,
        out: *mut *mut chash_builder,
    ) -> c_int;
    pub fn chash_builder_add(
        builder: *mut chash_builder,
        address: *const c_char,
        address_len: usize,
        weight: u32,
    ) -> c_int;
    pub fn chash_builder_new_with_options(
        flavor: u32,
        options: *const chash_ring_options,
        out: *mut *mut chash_builder,
    ) -> c_int;
    pub fn chash_builder_add_fields(
        builder: *mut chash_builder,
        address: *const c_char,
        address_len: usize,
        weight: u32,
        fields: *const chash_node_fields,
    ) -> c_int;
    pub fn chash_builder_error(builder: *const chash_builder) -> *const c_char;
    pub fn chash_builder_build(builder: *mut chash_builder, out: *mut *mut chash_ring) -> c_int;
    pub fn chash_builder_free(builder: *mut chash_builder);
    pub fn chash_ring_free(ring: *mut chash_ring);

    pub fn chash_ring_find(ring: *const chash_ring, key: *const c_void, key_len: usize) -> u32;
    pub fn chash_ring_find_hash(ring: *const chash_ring, hash: u32) -> u32;
    pub fn chash_ring_key_hash(ring: *const chash_ring, key: *const c_void, key_len: usize) -> u64;
    pub fn chash_ring_key_hash_bits(ring: *const chash_ring) -> u32;
    pub fn chash_ring_find_hash64(ring: *const chash_ring, hash: u64) -> u32;
    pub fn chash_ring_find_attempt(ring: *const chash_ring, hash: u64, attempt: u32) -> u32;
    pub fn chash_ring_find_hashes(
        ring: *const chash_ring,
        hashes: *const u32,
        n: usize,
        out: *mut u32,
    ) -> c_int;
    pub fn chash_ring_find_keys(
        ring: *const chash_ring,
        keys: *const *const c_char,
        key_lens: *const usize,
        n: usize,
        out: *mut u32,
    ) -> c_int;

    pub fn chash_ring_walk(ring: *const chash_ring, hash: u32, cursor: *mut chash_cursor) -> c_int;
    pub fn chash_cursor_next(cursor: *mut chash_cursor) -> u32;
    pub fn chash_cursor_hash(cursor: *const chash_cursor) -> u32;
    pub fn chash_cursor_node(cursor: *const chash_cursor) -> u32;
    pub fn chash_walk_size(ring: *const chash_ring) -> usize;
    pub fn chash_walk_start(
        memory: *mut c_void,
        bytes: usize,
        ring: *const chash_ring,
        mask: *const chash_node_mask,
        hash: u32,
        out: *mut *mut chash_walk,
    ) -> c_int;
    pub fn chash_walk_next(walk: *mut chash_walk) -> u32;
    pub fn chash_ring_collision_losers(
        ring: *const chash_ring,
        hashes: *mut *const u32,
        nodes: *mut *const u16,
        count: *mut u64,
    ) -> c_int;
    pub fn chash_ring_owns_points(ring: *const chash_ring, node: u32) -> c_int;

    pub fn chash_ring_num_points(ring: *const chash_ring) -> u64;
    pub fn chash_ring_points_generated(ring: *const chash_ring) -> u64;
    pub fn chash_ring_num_nodes(ring: *const chash_ring) -> u32;
    pub fn chash_ring_nodes_with_points(ring: *const chash_ring) -> u32;
    pub fn chash_ring_flavor(ring: *const chash_ring) -> u32;
    pub fn chash_ring_point_multiple(ring: *const chash_ring) -> u32;
    pub fn chash_ring_node_address(
        ring: *const chash_ring,
        node: u32,
        len: *mut usize,
    ) -> *const c_char;
    pub fn chash_ring_node_weight(ring: *const chash_ring, node: u32) -> u32;

    pub fn chash_node_mask_new(
        num_nodes: u32,
        available: c_int,
        out: *mut *mut chash_node_mask,
    ) -> c_int;
    pub fn chash_node_mask_set(mask: *mut chash_node_mask, node: u32, available: c_int) -> c_int;
    pub fn chash_node_mask_get(mask: *const chash_node_mask, node: u32) -> c_int;
    pub fn chash_node_mask_size(mask: *const chash_node_mask) -> u32;
    pub fn chash_node_mask_count_available(mask: *const chash_node_mask) -> u32;
    pub fn chash_node_mask_free(mask: *mut chash_node_mask);
    pub fn chash_ring_masks_exactly(ring: *const chash_ring) -> c_int;
    pub fn chash_ring_find_available(
        ring: *const chash_ring,
        mask: *const chash_node_mask,
        key: *const c_void,
        key_len: usize,
    ) -> u32;
    pub fn chash_ring_find_available_hash(
        ring: *const chash_ring,
        mask: *const chash_node_mask,
        hash: u32,
    ) -> u32;
    pub fn chash_ring_find_available_keys(
        ring: *const chash_ring,
        mask: *const chash_node_mask,
        keys: *const *const c_char,
        key_lens: *const usize,
        n: usize,
        out: *mut u32,
    ) -> c_int;

    pub fn chash_ring_stats_compute(ring: *const chash_ring, out: *mut chash_ring_stats) -> c_int;
    pub fn chash_ring_memory_usage(ring: *const chash_ring, out: *mut chash_memory_usage) -> c_int;
    pub fn chash_ring_fingerprint(ring: *const chash_ring, out: *mut u8) -> c_int;
    pub fn chash_ring_points_digest(ring: *const chash_ring, out: *mut u8) -> c_int;
    pub fn chash_ring_backend_fingerprint(ring: *const chash_ring, out: *mut u8) -> c_int;

    pub fn chash_availability_new(num_nodes: u32, out: *mut *mut chash_availability) -> c_int;
    pub fn chash_availability_publish(
        availability: *mut chash_availability,
        mask: *const chash_node_mask,
    ) -> c_int;
    pub fn chash_availability_version(availability: *const chash_availability) -> u64;
    pub fn chash_availability_snapshot(
        availability: *const chash_availability,
        out: *mut *mut chash_node_mask,
        version: *mut u64,
    ) -> c_int;
    pub fn chash_availability_find(
        availability: *const chash_availability,
        ring: *const chash_ring,
        key: *const c_void,
        key_len: usize,
    ) -> u32;
    pub fn chash_availability_find_hash(
        availability: *const chash_availability,
        ring: *const chash_ring,
        hash: u32,
    ) -> u32;
    pub fn chash_availability_find_keys(
        availability: *const chash_availability,
        ring: *const chash_ring,
        keys: *const *const c_char,
        key_lens: *const usize,
        n: usize,
        out: *mut u32,
    ) -> c_int;
    pub fn chash_availability_free(availability: *mut chash_availability);

    pub fn chash_ring_find_bounded_load(
        ring: *const chash_ring,
        hash: u32,
        loads: *const u64,
        num_loads: usize,
        balance_factor: f64,
        mask: *const chash_node_mask,
        node: *mut u32,
    ) -> c_int;

    pub fn chash_bounded_load_capacity(total_load: u64, nodes: u32, balance_factor: f64) -> u64;
    pub fn chash_ring_find_under_capacity(
        ring: *const chash_ring,
        hash: u32,
        loads: *const u64,
        num_loads: usize,
        capacity: u64,
        mask: *const chash_node_mask,
    ) -> u32;

    pub fn chash_migration_new(
        old_ring: *const chash_ring,
        new_ring: *const chash_ring,
        seed: u64,
        allow_backend_mismatch: c_int,
        out: *mut *mut chash_migration,
    ) -> c_int;
    pub fn chash_migration_set_rollout(migration: *mut chash_migration, fraction: f64) -> c_int;
    pub fn chash_migration_set_rollout_ppm(migration: *mut chash_migration, ppm: u32) -> c_int;
    pub fn chash_migration_set_in_scope(migration: *mut chash_migration, in_scope: c_int) -> c_int;
    pub fn chash_migration_rollout_ppm(migration: *const chash_migration) -> u32;
    pub fn chash_migration_in_scope(migration: *const chash_migration) -> c_int;
    pub fn chash_migration_find(
        migration: *const chash_migration,
        key: *const c_void,
        key_len: usize,
        side: *mut u32,
    ) -> u32;
    pub fn chash_migration_find_keys(
        migration: *const chash_migration,
        keys: *const *const c_char,
        key_lens: *const usize,
        n: usize,
        nodes: *mut u32,
        sides: *mut u8,
    ) -> c_int;
    pub fn chash_migration_counters(
        migration: *const chash_migration,
        old_ring: *mut u64,
        new_ring: *mut u64,
    ) -> c_int;
    pub fn chash_migration_backends_match(migration: *const chash_migration) -> c_int;
    pub fn chash_migration_free(migration: *mut chash_migration);
    pub fn chash_migration_key_hash(key: *const c_void, key_len: usize, seed: u64) -> u64;
    pub fn chash_migration_bucket(key_hash: u64) -> u32;

    pub fn chash_snapshot_load(
        path: *const c_char,
        options: *const chash_snapshot_options,
        out: *mut *mut chash_snapshot,
    ) -> c_int;
    pub fn chash_snapshot_load_bytes(
        bytes: *const c_void,
        n: usize,
        options: *const chash_snapshot_options,
        out: *mut *mut chash_snapshot,
    ) -> c_int;
    pub fn chash_snapshot_free(snapshot: *mut chash_snapshot);
    pub fn chash_snapshot_ring(snapshot: *const chash_snapshot, out: *mut *mut chash_ring)
        -> c_int;
    pub fn chash_snapshot_get_info(
        snapshot: *const chash_snapshot,
        out: *mut chash_snapshot_info,
    ) -> c_int;
    pub fn chash_snapshot_label(snapshot: *const chash_snapshot) -> *const c_char;
    pub fn chash_snapshot_subset_name(snapshot: *const chash_snapshot, i: u32) -> *const c_char;
    pub fn chash_snapshot_subset(
        snapshot: *const chash_snapshot,
        name: *const c_char,
        out: *mut *mut chash_node_mask,
    ) -> c_int;
    pub fn chash_public_key_read(path: *const c_char, out: *mut u8) -> c_int;

    pub fn chash_reloader_new(
        path: *const c_char,
        options: *const chash_reloader_options,
        out: *mut *mut chash_reloader,
    ) -> c_int;
    pub fn chash_reloader_free(reloader: *mut chash_reloader);
    pub fn chash_reloader_current(
        reloader: *const chash_reloader,
        out: *mut *mut chash_snapshot,
    ) -> c_int;
    pub fn chash_reloader_check(
        reloader: *mut chash_reloader,
        out: *mut chash_reload_result,
    ) -> c_int;
    pub fn chash_reloader_adopt_shared(
        reloader: *mut chash_reloader,
        out: *mut chash_reload_result,
    ) -> c_int;
    pub fn chash_reloader_accept(
        reloader: *mut chash_reloader,
        candidate: *const chash_reload_result,
    ) -> c_int;
    pub fn chash_reloader_refuse(
        reloader: *mut chash_reloader,
        candidate: *const chash_reload_result,
        check: u32,
        message: *const c_char,
    ) -> c_int;
    pub fn chash_reloader_report(
        reloader: *const chash_reloader,
        out: *mut chash_reload_report,
    ) -> c_int;
}
