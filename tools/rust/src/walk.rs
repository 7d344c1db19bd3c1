//! The failover order over distinct buckets ([`crate::Ring::distinct_iter`],
//! [`crate::Ring::distinct_iter_available`] and their [`crate::Continuum`]
//! forms), the point-by-point walk ([`crate::Ring::point_iter`]) and the
//! collision table ([`crate::Ring::collision_losers`]).
//!
//! The distinct walks are the C library's one walk (`chash_walk`,
//! include/chash/failover.h `NodeWalk`): each bucket once, in the order the
//! ring of the available buckets would walk them from a key's point (a down
//! winner's point goes to its first available collision loser). The crate
//! only gives it its memory, `chash_walk_size(ring)` bytes in a `Vec<u64>`.

use crate::ops::NodeMask;
use crate::{bucket, ffi, NO_BUCKET};

/// The points collisions dropped, as the C library keeps them: hashes
/// ascending, the best-ranked loser of a hash first. Borrowed from the ring.
#[derive(Copy, Clone)]
pub(crate) struct Losers<'a> {
    hashes: &'a [u32],
    buckets: &'a [u16],
}

impl<'a> Losers<'a> {
    /// # Safety
    ///
    /// `ring` is a live ring handle that outlives `'a`.
    pub(crate) unsafe fn of(ring: *const ffi::chash_ring) -> Losers<'a> {
        let (mut hashes, mut buckets, mut count) = (std::ptr::null(), std::ptr::null(), 0u64);
        let code = ffi::chash_ring_collision_losers(ring, &mut hashes, &mut buckets, &mut count);
        if code != ffi::CHASH_OK || hashes.is_null() || buckets.is_null() || count == 0 {
            return Losers { hashes: &[], buckets: &[] };
        }
        let count = count as usize;
        // SAFETY: count entries at each pointer, owned by the ring, which
        // outlives 'a (the caller's contract).
        Losers {
            hashes: std::slice::from_raw_parts(hashes, count),
            buckets: std::slice::from_raw_parts(buckets, count),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.hashes.len()
    }

    pub(crate) fn get(&self, i: usize) -> (u32, usize) {
        (self.hashes[i], self.buckets[i] as usize)
    }
}

/// One `chash_walk` and the memory it lives in. A walk that could not start
/// (never: the memory is sized by `chash_walk_size`) is an empty one.
pub(crate) struct Walk {
    // The walk points into this buffer (a heap allocation: moving the Vec
    // does not move it).
    _memory: Vec<u64>,
    walk: *mut ffi::chash_walk,
}

// SAFETY: the walk's memory is owned here; the ring and mask it reads are
// only read, through calls documented thread-safe, and outlive the walk
// (the borrows of the public iterators that hold it).
unsafe impl Send for Walk {}
unsafe impl Sync for Walk {}

impl Walk {
    /// # Safety
    ///
    /// `ring` is a live ring handle and `mask` NULL or a live mask; both
    /// outlive the walk, and the mask does not change while it lives.
    pub(crate) unsafe fn start(
        ring: *const ffi::chash_ring,
        mask: *const ffi::chash_node_mask,
        hash: u32,
    ) -> Walk {
        let bytes = ffi::chash_walk_size(ring);
        let mut memory = vec![0u64; bytes.div_ceil(8)];
        let mut walk = std::ptr::null_mut();
        let code = ffi::chash_walk_start(
            memory.as_mut_ptr().cast(),
            memory.len() * 8,
            ring,
            mask,
            hash,
            &mut walk,
        );
        if code != ffi::CHASH_OK {
            walk = std::ptr::null_mut();
        }
        Walk { _memory: memory, walk }
    }

    pub(crate) fn next_bucket(&mut self) -> Option<usize> {
        if self.walk.is_null() {
            return None;
        }
        // SAFETY: a started walk in self's memory; its ring and mask are
        // alive (start's contract).
        bucket(unsafe { ffi::chash_walk_next(self.walk) })
    }
}

/// Each available bucket once, in the order the ring of only the available
/// buckets would walk them from a key's point (see
/// [`crate::Ring::distinct_iter_available`]): bucket indices. Borrows its
/// ring and its mask: it outlives neither.
///
/// ```compile_fail,E0505
/// fn walk_after_drop(ring: chash::Ring, mask: chash::NodeMask) -> Option<usize> {
///     let mut walk = ring.distinct_iter_available(b"key", &mask);
///     drop(mask);
///     walk.next() // error: `mask` moved while borrowed
/// }
/// ```
pub struct AvailableBuckets<'a> {
    walk: Walk,
    _mask: &'a NodeMask,
}

impl<'a> AvailableBuckets<'a> {
    /// # Safety
    ///
    /// `ring` is a live ring handle that outlives `'a`.
    pub(crate) unsafe fn new(
        ring: *const ffi::chash_ring,
        hash: u32,
        mask: &'a NodeMask,
    ) -> AvailableBuckets<'a> {
        AvailableBuckets { walk: Walk::start(ring, mask.raw(), hash), _mask: mask }
    }
}

impl Iterator for AvailableBuckets<'_> {
    type Item = usize;

    /// O(1) a point passed; a whole walk passes each point at most once.
    fn next(&mut self) -> Option<usize> {
        self.walk.next_bucket()
    }
}

/// The points from a key's in ring order, forever (see
/// [`crate::Ring::point_iter`]): the bucket of each point. Borrows its ring.
pub struct PointIter<'a> {
    cursor: ffi::chash_cursor,
    _ring: &'a crate::Ring,
}

impl<'a> PointIter<'a> {
    pub(crate) fn new(ring: &'a crate::Ring, hash: u32) -> PointIter<'a> {
        PointIter { cursor: ring.cursor_at(hash), _ring: ring }
    }

    /// The hash of the point the next call to `next` answers; `None` on an
    /// empty ring.
    pub fn peek_hash(&self) -> Option<u32> {
        // SAFETY: the cursor walks the borrowed ring.
        let node = unsafe { ffi::chash_cursor_node(&self.cursor) };
        (node != NO_BUCKET).then(|| unsafe { ffi::chash_cursor_hash(&self.cursor) })
    }
}

impl Iterator for PointIter<'_> {
    type Item = usize;

    /// O(1).
    fn next(&mut self) -> Option<usize> {
        // SAFETY: the cursor walks the borrowed ring, alive for 'a.
        bucket(unsafe { ffi::chash_cursor_next(&mut self.cursor) })
    }
}
