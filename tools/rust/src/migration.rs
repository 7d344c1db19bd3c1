//! [`Migration`]: two rings in memory, each key routed through one of them
//! by a stable hash of the key, so that a change of rings (servers,
//! flavor, multiple) rolls out to a growing fraction of the keys.

use std::fmt;
use std::sync::Arc;

use crate::owned::Owned;
use crate::ring::Ring;
use crate::{bucket, check, ffi, for_key_chunks, Error, KEY_CHUNK};

/// A rollout of 100%, in parts per million.
pub const ROLLOUT_SCALE: u32 = ffi::CHASH_ROLLOUT_SCALE;

/// Which ring of a [`Migration`] answered.
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub enum Side {
    Old,
    New,
}

/// A key's choice: the ring it went through and its bucket there (an index
/// of [`Migration::ring`] of that side).
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
pub struct Route {
    pub side: Side,
    pub bucket: usize,
}

/// Lookups answered by each ring so far (concurrent ones may be missing).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct MigrationCounters {
    pub old: u64,
    pub new: u64,
}

/// Both rings of a change, each key on the new ring iff the migration is
/// in scope and the key's bucket ([`Migration::key_bucket`]) is below the
/// rollout. Both controls start closed: out of scope, 0 ppm. Raising the
/// rollout only moves keys from old to new; lowering it returns exactly
/// those keys.
///
/// Lookups and controls take `&self`, are lock-free and run from any
/// thread: share the migration in an `Arc`. It holds both rings.
///
/// ```
/// use std::sync::Arc;
/// use chash::{Flavor, Migration, Ring, Side};
///
/// let servers = [("10.0.0.1:80", 1), ("10.0.0.2:80", 1), ("10.0.0.3:80", 1)];
/// let old = Arc::new(Ring::build(Flavor::PingoraV1, 0, servers)?);
/// let new = Arc::new(Ring::build(Flavor::PingoraV2, 16, servers)?);
/// let migration = Migration::new(old, new, 42)?;
/// migration.set_in_scope(true);
/// migration.set_rollout(0.25)?; // a quarter of the keys on the new ring
/// let (address, side) = migration.node(b"/some/url").unwrap();
/// assert_eq!(side == Side::New, Migration::key_bucket(b"/some/url", 42) < 250_000);
/// # let _ = address;
/// # Ok::<(), chash::Error>(())
/// ```
///
/// An address it answers is borrowed from its rings:
///
/// ```compile_fail,E0505
/// fn address_after_drop(migration: chash::Migration) -> usize {
///     let (address, _) = migration.node(b"key").unwrap();
///     drop(migration);
///     address.len() // error: `migration` moved while borrowed
/// }
/// ```
pub struct Migration {
    raw: Owned<ffi::chash_migration>,
    old: Arc<Ring>,
    new: Arc<Ring>,
}

impl fmt::Debug for Migration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Migration")
            .field("in_scope", &self.in_scope())
            .field("rollout_ppm", &self.rollout_ppm())
            .field("counters", &self.counters())
            .finish()
    }
}

fn side_of(side: u32) -> Side {
    if side == ffi::CHASH_SIDE_NEW {
        Side::New
    } else {
        Side::Old
    }
}

impl Migration {
    /// A migration from `old` to `new`, keys picked by a 64-bit hash seeded
    /// by `seed` (the same seed in every process routes alike). The rings
    /// must come from one backend snapshot (same servers and weights):
    /// [`crate::ErrorKind::BadArgument`] listing the differences otherwise.
    /// O(N log N).
    pub fn new(old: Arc<Ring>, new: Arc<Ring>, seed: u64) -> Result<Migration, Error> {
        Self::create(old, new, seed, false)
    }

    /// [`Migration::new`] for rings of different servers (a change of the
    /// fleet itself); [`Migration::backends_match`] then says false.
    pub fn with_backend_mismatch(
        old: Arc<Ring>,
        new: Arc<Ring>,
        seed: u64,
    ) -> Result<Migration, Error> {
        Self::create(old, new, seed, true)
    }

    fn create(old: Arc<Ring>, new: Arc<Ring>, seed: u64, allow: bool) -> Result<Migration, Error> {
        let mut out = std::ptr::null_mut();
        // SAFETY: both rings are alive (the migration takes its own
        // references); out is a valid out-pointer.
        let code =
            unsafe { ffi::chash_migration_new(old.raw(), new.raw(), seed, allow.into(), &mut out) };
        // SAFETY: on success a new migration, owned here.
        let raw = unsafe { Owned::new(code, out) }.map_err(Error::last)?;
        Ok(Migration { raw, old, new })
    }

    /// Sets the share of keys on the new ring, 0.0 ..= 1.0
    /// ([`crate::ErrorKind::BadArgument`] otherwise, no change).
    pub fn set_rollout(&self, fraction: f64) -> Result<(), Error> {
        // SAFETY: alive; the control is an atomic store in the library.
        check(unsafe { ffi::chash_migration_set_rollout(self.raw.as_ptr(), fraction) })
    }

    /// Sets the rollout in parts per million, at most [`ROLLOUT_SCALE`].
    pub fn set_rollout_ppm(&self, ppm: u32) -> Result<(), Error> {
        // SAFETY: as set_rollout.
        check(unsafe { ffi::chash_migration_set_rollout_ppm(self.raw.as_ptr(), ppm) })
    }

    pub fn rollout_ppm(&self) -> u32 {
        // SAFETY: alive.
        unsafe { ffi::chash_migration_rollout_ppm(self.raw.as_ptr()) }
    }

    /// Out of scope, every key takes the old ring whatever the rollout.
    pub fn set_in_scope(&self, in_scope: bool) {
        // SAFETY: alive; only a NULL handle fails.
        let code = unsafe { ffi::chash_migration_set_in_scope(self.raw.as_ptr(), in_scope.into()) };
        debug_assert_eq!(code, ffi::CHASH_OK);
    }

    pub fn in_scope(&self) -> bool {
        // SAFETY: alive.
        unsafe { ffi::chash_migration_in_scope(self.raw.as_ptr()) != 0 }
    }

    /// The ring of `side`.
    pub fn ring(&self, side: Side) -> &Arc<Ring> {
        match side {
            Side::Old => &self.old,
            Side::New => &self.new,
        }
    }

    /// False only for a migration made by
    /// [`Migration::with_backend_mismatch`] over differing servers.
    pub fn backends_match(&self) -> bool {
        // SAFETY: alive.
        unsafe { ffi::chash_migration_backends_match(self.raw.as_ptr()) != 0 }
    }

    /// The key's ring and bucket, counted; `None` if that ring has no
    /// points. Lock-free, no allocation: a lookup plus, while the rollout
    /// is strictly between 0 and 100%, the key's 64-bit hash.
    pub fn route(&self, key: &[u8]) -> Option<Route> {
        let mut side = ffi::CHASH_SIDE_OLD;
        // SAFETY: alive; the key is a valid slice; side a valid out-pointer.
        let node = unsafe {
            ffi::chash_migration_find(self.raw.as_ptr(), key.as_ptr().cast(), key.len(), &mut side)
        };
        bucket(node).map(|bucket| Route { side: side_of(side), bucket })
    }

    /// The address of the key's server and the side that answered.
    pub fn node(&self, key: &[u8]) -> Option<(&str, Side)> {
        let route = self.route(key)?;
        self.ring(route.side).address(route.bucket).map(|address| (address, route.side))
    }

    /// Routes in a batch: `out[i]` for `keys[i]`, counted. No heap
    /// allocation (chunks of 256 keys on the stack).
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `keys`.
    pub fn routes<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [Option<Route>]) {
        let (mut nodes, mut sides) = ([0u32; KEY_CHUNK], [0u8; KEY_CHUNK]);
        for_key_chunks("routes", keys, out, |keys, lens, out| {
            // SAFETY: out.len() keys and lengths (for_key_chunks); nodes and
            // sides hold as many.
            let code = unsafe {
                ffi::chash_migration_find_keys(
                    self.raw.as_ptr(),
                    keys,
                    lens,
                    out.len(),
                    nodes.as_mut_ptr(),
                    sides.as_mut_ptr(),
                )
            };
            for (i, slot) in out.iter_mut().enumerate() {
                *slot =
                    bucket(nodes[i]).map(|bucket| Route { side: side_of(sides[i].into()), bucket });
            }
            code
        });
    }

    /// Lookups answered by each ring so far.
    pub fn counters(&self) -> MigrationCounters {
        let (mut old, mut new) = (0u64, 0u64);
        // SAFETY: alive; valid out-pointers.
        let code = unsafe { ffi::chash_migration_counters(self.raw.as_ptr(), &mut old, &mut new) };
        debug_assert_eq!(code, ffi::CHASH_OK);
        MigrationCounters { old, new }
    }

    /// The per-key hash that picks the ring (include/chash/migration.h), for
    /// other processes to agree with.
    pub fn key_hash(key: &[u8], seed: u64) -> u64 {
        // SAFETY: a pure function of a valid slice.
        unsafe { ffi::chash_migration_key_hash(key.as_ptr().cast(), key.len(), seed) }
    }

    /// The key's bucket, 0 ..< [`ROLLOUT_SCALE`]: it takes the new ring iff
    /// in scope and the bucket is below the rollout in ppm.
    pub fn key_bucket(key: &[u8], seed: u64) -> u32 {
        // SAFETY: a pure function.
        unsafe { ffi::chash_migration_bucket(Self::key_hash(key, seed)) }
    }
}
