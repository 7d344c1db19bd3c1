//! [`Ring`]: a ring of any flavor whose servers are address text rather
//! than `SocketAddr`s: what a snapshot holds (nginx rings name servers as
//! `host:port` text), what a [`crate::Reloader`] and a [`crate::Migration`]
//! hand out.

use std::fmt;
use std::os::raw::c_int;

use crate::ops::{Availability, NodeMask};
use crate::owned::{sized, Owned};
use crate::walk::{AvailableBuckets, Losers, PointIter, Walk};
use crate::{
    bucket, check, ffi, for_key_chunks, Builder, Continuum, Error, ErrorKind, FINGERPRINT_SIZE,
    NO_BUCKET,
};

/// Which program's ring a [`Ring`] reproduces: how it hashes its servers
/// into points and keys into hashes, and which point answers a hash.
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum Flavor {
    /// nginx `hash $key consistent;` (160 points a weight unit).
    Nginx,
    /// pingora-ketama `Continuum::new` (160 points a weight unit).
    PingoraV1,
    /// pingora-ketama `Version::V2 { point_multiple }`.
    PingoraV2,
    /// OpenResty's `resty.chash` (Apache APISIX's chash balancer): a server
    /// is an opaque id (any text), its points chain CRC32 over the id alone
    /// (160 a weight unit, or `point_multiple`); on a duplicated hash the
    /// smallest id by bytes wins, where resty.chash follows Lua's table order.
    Resty,
    /// HAProxy `hash-type consistent` (2.6): 16 points a weight unit keyed
    /// by the server's id, the nearest point answers. Options:
    /// [`HaproxyOptions`](crate::HaproxyOptions); a node's id:
    /// [`Node::server_id`](crate::Node::server_id).
    Haproxy,
    /// MD5 ketama rings: libmemcached 1.1 (weighted or not, spy), twemproxy
    /// 0.5 and libketama. Options: [`KetamaOptions`](crate::KetamaOptions);
    /// twemproxy's server name: [`Node::name`](crate::Node::name).
    KetamaMd5,
    /// Varnish 7.1 vmod_directors' shard director: the ring hashes the
    /// backend's ident (by default its name). Options:
    /// [`VarnishOptions`](crate::VarnishOptions).
    VarnishShard,
    /// Envoy `RING_HASH`: 64-bit key hashes ([`Ring::bucket_idx_by_hash64`]).
    /// Options: [`EnvoyRingOptions`](crate::EnvoyRingOptions).
    EnvoyRing,
    /// Envoy `MAGLEV`: a lookup table, 64-bit key hashes. Options:
    /// [`MaglevOptions`](crate::MaglevOptions).
    EnvoyMaglev,
}

impl Flavor {
    /// The flavor's name as the `chash` command spells it (`--flavor`):
    /// "nginx", "pingora-v1", "pingora-v2", "resty", "haproxy",
    /// "ketama-md5", "varnish-shard", "envoy-ring", "envoy-maglev" (the
    /// library's flavor table, `chash_flavor_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: chash_flavor_name returns a static NUL-terminated string
        // of the library (or NULL, for a value no flavor has).
        let name = unsafe { ffi::chash_flavor_name(self.code()) };
        if name.is_null() {
            return "unknown";
        }
        unsafe { std::ffi::CStr::from_ptr(name) }.to_str().unwrap_or("unknown")
    }

    /// The names of every flavor of the linked library's table, in order
    /// (a library newer than this crate may have more than [`Flavor`]
    /// names: [`Flavor::from_name`] says so).
    pub fn library_names() -> Vec<&'static str> {
        let mut names = Vec::new();
        for code in 0u32.. {
            // SAFETY: as in name(): a static string, or NULL past the table.
            let name = unsafe { ffi::chash_flavor_name(code) };
            if name.is_null() {
                break;
            }
            names.push(unsafe { std::ffi::CStr::from_ptr(name) }.to_str().unwrap_or("unknown"));
        }
        names
    }

    /// The flavor named `name` as [`Flavor::name`] spells it; an error
    /// listing the names otherwise (also a flavor the library has and this
    /// crate does not name yet).
    pub fn from_name(name: &str) -> Result<Flavor, Error> {
        let mut code = 0u32;
        // SAFETY: the name's bytes and length; `code` is written on success.
        let rc = unsafe {
            ffi::chash_flavor_from_name(name.as_ptr().cast(), name.len(), &mut code)
        };
        check(rc)?;
        Flavor::from_code(code).ok_or_else(|| {
            Error::new(
                ErrorKind::BadArgument,
                format!("flavor '{name}' is not named by this crate (version {})",
                        env!("CARGO_PKG_VERSION")),
            )
        })
    }

    pub(crate) fn code(self) -> u32 {
        match self {
            Flavor::Nginx => ffi::CHASH_FLAVOR_NGINX,
            Flavor::PingoraV1 => ffi::CHASH_FLAVOR_PINGORA_V1,
            Flavor::PingoraV2 => ffi::CHASH_FLAVOR_PINGORA_V2,
            Flavor::Resty => ffi::CHASH_FLAVOR_RESTY,
            Flavor::Haproxy => ffi::CHASH_FLAVOR_HAPROXY,
            Flavor::KetamaMd5 => ffi::CHASH_FLAVOR_KETAMA_MD5,
            Flavor::VarnishShard => ffi::CHASH_FLAVOR_VARNISH_SHARD,
            Flavor::EnvoyRing => ffi::CHASH_FLAVOR_ENVOY_RING,
            Flavor::EnvoyMaglev => ffi::CHASH_FLAVOR_ENVOY_MAGLEV,
        }
    }

    // None for a raw-point ring (CHASH_NO_FLAVOR) and for flavors this
    // crate does not name yet.
    pub(crate) fn from_code(code: u32) -> Option<Flavor> {
        match code {
            ffi::CHASH_FLAVOR_NGINX => Some(Flavor::Nginx),
            ffi::CHASH_FLAVOR_PINGORA_V1 => Some(Flavor::PingoraV1),
            ffi::CHASH_FLAVOR_PINGORA_V2 => Some(Flavor::PingoraV2),
            ffi::CHASH_FLAVOR_RESTY => Some(Flavor::Resty),
            ffi::CHASH_FLAVOR_HAPROXY => Some(Flavor::Haproxy),
            ffi::CHASH_FLAVOR_KETAMA_MD5 => Some(Flavor::KetamaMd5),
            ffi::CHASH_FLAVOR_VARNISH_SHARD => Some(Flavor::VarnishShard),
            ffi::CHASH_FLAVOR_ENVOY_RING => Some(Flavor::EnvoyRing),
            ffi::CHASH_FLAVOR_ENVOY_MAGLEV => Some(Flavor::EnvoyMaglev),
            ffi::CHASH_NO_FLAVOR => None,
            _ => None,
        }
    }
}

// The buckets a lookup may answer with: all of them (the plain lookups),
// those a mask leaves available (`_available`), or those an Availability
// currently publishes (`_published`).
#[derive(Clone, Copy)]
pub(crate) enum Among<'a> {
    All,
    Mask(&'a NodeMask),
    Published(&'a Availability),
}

// The four lookups among the buckets a mask leaves available (`$mask`, a
// NodeMask or an Availability, as `$among` of it): of a key, of a key hash,
// the address of a key, and a batch (its panic names it `Ring::NAME`).
macro_rules! among_lookups {
    (
        $mask:ident: $ty:ty => $among:path,
        $(#[$key_doc:meta])* $key:ident,
        $(#[$hash_doc:meta])* $hash:ident,
        $(#[$node_doc:meta])* $node:ident,
        $(#[$keys_doc:meta])* $keys:ident $(,)?
    ) => {
        $(#[$key_doc])*
        pub fn $key(&self, key: &[u8], $mask: $ty) -> Option<usize> {
            self.find(key, $among($mask))
        }

        $(#[$hash_doc])*
        pub fn $hash(&self, hash: u32, $mask: $ty) -> Option<usize> {
            self.find_hash(hash, $among($mask))
        }

        $(#[$node_doc])*
        pub fn $node(&self, key: &[u8], $mask: $ty) -> Option<&str> {
            self.$key(key, $mask).and_then(|idx| self.address(idx))
        }

        $(#[$keys_doc])*
        pub fn $keys<K: AsRef<[u8]>>(&self, keys: &[K], $mask: $ty, out: &mut [u32]) {
            self.find_keys(concat!("Ring::", stringify!($keys)), keys, $among($mask), out);
        }
    };
}

/// An immutable consistent-hash ring whose servers are bucket indices
/// `0..num_buckets()` with address text. Lookups take `&self` and run from
/// any number of threads without locks; share it in an `Arc`.
///
/// A ring taken from a [`crate::Snapshot`] keeps the snapshot's mapping
/// alive on its own: it stays valid after the snapshot is dropped.
pub struct Ring {
    raw: Owned<ffi::chash_ring>,
    buckets: usize,
    points: usize,
}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("flavor", &self.flavor())
            .field("buckets", &self.buckets)
            .field("points", &self.points)
            .finish()
    }
}

/// A ring of pingora-ketama's buckets, the addresses as pingora hashes them
/// (`ip:port`, `[ipv6]:port`): for a [`crate::Migration`] from a
/// `Continuum`. O(1), no copy.
impl From<Continuum> for Ring {
    fn from(continuum: Continuum) -> Ring {
        continuum.ring
    }
}

impl Ring {
    /// The Ring of a ring handle.
    pub(crate) fn new(raw: Owned<ffi::chash_ring>) -> Ring {
        // SAFETY: the ring is alive.
        let buckets = unsafe { ffi::chash_ring_num_nodes(raw.as_ptr()) } as usize;
        let points = unsafe { ffi::chash_ring_num_points(raw.as_ptr()) } as usize;
        Ring { raw, buckets, points }
    }

    pub(crate) fn raw(&self) -> *const ffi::chash_ring {
        self.raw.as_ptr()
    }

    /// The ring of `servers` (address text and weight; bucket `i` is the
    /// i-th) for `flavor` with `point_multiple` points a weight unit (0 =
    /// 160; nginx and pingora v1 take only 160). The errors name the server.
    /// Pingora flavors hash the address text as given: write it as
    /// pingora prints a `SocketAddr`. The other programs' flavors build
    /// here with their defaults; their options and node ids or names:
    /// [`crate::RingBuilder`].
    pub fn build<I, A>(flavor: Flavor, point_multiple: u32, servers: I) -> Result<Ring, Error>
    where
        I: IntoIterator<Item = (A, u32)>,
        A: AsRef<str>,
    {
        let mut builder = Builder::new(flavor.code(), point_multiple)?;
        for (address, weight) in servers {
            builder.add(address.as_ref(), weight)?;
        }
        builder.build()
    }

    /// The flavor; `None` for a ring of a flavor this crate does not name.
    pub fn flavor(&self) -> Option<Flavor> {
        // SAFETY: the ring is alive.
        Flavor::from_code(unsafe { ffi::chash_ring_flavor(self.raw()) })
    }

    /// Points per weight unit.
    pub fn point_multiple(&self) -> u32 {
        // SAFETY: the ring is alive.
        unsafe { ffi::chash_ring_point_multiple(self.raw()) }
    }

    /// Buckets, drained ones (weight 0) included.
    pub fn num_buckets(&self) -> usize {
        self.buckets
    }

    /// Buckets that own at least one point.
    pub fn buckets_with_points(&self) -> usize {
        // SAFETY: the ring is alive.
        unsafe { ffi::chash_ring_nodes_with_points(self.raw()) as usize }
    }

    /// Points kept after collisions.
    pub fn num_points(&self) -> usize {
        self.points
    }

    /// Points generated (the sum of weight × multiple).
    pub fn points_generated(&self) -> u64 {
        // SAFETY: the ring is alive.
        unsafe { ffi::chash_ring_points_generated(self.raw()) }
    }

    /// The address of bucket `idx` as bytes, exactly as it was added (or
    /// written in the servers file of a snapshot); `None` past the end.
    /// Borrowed from the ring: O(1), no copy.
    pub fn address_bytes(&self, idx: usize) -> Option<&[u8]> {
        let node = u32::try_from(idx).ok()?;
        let mut len = 0usize;
        // SAFETY: the ring is alive; len is a valid out-pointer.
        let text = unsafe { ffi::chash_ring_node_address(self.raw(), node, &mut len) };
        if text.is_null() {
            return None;
        }
        // SAFETY: len bytes at text, owned by the ring, which outlives the
        // borrow of self.
        Some(unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) })
    }

    /// The address of bucket `idx`; `None` past the end or if it is not
    /// UTF-8 (see [`Ring::address_bytes`]).
    pub fn address(&self, idx: usize) -> Option<&str> {
        self.address_bytes(idx).and_then(|bytes| std::str::from_utf8(bytes).ok())
    }

    /// The weight of bucket `idx`; `None` past the end.
    pub fn weight(&self, idx: usize) -> Option<u32> {
        // SAFETY: the ring is alive; idx is checked first.
        (idx < self.buckets).then(|| unsafe { ffi::chash_ring_node_weight(self.raw(), idx as u32) })
    }

    /// The bucket of `key`; `None` when the ring has no points. Lock-free,
    /// no allocation: O(key + log16 points).
    pub fn bucket_idx(&self, key: &[u8]) -> Option<usize> {
        self.find(key, Among::All)
    }

    /// The bucket of a key whose key hash ([`Ring::key_hash`]) is `hash`:
    /// its CRC32 ([`crate::crc32`]) on nginx, pingora and resty rings.
    /// `None` on Envoy's rings, whose key hashes are 64 bits
    /// ([`Ring::bucket_idx_by_hash64`]).
    pub fn bucket_idx_by_hash(&self, hash: u32) -> Option<usize> {
        self.find_hash(hash, Among::All)
    }

    /// The address of `key`'s bucket (see [`Ring::address`]).
    pub fn node(&self, key: &[u8]) -> Option<&str> {
        self.bucket_idx(key).and_then(|idx| self.address(idx))
    }

    /// The hash of `key` as the ring's program computes it: CRC32 on nginx,
    /// pingora and resty rings, HAProxy's function (and avalanche), the
    /// ketama key hash, Varnish's SHA-256 (its last 4 bytes), Envoy's XXH64.
    /// Below 2^32 but on Envoy's rings ([`Ring::key_hash_bits`]). O(key).
    pub fn key_hash(&self, key: &[u8]) -> u64 {
        // SAFETY: the key is a valid slice; the ring is alive.
        unsafe { ffi::chash_ring_key_hash(self.raw(), key.as_ptr().cast(), key.len()) }
    }

    /// The width of [`Ring::key_hash`]: 64 on envoy-ring and envoy-maglev
    /// rings, else 32.
    pub fn key_hash_bits(&self) -> u32 {
        // SAFETY: the ring is alive.
        unsafe { ffi::chash_ring_key_hash_bits(self.raw()) }
    }

    // The key hash the walks and the bounded loads start from (they take 32
    // bits: on Envoy's rings the walks are empty, refused by the C library).
    fn key_hash32(&self, key: &[u8]) -> u32 {
        self.key_hash(key) as u32
    }

    /// The bucket of a key hash of any flavor ([`Ring::key_hash`]'s values):
    /// the lookup of Envoy's 64-bit request hashes; on 32-bit rings
    /// [`Ring::bucket_idx_by_hash`], and `None` above 2^32 - 1.
    pub fn bucket_idx_by_hash64(&self, hash: u64) -> Option<usize> {
        // SAFETY: the ring is alive.
        bucket(unsafe { ffi::chash_ring_find_hash64(self.raw(), hash) })
    }

    /// The bucket the program picks on retry `attempt` (0: the first pick,
    /// [`Ring::bucket_idx_by_hash64`]) when it retries without being told
    /// which server failed: envoy-ring the entry `attempt` places on,
    /// envoy-maglev Envoy's rehashed table entry; other rings the point
    /// `attempt` steps on from the hash's (HAProxy and Varnish walk on to
    /// the next distinct server instead: [`Ring::distinct_iter`]).
    pub fn bucket_idx_for_attempt(&self, hash: u64, attempt: u32) -> Option<usize> {
        // SAFETY: the ring is alive.
        bucket(unsafe { ffi::chash_ring_find_attempt(self.raw(), hash, attempt) })
    }

    /// The program's picks for `key` on attempt 0, 1, 2, ... up to
    /// `u32::MAX` ([`Ring::bucket_idx_for_attempt`] of [`Ring::key_hash`]; take
    /// as many as the retry policy allows): Envoy's retries, repeats
    /// included (Envoy's `previous_hosts` predicate skips the hosts tried:
    /// skip them as you go; past [`Ring::num_points`] attempts the ring
    /// entries come round again). Empty on an empty ring. O(1) an attempt
    /// (Maglev: one rehash), no allocation.
    ///
    /// ```
    /// use chash::{Flavor, Node, Ring, RingOptions};
    /// let ring = Ring::build_with_options(
    ///     &RingOptions::new(Flavor::EnvoyRing),
    ///     [Node::new("10.0.0.1:80", 1), Node::new("10.0.0.2:80", 1)],
    /// )?;
    /// assert_eq!(ring.distinct_iter(b"user-42").count(), 0); // Envoy retries by attempt
    /// let mut attempts = ring.attempt_iter(b"user-42");
    /// assert_eq!(attempts.next(), ring.bucket_idx_by_hash64(ring.key_hash(b"user-42")));
    /// let retries: Vec<usize> = ring.attempt_iter(b"user-42").take(5).collect();
    /// assert_eq!(retries.len(), 5);
    /// # Ok::<(), chash::Error>(())
    /// ```
    pub fn attempt_iter(&self, key: &[u8]) -> impl Iterator<Item = usize> + '_ {
        self.attempt_iter_by_hash(self.key_hash(key))
    }

    /// [`Ring::attempt_iter`] from a key hash of the ring's width
    /// ([`Ring::key_hash`]: Envoy's 64-bit request hash).
    pub fn attempt_iter_by_hash(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        (0..=u32::MAX).map_while(move |attempt| self.bucket_idx_for_attempt(hash, attempt))
    }

    /// Buckets of many keys at once: `out[i]` for `keys[i]`, [`NO_BUCKET`]
    /// on an empty ring. No heap allocation.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `keys`.
    pub fn bucket_idxs<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [u32]) {
        self.find_keys("Ring::bucket_idxs", keys, Among::All, out);
    }

    // The lookups of `key` (find), of a key whose key hash is `hash`
    // (find_hash) and of many keys (find_keys; `what` names the public call
    // in its panic) among the buckets `among`: every lookup of a Ring, a
    // Continuum and an Availability (inlined: `among` is known at each call).
    #[inline]
    pub(crate) fn find(&self, key: &[u8], among: Among<'_>) -> Option<usize> {
        let (ring, key_len, key) = (self.raw(), key.len(), key.as_ptr().cast());
        // SAFETY: the key is a valid slice; the ring, mask and availability
        // are alive (borrowed).
        bucket(unsafe {
            match among {
                Among::All => ffi::chash_ring_find(ring, key, key_len),
                Among::Mask(mask) => ffi::chash_ring_find_available(ring, mask.raw(), key, key_len),
                Among::Published(a) => ffi::chash_availability_find(a.raw(), ring, key, key_len),
            }
        })
    }

    #[inline]
    pub(crate) fn find_hash(&self, hash: u32, among: Among<'_>) -> Option<usize> {
        let ring = self.raw();
        // SAFETY: as find.
        bucket(unsafe {
            match among {
                Among::All => ffi::chash_ring_find_hash(ring, hash),
                Among::Mask(mask) => ffi::chash_ring_find_available_hash(ring, mask.raw(), hash),
                Among::Published(a) => ffi::chash_availability_find_hash(a.raw(), ring, hash),
            }
        })
    }

    pub(crate) fn find_keys<K: AsRef<[u8]>>(
        &self,
        what: &str,
        keys: &[K],
        among: Among<'_>,
        out: &mut [u32],
    ) {
        let ring = self.raw();
        for_key_chunks(what, keys, out, |keys, lens, out| {
            let (n, out) = (out.len(), out.as_mut_ptr());
            // SAFETY: n valid keys and lengths, out holds n (for_key_chunks);
            // as find.
            unsafe {
                match among {
                    Among::All => ffi::chash_ring_find_keys(ring, keys, lens, n, out),
                    Among::Mask(mask) => {
                        ffi::chash_ring_find_available_keys(ring, mask.raw(), keys, lens, n, out)
                    }
                    Among::Published(a) => {
                        ffi::chash_availability_find_keys(a.raw(), ring, keys, lens, n, out)
                    }
                }
            }
        });
    }

    /// Whether masked lookups on this ring answer as its program would. False
    /// on the rings whose programs rebuild without the buckets that are out
    /// instead of skipping them (weighted libmemcached and twemproxy
    /// ketama, libketama, Envoy's ring and Maglev): there every masked
    /// lookup answers `None` ([`MASK_REFUSED`](crate::MASK_REFUSED) in a
    /// batch), and the exact answer is a lookup on the ring built from the
    /// available buckets.
    pub fn masks_exactly(&self) -> bool {
        // SAFETY: the ring is alive (borrowed).
        unsafe { ffi::chash_ring_masks_exactly(self.raw()) != 0 }
    }

    among_lookups!(mask: &NodeMask => Among::Mask,
        /// The bucket the ring of the buckets `mask` leaves available would
        /// answer for `key` (a snapshot's subset, or health), without building
        /// that ring; `None` if no available bucket owns a point, or on a ring
        /// that masks inexactly ([`Ring::masks_exactly`]). Bucket ids at or past
        /// the mask's length count as unavailable.
        bucket_idx_available,
        /// [`Ring::bucket_idx_available`] of a key whose key hash ([`Ring::key_hash`]) is `hash`.
        bucket_idx_available_by_hash,
        /// The address [`Ring::bucket_idx_available`] answers with.
        node_available,
        /// Masked lookups in a batch: `out[i]` for `keys[i]`, [`NO_BUCKET`](crate::NO_BUCKET)
        /// where no available bucket owns a point, [`MASK_REFUSED`](crate::MASK_REFUSED)
        /// on a ring that masks inexactly ([`Ring::masks_exactly`]).
        ///
        /// # Panics
        ///
        /// If `out` is shorter than `keys`.
        bucket_idxs_available,
    );

    /// Each bucket once, in ring order from `key`'s point: the failover
    /// order (the C library's `chash_walk` without a mask), ending after
    /// the last bucket that owns points. Its seen-set, 128 bytes plus a bit
    /// a bucket, is one heap allocation a walk. Empty on Envoy's rings
    /// ([`Ring::key_hash_bits`] 64), which the C library refuses to walk:
    /// Envoy retries by attempt, [`Ring::attempt_iter`].
    pub fn distinct_iter(&self, key: &[u8]) -> DistinctBuckets<'_> {
        self.distinct_iter_by_hash(self.key_hash32(key))
    }

    /// [`Ring::distinct_iter`] from a key whose key hash ([`Ring::key_hash`]) is `hash`.
    pub fn distinct_iter_by_hash(&self, hash: u32) -> DistinctBuckets<'_> {
        // SAFETY: the ring outlives the walk (the borrow of self); no mask.
        let walk = unsafe { Walk::start(self.raw(), std::ptr::null(), hash) };
        DistinctBuckets { walk, _ring: self }
    }

    /// The points from `key`'s point in ring order, forever (a bucket as
    /// often as it owns points; after [`Ring::num_points`] steps it is back
    /// at its start): the failover walk of pingora's `node_iter` and nginx's
    /// `hash consistent`, as bucket indices. Empty on an empty ring and on
    /// Envoy's rings ([`Ring::attempt_iter`]). O(1) a step, no allocation.
    ///
    /// ```
    /// let ring = chash::Ring::build(chash::Flavor::Nginx, 0, [("10.0.0.1:80", 1), ("10.0.0.2:80", 1)])?;
    /// let mut points = ring.point_iter(b"/some/url");
    /// assert_eq!(points.next(), ring.bucket_idx(b"/some/url"));
    /// assert_eq!(ring.point_iter(b"/some/url").take(ring.num_points()).count(), 320);
    /// # Ok::<(), chash::Error>(())
    /// ```
    pub fn point_iter(&self, key: &[u8]) -> PointIter<'_> {
        PointIter::new(self, self.key_hash32(key))
    }

    /// [`Ring::point_iter`] from a key whose key hash ([`Ring::key_hash`]) is `hash`.
    pub fn point_iter_by_hash(&self, hash: u32) -> PointIter<'_> {
        PointIter::new(self, hash)
    }

    /// Each bucket `mask` leaves available once, in the order the ring of
    /// only those buckets would walk them from `key`'s point: the failover
    /// order among healthy servers (or within a snapshot's subset), without
    /// building that ring. Its first bucket is
    /// [`Ring::bucket_idx_available`]'s answer. Unlike skipping the
    /// unavailable buckets of [`Ring::distinct_iter`], it also takes the
    /// points an unavailable bucket's point hid by winning a collision, so
    /// it is exactly the smaller ring's walk. Bucket ids at or past the
    /// mask's length count as unavailable.
    ///
    /// It is the C library's one failover walk (`chash_walk` with the
    /// mask), the walk nginx and chash.resty retry through too.
    ///
    /// Cost: O(log points + buckets / 64) to start, a seen-set of 128 bytes
    /// plus buckets / 8 (one heap allocation), then one step a point passed;
    /// a whole walk passes each point at most once.
    ///
    /// ```
    /// let ring = chash::Ring::build(
    ///     chash::Flavor::Nginx,
    ///     0,
    ///     [("10.0.0.1:80", 1), ("10.0.0.2:80", 2), ("10.0.0.3:80", 1)],
    /// )?;
    /// let mut up = chash::NodeMask::new(ring.num_buckets(), true)?;
    /// up.set(1, false)?; // 10.0.0.2 failed its health check
    /// let retries: Vec<usize> = ring.distinct_iter_available(b"/some/url", &up).collect();
    /// assert_eq!(retries.len(), 2);
    /// assert_eq!(retries.first().copied(), ring.bucket_idx_available(b"/some/url", &up));
    /// assert!(!retries.contains(&1));
    /// # Ok::<(), chash::Error>(())
    /// ```
    pub fn distinct_iter_available<'a>(
        &'a self,
        key: &[u8],
        mask: &'a NodeMask,
    ) -> AvailableBuckets<'a> {
        self.distinct_iter_available_by_hash(self.key_hash32(key), mask)
    }

    /// [`Ring::distinct_iter_available`] from a key whose key hash ([`Ring::key_hash`]) is `hash`.
    pub fn distinct_iter_available_by_hash<'a>(
        &'a self,
        hash: u32,
        mask: &'a NodeMask,
    ) -> AvailableBuckets<'a> {
        // SAFETY: the ring is alive for 'a, the walk's lifetime.
        unsafe { AvailableBuckets::new(self.raw(), hash, mask) }
    }

    /// The points collisions dropped: `(hash, bucket)` for each bucket that
    /// had a point at a hash another bucket won (the tie-break), hashes
    /// ascending, the best-ranked loser of a hash first, each pair once.
    /// What masked lookups consult when a winner is unavailable. Borrowed
    /// from the ring: O(1), no copy; empty when nothing collided.
    pub fn collision_losers(&self) -> impl ExactSizeIterator<Item = (u32, usize)> + '_ {
        // SAFETY: the ring outlives the borrow of self.
        let losers = unsafe { Losers::of(self.raw()) };
        (0..losers.len()).map(move |i| losers.get(i))
    }

    /// Whether bucket `idx` owns at least one point (kept after
    /// collisions); false past the end and for a drained bucket.
    pub fn owns_points(&self, idx: usize) -> bool {
        // SAFETY: the ring is alive; out-of-range ids answer 0.
        u32::try_from(idx)
            .is_ok_and(|node| unsafe { ffi::chash_ring_owns_points(self.raw(), node) } != 0)
    }

    among_lookups!(availability: &Availability => Among::Published,
        /// [`Ring::bucket_idx_available`] under the mask `availability`
        /// currently publishes (health checkers publish from other threads; the
        /// lookup takes no lock and answers under exactly one published mask).
        bucket_idx_published,
        /// [`Ring::bucket_idx_published`] of a key whose key hash ([`Ring::key_hash`]) is `hash`.
        bucket_idx_published_by_hash,
        /// The address [`Ring::bucket_idx_published`] answers with.
        node_published,
        /// [`Ring::bucket_idx_published`] in a batch, every key under the same
        /// published mask: `out[i]` for `keys[i]`, [`NO_BUCKET`] where no
        /// available bucket has a point.
        ///
        /// # Panics
        ///
        /// If `out` is shorter than `keys`.
        bucket_idxs_published,
    );

    /// Consistent hashing with bounded loads: the first bucket in the
    /// (masked) walk from `key`'s point whose load is below
    /// [`crate::bounded_load_capacity`]`(total, n, c)`, n and total over the
    /// available buckets that own points; `loads[i]` is bucket i's load.
    /// `Ok(None)` if no available bucket owns a point; an error
    /// ([`ErrorKind::BadArgument`]) if `c` is not a finite number > 1 or
    /// `loads` is shorter than the buckets. O(buckets) to sum the loads.
    pub fn bucket_idx_bounded_load(
        &self,
        key: &[u8],
        loads: &[u64],
        balance_factor: f64,
        mask: Option<&NodeMask>,
    ) -> Result<Option<usize>, Error> {
        self.bucket_idx_by_loads(key, mask, |hash, mask| {
            let mut node = NO_BUCKET;
            // SAFETY: loads.len() loads; the ring (and mask) are alive.
            let code = unsafe {
                ffi::chash_ring_find_bounded_load(
                    self.raw(),
                    hash,
                    loads.as_ptr(),
                    loads.len(),
                    balance_factor,
                    mask,
                    &mut node,
                )
            };
            check(code).map(|()| node)
        })
    }

    /// The first bucket in the (masked) walk from `key`'s point whose load
    /// is below `capacity`; buckets at or past `loads.len()` are skipped;
    /// `Ok(None)` if every one is full. For callers that keep the capacity
    /// themselves (computed once a batch). An error
    /// ([`ErrorKind::BadArgument`]) on the rings whose programs bound loads
    /// otherwise or rebuild instead of masking, as
    /// [`Ring::bucket_idx_bounded_load`] refuses them: Envoy's rings, and a
    /// mask on a ring that does not [`Ring::masks_exactly`].
    pub fn bucket_idx_under_capacity(
        &self,
        key: &[u8],
        loads: &[u64],
        capacity: u64,
        mask: Option<&NodeMask>,
    ) -> Result<Option<usize>, Error> {
        self.bucket_idx_by_loads(key, mask, |hash, mask| {
            // SAFETY: loads.len() loads (the pointer is never read when empty); the
            // ring (and mask) are alive.
            let node = unsafe {
                ffi::chash_ring_find_under_capacity(
                    self.raw(),
                    hash,
                    loads.as_ptr(),
                    loads.len(),
                    capacity,
                    mask,
                )
            };
            if node == crate::MASK_REFUSED {
                let why = if self.key_hash_bits() == 64 {
                    "Envoy's rings bound loads by Envoy's own probe order: no bounded-load lookup"
                } else {
                    "this ring's program rebuilds it without the masked buckets: no masked \
                     bounded-load lookup (build the ring of the available buckets)"
                };
                return Err(Error::new(ErrorKind::BadArgument, why));
            }
            Ok(node)
        })
    }

    /// What the lookups by load share: `find` is the C lookup, given `key`'s
    /// key hash and the mask's pointer (null: no mask); the node it answers
    /// is the bucket, none for [`NO_BUCKET`].
    fn bucket_idx_by_loads(
        &self,
        key: &[u8],
        mask: Option<&NodeMask>,
        find: impl FnOnce(u32, *const ffi::chash_node_mask) -> Result<u32, Error>,
    ) -> Result<Option<usize>, Error> {
        find(self.key_hash32(key), mask.map_or(std::ptr::null(), NodeMask::raw)).map(bucket)
    }

    /// The bytes the ring holds, O(1) (a snapshot's ring: its columns are
    /// the sealed copy's or the file's pages).
    pub fn memory_usage(&self) -> Result<crate::MemoryUsage, Error> {
        let mut raw: ffi::chash_memory_usage = sized();
        // SAFETY: the ring is alive; raw is a sized out-struct.
        check(unsafe { ffi::chash_ring_memory_usage(self.raw(), &mut raw) })?;
        Ok(crate::MemoryUsage {
            column_bytes: raw.column_bytes,
            other_bytes: raw.other_bytes,
            index_bytes: raw.index_bytes,
            collision_table_bytes: raw.collision_table_bytes,
        })
    }

    /// SHA-256 of what routes keys: equal fingerprints route every key alike.
    pub fn fingerprint(&self) -> Result<[u8; FINGERPRINT_SIZE], Error> {
        self.digest(ffi::chash_ring_fingerprint)
    }

    // A SHA-256 of the ring: the fingerprint, the points digest or the
    // backend fingerprint (`f`).
    pub(crate) fn digest(
        &self,
        f: unsafe extern "C" fn(*const ffi::chash_ring, *mut u8) -> c_int,
    ) -> Result<[u8; FINGERPRINT_SIZE], Error> {
        let mut out = [0u8; FINGERPRINT_SIZE];
        // SAFETY: the ring is alive; out holds FINGERPRINT_SIZE bytes.
        check(unsafe { f(self.raw(), out.as_mut_ptr()) }).map(|()| out)
    }

    // A cursor on the first point at or after `hash` (nothing on an empty
    // ring): the walks point by point.
    pub(crate) fn cursor_at(&self, hash: u32) -> ffi::chash_cursor {
        let mut cursor = ffi::chash_cursor::default();
        // SAFETY: the ring is alive; the cursor is caller-allocated.
        unsafe { ffi::chash_ring_walk(self.raw(), hash, &mut cursor) };
        cursor
    }

    /// The ring as pingora-ketama's [`Continuum`] when it is a pingora ring
    /// whose every address reads as a `SocketAddr` (an error naming the
    /// bucket otherwise). Consumes the ring: the Continuum owns its handle
    /// (no copy of the points); O(buckets).
    pub fn into_continuum(self) -> Result<Continuum, Error> {
        match self.flavor() {
            Some(Flavor::PingoraV1 | Flavor::PingoraV2) => {}
            other => {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!("a {other:?} ring is not a pingora-ketama Continuum"),
                ))
            }
        }
        let mut addrs = Vec::with_capacity(self.buckets);
        for idx in 0..self.buckets {
            let text = self.address(idx).unwrap_or("");
            // The ring routes by the points already built: the SocketAddr
            // only names the bucket, whatever the text's spelling.
            match text.parse::<std::net::SocketAddr>() {
                Ok(addr) => addrs.push(addr),
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::BadAddress,
                        format!("bucket {idx} '{text}' is not a socket address"),
                    ))
                }
            }
        }
        Ok(Continuum { ring: self, addrs: addrs.into_boxed_slice() })
    }
}

/// Each bucket once from a key's point (see [`Ring::distinct_iter`]):
/// bucket indices, ending after the last bucket that owns points. Borrows
/// its ring: it cannot outlive it.
///
/// ```compile_fail,E0505
/// fn walk_after_drop(ring: std::sync::Arc<chash::Ring>) -> Option<usize> {
///     let mut walk = ring.distinct_iter(b"key");
///     drop(ring);
///     walk.next() // error: `ring` moved while borrowed
/// }
/// ```
pub struct DistinctBuckets<'a> {
    walk: Walk,
    _ring: &'a Ring,
}

impl Iterator for DistinctBuckets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        self.walk.next_bucket()
    }
}
