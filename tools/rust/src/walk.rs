//! The failover order over the available buckets only
//! ([`crate::Ring::distinct_iter_available`],
//! [`crate::Continuum::distinct_iter_available`]), and the collision table it
//! needs ([`crate::Ring::collision_losers`]).
//!
//! The C library's distinct walk knows no mask, and skipping the unavailable
//! buckets of it is not quite the walk of the ring of the available buckets:
//! where an unavailable bucket won a collision, an available bucket's point
//! at that hash was dropped, and the smaller ring has it. So this walk goes
//! point by point, as the C library's masked lookup does
//! (include/chash/failover.h): at each hash the column's winner if it is
//! available, else the first available loser of the collision table (kept
//! in tie-break order), each bucket the first time it comes.

use crate::ffi;
use crate::ops::NodeMask;
use crate::NO_BUCKET;

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

    /// The best-ranked available loser at `hash`. O(log collisions).
    fn first_available(&self, hash: u32, mask: &NodeMask) -> Option<usize> {
        let start = self.hashes.partition_point(|&h| h < hash);
        self.hashes[start..]
            .iter()
            .zip(&self.buckets[start..])
            .take_while(|(&h, _)| h == hash)
            .map(|(_, &bucket)| bucket as usize)
            .find(|&bucket| mask.get(bucket))
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
    ring: *const ffi::chash_ring,
    mask: &'a NodeMask,
    losers: Losers<'a>,
    points: u64,
    position: u64,
    steps_left: u64,
    // Available buckets with points not yet returned: the walk ends when it
    // reaches 0 instead of finishing the turn of the ring.
    remaining: usize,
    seen: Vec<u64>,
}

// SAFETY: the ring handle is only read, through calls documented
// thread-safe; the borrowed ring outlives the walk ('a).
unsafe impl Send for AvailableBuckets<'_> {}
unsafe impl Sync for AvailableBuckets<'_> {}

impl<'a> AvailableBuckets<'a> {
    /// # Safety
    ///
    /// `ring` is a live ring handle that outlives `'a`, with `buckets`
    /// buckets and `points` kept points.
    pub(crate) unsafe fn new(
        ring: *const ffi::chash_ring,
        buckets: usize,
        points: usize,
        hash: u32,
        mask: &'a NodeMask,
    ) -> AvailableBuckets<'a> {
        let start = ffi::chash_ring_find_position(ring, hash);
        let points = points as u64;
        // A bucket with weight > 0 has points in the ring of the available
        // buckets even if every one of them lost a collision here; a raw
        // ring's node counts by the points it kept.
        let remaining = (0..buckets.min(mask.len()))
            .filter(|&b| {
                mask.get(b)
                    && (ffi::chash_ring_owns_points(ring, b as u32) != 0
                        || ffi::chash_ring_node_weight(ring, b as u32) > 0)
            })
            .count();
        let empty = start == NO_BUCKET || points == 0;
        AvailableBuckets {
            ring,
            mask,
            losers: Losers::of(ring),
            points,
            position: if empty { 0 } else { u64::from(start) },
            steps_left: if empty { 0 } else { points },
            remaining: if empty { 0 } else { remaining },
            seen: vec![0u64; buckets.div_ceil(64)],
        }
    }
}

impl Iterator for AvailableBuckets<'_> {
    type Item = usize;

    /// O(1) a point passed (plus O(log collisions) at a point whose winner
    /// is unavailable); a whole walk passes each point at most once.
    fn next(&mut self) -> Option<usize> {
        while self.remaining > 0 && self.steps_left > 0 {
            let mut hash = 0u32;
            // SAFETY: the ring outlives the walk; position < points.
            let winner = unsafe { ffi::chash_ring_point_at(self.ring, self.position, &mut hash) };
            self.steps_left -= 1;
            self.position += 1;
            if self.position == self.points {
                self.position = 0;
            }
            if winner == NO_BUCKET {
                continue;
            }
            let owner = if self.mask.get(winner as usize) {
                Some(winner as usize)
            } else {
                self.losers.first_available(hash, self.mask)
            };
            if let Some(bucket) = owner {
                let (word, bit) = (bucket / 64, 1u64 << (bucket % 64));
                if self.seen[word] & bit == 0 {
                    self.seen[word] |= bit;
                    self.remaining -= 1;
                    return Some(bucket);
                }
            }
        }
        None
    }
}
