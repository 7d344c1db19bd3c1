//! What chash adds beyond pingora-ketama: node masks (lookups that skip
//! unavailable buckets without a rebuild), ring statistics and fingerprints.

use std::net::SocketAddr;

use crate::owned::{sized, Owned};
use crate::ring::Among;
use crate::{check, ffi, Continuum, Error, ErrorKind};

/// Bytes of a fingerprint (SHA-256).
pub const FINGERPRINT_SIZE: usize = ffi::CHASH_FINGERPRINT_SIZE;

/// Which buckets are available, by bucket index: the masked lookups answer
/// exactly what the ring of the available buckets alone would answer.
/// A plain value: change it while no lookup uses it (`&mut`).
pub struct NodeMask(Owned<ffi::chash_node_mask>);

// `len` as the C API's count of buckets; an error naming `what` past
// MAX_BUCKETS.
fn bucket_count(len: usize, what: &str) -> Result<u32, Error> {
    u32::try_from(len)
        .ok()
        .filter(|&n| n as usize <= crate::MAX_BUCKETS)
        .ok_or_else(|| Error::new(ErrorKind::TooManyNodes, format!("{what} {len} buckets")))
}

impl NodeMask {
    /// A mask of `len` buckets (at most 65,536), all available or none.
    pub fn new(len: usize, available: bool) -> Result<Self, Error> {
        let len = bucket_count(len, "a mask of")?;
        let mut out = std::ptr::null_mut();
        // SAFETY: out is a valid out-pointer.
        let code = unsafe { ffi::chash_node_mask_new(len, available.into(), &mut out) };
        // SAFETY: on success a new mask, owned here.
        unsafe { Owned::new(code, out) }.map(NodeMask).map_err(Error::last)
    }

    /// A mask of every bucket of `continuum`, all available.
    pub fn all_available(continuum: &Continuum) -> Self {
        // A continuum holds at most MAX_BUCKETS buckets: only memory can fail.
        Self::new(continuum.num_buckets(), true).expect("a mask of a ring's buckets")
    }

    /// Marks bucket `idx`; an error if `idx` is not below `len()`.
    pub fn set(&mut self, idx: usize, available: bool) -> Result<(), Error> {
        let node = u32::try_from(idx).unwrap_or(u32::MAX);
        // SAFETY: the mask is alive and exclusively borrowed.
        check(unsafe { ffi::chash_node_mask_set(self.0.as_ptr(), node, available.into()) })
    }

    /// Whether bucket `idx` is available (false past `len()`).
    pub fn get(&self, idx: usize) -> bool {
        let node = u32::try_from(idx).unwrap_or(u32::MAX);
        // SAFETY: the mask is alive.
        unsafe { ffi::chash_node_mask_get(self.0.as_ptr(), node) != 0 }
    }

    pub fn len(&self) -> usize {
        // SAFETY: the mask is alive.
        unsafe { ffi::chash_node_mask_size(self.0.as_ptr()) as usize }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn count_available(&self) -> usize {
        // SAFETY: the mask is alive.
        unsafe { ffi::chash_node_mask_count_available(self.0.as_ptr()) as usize }
    }
}

impl std::fmt::Debug for NodeMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMask")
            .field("len", &self.len())
            .field("available", &self.count_available())
            .finish()
    }
}

impl NodeMask {
    pub(crate) fn raw(&self) -> *const ffi::chash_node_mask {
        self.0.as_ptr()
    }

    /// The NodeMask of a mask handle.
    pub(crate) fn from_raw(raw: Owned<ffi::chash_node_mask>) -> NodeMask {
        NodeMask(raw)
    }
}

/// A [`NodeMask`] published atomically while lookups run: health checkers
/// publish from any thread (`&self`), lookups take no lock and each answers
/// under exactly one published mask. Share it in an `Arc`.
pub struct Availability(Owned<ffi::chash_availability>);

impl Availability {
    /// `len` buckets (at most 65,536), all available, version 0.
    pub fn new(len: usize) -> Result<Self, Error> {
        let len = bucket_count(len, "availability of")?;
        let mut out = std::ptr::null_mut();
        // SAFETY: out is a valid out-pointer.
        let code = unsafe { ffi::chash_availability_new(len, &mut out) };
        // SAFETY: on success a new availability, owned here.
        unsafe { Owned::new(code, out) }.map(Availability).map_err(Error::last)
    }

    /// Replaces the mask (its length must be this one's); the version then
    /// increments. Any thread; publishers serialize on a mutex.
    pub fn publish(&self, mask: &NodeMask) -> Result<(), Error> {
        // SAFETY: both are alive; the C call synchronizes publishers.
        check(unsafe { ffi::chash_availability_publish(self.0.as_ptr(), mask.raw()) })
    }

    pub(crate) fn raw(&self) -> *const ffi::chash_availability {
        self.0.as_ptr()
    }

    /// How many masks were published.
    pub fn version(&self) -> u64 {
        // SAFETY: alive.
        unsafe { ffi::chash_availability_version(self.0.as_ptr()) }
    }

    /// A copy of the current mask and its version.
    pub fn snapshot(&self) -> Result<(NodeMask, u64), Error> {
        let (mut out, mut version) = (std::ptr::null_mut(), 0u64);
        // SAFETY: valid out-pointers; alive.
        let code =
            unsafe { ffi::chash_availability_snapshot(self.0.as_ptr(), &mut out, &mut version) };
        // SAFETY: on success a new mask, owned here.
        let mask = unsafe { Owned::new(code, out) }.map_err(Error::last)?;
        Ok((NodeMask(mask), version))
    }

    /// The bucket index of `hash_key` on `ring` under the current mask
    /// ([`Continuum::bucket_idx_available`] with it).
    pub fn bucket_idx(&self, ring: &Continuum, hash_key: &[u8]) -> Option<usize> {
        ring.ring.find(hash_key, Among::Published(self))
    }

    /// The server of `hash_key` on `ring` under the current mask.
    pub fn node(&self, ring: &Continuum, hash_key: &[u8]) -> Option<SocketAddr> {
        self.bucket_idx(ring, hash_key).map(|i| ring.addrs[i])
    }

    /// Batch form of [`Availability::bucket_idx`];
    /// [`NO_BUCKET`](crate::NO_BUCKET) where no available bucket has a point.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `keys`.
    pub fn bucket_idxs<K: AsRef<[u8]>>(&self, ring: &Continuum, keys: &[K], out: &mut [u32]) {
        ring.ring.find_keys("Availability::bucket_idxs", keys, Among::Published(self), out);
    }
}

/// What `chash stats` prints, for one ring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RingStats {
    /// Buckets, drained ones included.
    pub buckets: u32,
    pub buckets_with_points: u32,
    /// Σ weight × multiple.
    pub points_generated: u64,
    /// Kept after collisions.
    pub points: u64,
    pub collisions: u64,
    /// The hash and node columns: 6 bytes a point.
    pub column_bytes: u64,
    pub other_bytes: u64,
    pub index_bytes: u64,
    pub collision_table_bytes: u64,
    pub bytes_per_point: f64,
    /// sqrt((N-1)/(N*k+1)) over the N buckets with weight > 0.
    pub cv_predicted: f64,
    /// From the exact share of the 2^32 hashes each bucket owns.
    pub cv_measured: f64,
    pub max_share_ratio: f64,
    pub min_share_ratio: f64,
}

/// The bytes a ring holds (`chash_memory_usage`), O(1).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct MemoryUsage {
    /// The hash and node columns: 6 bytes a point.
    pub column_bytes: u64,
    /// Node table, names, bookkeeping: O(buckets).
    pub other_bytes: u64,
    /// The search index above the columns.
    pub index_bytes: u64,
    /// Collided points kept for masked lookups.
    pub collision_table_bytes: u64,
}

// Continuum's lookups that are its ring's: `pub fn NAME(&self, ARGS) -> OUT`
// answering what the Ring method of the same name answers for ARGS.
macro_rules! ring_lookups {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self, $($arg: $ty),*) -> $out {
            self.ring.$name($($arg),*)
        }
    )*};
}

impl Continuum {
    /// The bytes the ring holds, O(1).
    pub fn memory_usage(&self) -> Result<MemoryUsage, Error> {
        self.ring.memory_usage()
    }

    /// The server of `hash_key` on the ring of the buckets `mask` leaves
    /// available, without building that ring; `None` if none of them has a
    /// point. One lookup and a bit test when the key's bucket is available.
    pub fn node_available(&self, hash_key: &[u8], mask: &NodeMask) -> Option<SocketAddr> {
        self.bucket_idx_available(hash_key, mask).map(|i| self.addrs[i])
    }

    ring_lookups! {
        /// The bucket index [`Continuum::node_available`] answers with.
        fn bucket_idx_available(hash_key: &[u8], mask: &NodeMask) -> Option<usize>;

        /// [`Continuum::bucket_idx_available`] of a key whose CRC32 is `hash`.
        fn bucket_idx_available_by_hash(hash: u32, mask: &NodeMask) -> Option<usize>;
    }

    /// Masked lookups in a batch: `out[i]` for `keys[i]`,
    /// [`NO_BUCKET`](crate::NO_BUCKET) when no available bucket has a point.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `keys`.
    pub fn bucket_idxs_available<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        mask: &NodeMask,
        out: &mut [u32],
    ) {
        self.ring.find_keys("bucket_idxs_available", keys, Among::Mask(mask), out);
    }

    ring_lookups! {
        /// Consistent hashing with bounded loads (Mirrokni et al., SODA 2018):
        /// the first bucket in the (masked) walk from `hash_key`'s point whose
        /// load is below `ceil(c × (total + 1) / n)`, n and total over the
        /// available buckets that own points. `loads[i]` is bucket i's load.
        /// `Ok(None)` if no available bucket owns a point; an error if `c` is not
        /// a finite number > 1 or `loads` is shorter than the buckets.
        fn bucket_idx_bounded_load(
            hash_key: &[u8], loads: &[u64], balance_factor: f64, mask: Option<&NodeMask>,
        ) -> Result<Option<usize>, Error>;

        /// The first bucket in the (masked) walk from `hash_key`'s point whose
        /// load is below `capacity` ([`bounded_load_capacity`] computed once a
        /// batch, say); buckets at or past `loads.len()` are skipped; `Ok(None)`
        /// if every one is full; the errors of
        /// [`Ring::bucket_idx_under_capacity`](crate::Ring::bucket_idx_under_capacity).
        /// No allocation.
        fn bucket_idx_under_capacity(
            hash_key: &[u8], loads: &[u64], capacity: u64, mask: Option<&NodeMask>,
        ) -> Result<Option<usize>, Error>;
    }

    /// The ring's statistics (one scan of the ring: O(points)).
    pub fn stats(&self) -> Result<RingStats, Error> {
        let mut raw: ffi::chash_ring_stats = sized();
        // SAFETY: the ring is alive; raw is a valid out-struct.
        check(unsafe { ffi::chash_ring_stats_compute(self.raw(), &mut raw) })?;
        Ok(RingStats {
            buckets: raw.nodes,
            buckets_with_points: raw.nodes_with_points,
            points_generated: raw.points_generated,
            points: raw.points,
            collisions: raw.collisions,
            column_bytes: raw.column_bytes,
            other_bytes: raw.other_bytes,
            index_bytes: raw.index_bytes,
            collision_table_bytes: raw.collision_table_bytes,
            bytes_per_point: raw.bytes_per_point,
            cv_predicted: raw.cv_predicted,
            cv_measured: raw.cv_measured,
            max_share_ratio: raw.max_share_ratio,
            min_share_ratio: raw.min_share_ratio,
        })
    }

    /// SHA-256 of what routes keys (hash, flavor, multiple, tie-break, the
    /// canonical bucket list with weights): equal fingerprints route every
    /// key alike, on every machine (`chash stats`' `fingerprint`).
    pub fn fingerprint(&self) -> Result<[u8; FINGERPRINT_SIZE], Error> {
        self.ring.fingerprint()
    }

    /// SHA-256 of the points as built, bit for bit.
    pub fn points_digest(&self) -> Result<[u8; FINGERPRINT_SIZE], Error> {
        self.ring.digest(ffi::chash_ring_points_digest)
    }

    /// SHA-256 of the backend snapshot (servers and weights), whatever the
    /// version or multiple.
    pub fn backend_fingerprint(&self) -> Result<[u8; FINGERPRINT_SIZE], Error> {
        self.ring.digest(ffi::chash_ring_backend_fingerprint)
    }
}

/// The capacity of consistent hashing with bounded loads: `ceil(c × (total
/// + 1) / buckets)`, saturated to `u64::MAX`; `None` if `buckets` is 0 or
/// `c` is not a finite number > 1. O(1).
pub fn bounded_load_capacity(total_load: u64, buckets: usize, balance_factor: f64) -> Option<u64> {
    let buckets = u32::try_from(buckets).ok()?;
    // SAFETY: a pure function of its arguments.
    let capacity = unsafe { ffi::chash_bounded_load_capacity(total_load, buckets, balance_factor) };
    (capacity != 0).then_some(capacity)
}
