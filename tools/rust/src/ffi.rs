//! The part of include/chash/chash_c.h this crate calls, declared by hand (no
//! bindgen). Keep it in step with the header: names, argument types and the
//! sizes of the caller-allocated structs.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

#[repr(C)]
pub struct chash_builder {
    _private: [u8; 0],
}

#[repr(C)]
pub struct chash_ring {
    _private: [u8; 0],
}

#[repr(C)]
pub struct chash_node_mask {
    _private: [u8; 0],
}

#[repr(C)]
pub struct chash_availability {
    _private: [u8; 0],
}

#[repr(C)]
pub struct chash_migration {
    _private: [u8; 0],
}

#[repr(C)]
pub struct chash_snapshot {
    _private: [u8; 0],
}

/// `chash_flavor` (a C enum: int-sized).
pub type chash_flavor = c_int;
pub const CHASH_FLAVOR_NGINX: chash_flavor = 0;
pub const CHASH_FLAVOR_PINGORA_V1: chash_flavor = 1;
pub const CHASH_FLAVOR_PINGORA_V2: chash_flavor = 2;
pub const CHASH_FLAVOR_RESTY: chash_flavor = 3;

pub const CHASH_OK: c_int = 0;
pub const CHASH_NO_NODE: u32 = 0xFFFF_FFFF;

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

/// `chash_side` (a C enum: int-sized).
pub type chash_side = c_int;
pub const CHASH_SIDE_OLD: chash_side = 0;
pub const CHASH_SIDE_NEW: chash_side = 1;

/// A walk over the points in ring order, caller-allocated; all zeros is an
/// empty walk. Valid while its ring lives; copyable as bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct chash_cursor {
    pub opaque: [u64; 4],
}

/// Each node once from a point: an 8 KiB seen-set, caller-allocated.
#[repr(C)]
pub struct chash_distinct_walk {
    pub opaque: [u64; 1032],
}

/// `chash_ring_stats`: what `chash stats` prints.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct chash_ring_stats {
    pub nodes: u32,
    pub nodes_with_points: u32,
    pub points_generated: u64,
    pub points: u64,
    pub collisions: u64,
    pub column_bytes: u64,
    pub other_bytes: u64,
    pub index_bytes: u64,
    pub collision_table_bytes: u64,
    pub bytes_per_point: f64,
    pub build_ms: f64,
    pub cv_predicted: f64,
    pub cv_measured: f64,
    pub max_share_ratio: f64,
    pub min_share_ratio: f64,
}

pub const CHASH_FINGERPRINT_SIZE: usize = 32;

/// `chash_snapshot_options`: how a snapshot is loaded; all zero = map,
/// verify every check, no key, any version.
#[repr(C)]
pub struct chash_snapshot_options {
    pub copy: c_int,
    pub skip_checksum: c_int,
    pub min_config_version: u64,
    pub trusted_keys: *const u8,
    pub n_trusted_keys: usize,
}

/// `chash_snapshot_info`: what a snapshot's header says.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct chash_snapshot_info {
    pub major_version: u16,
    pub minor_version: u16,
    pub file_bytes: u64,
    pub config_version: u64,
    pub created_unix_seconds: i64,
    pub flavor: c_int,
    pub point_multiple: u32,
    pub nodes: u32,
    pub points: u64,
    pub points_generated: u64,
    pub subsets: u32,
    pub is_signed: c_int,
    pub key_id: [u8; 8],
    pub mapped: c_int,
}

extern "C" {
    pub fn chash_strerror(code: c_int) -> *const c_char;
    pub fn chash_last_error() -> *const c_char;
    pub fn chash_version() -> *const c_char;
    pub fn chash_crc32(data: *const c_void, len: usize) -> u32;

    pub fn chash_builder_new(
        flavor: chash_flavor,
        point_multiple: u32,
        out: *mut *mut chash_builder,
    ) -> c_int;
    pub fn chash_builder_add(
        builder: *mut chash_builder,
        address: *const c_char,
        address_len: usize,
        weight: u32,
    ) -> c_int;
    pub fn chash_builder_error(builder: *const chash_builder) -> *const c_char;
    pub fn chash_builder_build(builder: *mut chash_builder, out: *mut *mut chash_ring) -> c_int;
    pub fn chash_builder_free(builder: *mut chash_builder);
    pub fn chash_ring_free(ring: *mut chash_ring);

    pub fn chash_ring_find(ring: *const chash_ring, key: *const c_void, key_len: usize) -> u32;
    pub fn chash_ring_find_hash(ring: *const chash_ring, hash: u32) -> u32;
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
    pub fn chash_ring_walk_distinct(
        ring: *const chash_ring,
        hash: u32,
        walk: *mut chash_distinct_walk,
    ) -> c_int;
    pub fn chash_distinct_walk_next(walk: *mut chash_distinct_walk) -> u32;
    pub fn chash_ring_find_position(ring: *const chash_ring, hash: u32) -> u32;
    pub fn chash_ring_point_at(ring: *const chash_ring, position: u64, hash: *mut u32) -> u32;
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
    pub fn chash_ring_flavor(ring: *const chash_ring) -> c_int;
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
        side: *mut chash_side,
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
}
