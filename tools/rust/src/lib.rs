//! # chash: pingora-ketama's API on chash's ring
//!
//! The same node for every key as
//! [pingora-ketama](https://docs.rs/pingora-ketama) 0.8 (`Continuum::new`, and
//! `Version::V2 { point_multiple }`), from chash's C library: 6 bytes a point,
//! a SIMD-searched index, and errors as [`Result`] where pingora-ketama panics
//! or silently misroutes.
//!
//! ## Switching from pingora-ketama: one line
//!
//! In `Cargo.toml`, replace the dependency; every `use pingora_ketama::…` stays:
//!
//! ```toml
//! pingora-ketama = { package = "chash", path = "…/chash/tools/rust" }
//! ```
//!
//! or depend on `chash` and change the import to
//! `use chash::{Bucket, Continuum, Version};`.
//!
//! ```
//! use chash::{Bucket, Continuum, Version};
//!
//! let buckets: Vec<Bucket> = (1..=3)
//!     .map(|i| Bucket::new(format!("127.0.0.{i}:12345").parse().unwrap(), i))
//!     .collect();
//! let ring = Continuum::new(&buckets); // pingora-ketama's v1 ring
//! let v2 = Continuum::try_new_with_version(&buckets, Version::V2 { point_multiple: 16 })?;
//! for key in ["some_key", "another_key", "last_key"] {
//!     let (a, b) = (ring.node(key.as_bytes()), v2.node(key.as_bytes()));
//!     println!("{key}: v1 {} v2 {}", a.unwrap(), b.unwrap());
//! }
//! assert_eq!(ring.node(b"last_key"), Some("127.0.0.2:12345".parse().unwrap()));
//! # Ok::<(), chash::Error>(())
//! ```
//!
//! ## What differs from pingora-ketama
//!
//! - [`Continuum::try_new`] and [`Continuum::try_new_with_version`] return an
//!   [`Error`] for what pingora-ketama panics on or gets wrong: more than
//!   65,536 buckets (pingora v1 wraps node ids and routes to the wrong
//!   server), weight × multiple over 32 bits or a ring over 2^30 points
//!   (pingora overflows), a point multiple of 0, and two buckets with the same
//!   address (they would own identical points). [`Continuum::new`] keeps
//!   pingora's signature and panics with that error instead.
//! - [`Bucket::new`] accepts weight 0: a drained bucket that keeps its index
//!   but owns no points (pingora-ketama panics).
//! - [`Continuum::node_idx`] is a position for [`Continuum::get_addr`] (the
//!   point's hash) rather than the point's rank: the same walk, not the same
//!   number.
//! - On a v1 hash collision chash keeps the bucket listed first; pingora's
//!   winner is whatever its unstable sort leaves (unspecified). v2 keeps the
//!   smallest socket address, as pingora does.
//! - An IPv6 scope id or flow info is not hashed (pingora hashes `ip()` and
//!   `port()` only), so two buckets that differ only there are duplicates.
//!
//! What chash adds: bucket indices ([`Continuum::bucket_idx`]), lookups in
//! batches ([`Continuum::bucket_idxs`]) and by hash, the failover order over
//! distinct buckets ([`Continuum::distinct_iter`]; the C library's one
//! failover walk, `chash_walk`), lookups that skip
//! unavailable buckets without a rebuild ([`NodeMask`],
//! [`Continuum::node_available`], the failover order among the available
//! buckets [`Continuum::distinct_iter_available`]; [`Availability`] publishes masks while
//! lookups run), bounded loads ([`Continuum::bucket_idx_bounded_load`]),
//! [`Continuum::stats`] and fingerprints ([`Continuum::fingerprint`]).
//!
//! Thread safety: a [`Continuum`] is immutable; every lookup takes `&self`
//! and may run from any number of threads.
//!
//! ## The other programs' rings
//!
//! [`Flavor`] also names HAProxy's, libmemcached's, twemproxy's,
//! libketama's, Varnish's and Envoy's rings; [`RingOptions`] holds their
//! options and [`RingBuilder`] builds them from [`Node`]s (HAProxy's server
//! ids, twemproxy's names, Envoy's hostnames). Their keys hash as their
//! program hashes them ([`Ring::key_hash`]); Envoy's are 64-bit request
//! hashes ([`Ring::bucket_idx_by_hash64`]).
//!
//! ## Policy: snapshots, reloads, subsets, migrations
//!
//! For services that take their ring from a file rather than building it:
//!
//! - [`Snapshot::load`] reads a snapshot written by `chash build` into a
//!   sealed copy (or maps or copies it, [`LoadMode`]), after every check of
//!   its format and integrity, and the policy of [`LoadOptions`] (trusted
//!   [`PublicKey`]s, a minimum config version, a size cap, threads). Each
//!   refusal is a [`SnapshotError`] whose [`check`](SnapshotError::check)
//!   is the [`SnapshotCheck`] the library names (`CHASH_CHECK_*`).
//! - Its ring is a [`Ring`] (any flavor, servers as address text) in an
//!   `Arc`, or pingora-ketama's [`Continuum`] ([`Snapshot::continuum`]); its
//!   named subsets are [`NodeMask`]s for the masked lookups
//!   ([`Ring::bucket_idx_available`]).
//! - A [`Reloader`] is the C library's reload policy (`chash_reloader`, the
//!   one nginx and chash.resty use): it polls a path ([`Reloader::poll`], or
//!   a thread of its own: [`Reloader::watch`]) and swaps in a replaced file
//!   only after it passes every check; a refused file is never verified
//!   again, versions only go up, and with a state directory
//!   ([`ReloadOptions::state_dir`]) across restarts, with a last good file
//!   and one copy a host. [`Reloader::ring`] is an `Arc<Ring>` that
//!   stays valid across reloads; [`Reloader::report`] says what it did.
//! - A [`Migration`] routes each key through an old or a new ring by a
//!   stable hash of the key, under a rollout and a scope, with counters.
//! - Bounded loads: [`Ring::bucket_idx_bounded_load`],
//!   [`bounded_load_capacity`], [`Ring::bucket_idx_under_capacity`].
//!
//! ```no_run
//! use chash::{LoadOptions, PublicKey, Reloader, ReloadOptions};
//! use std::{sync::Arc, time::Duration};
//!
//! let load = LoadOptions::new()
//!     .trust(PublicKey::read("/etc/app/ring.pub")?)
//!     .min_config_version(1);
//! let reloader = Arc::new(Reloader::new(
//!     "/etc/app/backends.ring",
//!     ReloadOptions { load, ..Default::default() },
//! )?);
//! let _watcher = reloader.watch(Duration::from_secs(1))?;
//!
//! // Per request: the current ring, and the canary subset of its snapshot.
//! let snapshot = reloader.snapshot();
//! let ring = snapshot.ring();
//! let canary = snapshot.subset("canary")?;
//! let server = ring.node_available(b"/some/url", canary);
//! # let _ = server;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod ffi;
mod migration;
mod ops;
mod owned;
mod program;
mod reload;
mod ring;
mod snapshot;
mod walk;

pub use migration::{Migration, MigrationCounters, Route, Side, ROLLOUT_SCALE};
pub use ops::{
    bounded_load_capacity, Availability, MemoryUsage, NodeMask, RingStats, FINGERPRINT_SIZE,
};
pub use program::{
    EnvoyHash, EnvoyRingOptions, HaproxyHash, HaproxyOptions, HaproxyServerKey, KetamaKeyHash,
    KetamaOptions, KetamaVariant, MaglevOptions, Node, RingBuilder, RingOptions, VarnishOptions,
};
pub use reload::{Candidate, Reload, ReloadCheck, ReloadOptions, ReloadReport, Reloader, Watcher};
pub use ring::{DistinctBuckets, Flavor, Ring};
pub use snapshot::{
    LoadMode, LoadOptions, PublicKey, Snapshot, SnapshotCheck, SnapshotError, SnapshotInfo,
    KEY_ID_SIZE, PUBLIC_KEY_SIZE,
};
pub use walk::{AvailableBuckets, PointIter};

use std::ffi::CStr;
use std::fmt;
use std::net::SocketAddr;
use std::os::raw::{c_char, c_int};

use owned::Owned;

/// 160 points per weight unit: nginx's and pingora v1's multiple.
pub const DEFAULT_POINT_MULTIPLE: u32 = 160;

/// Most buckets a ring holds: bucket indices are 16 bits in a point.
pub const MAX_BUCKETS: usize = 65_536;

/// The answer of the batch lookups when the ring has no points.
pub const NO_BUCKET: u32 = ffi::CHASH_NO_NODE;

/// What the masked batch lookups write on a ring that masks inexactly
/// ([`Ring::masks_exactly`] false): not a bucket index.
pub const MASK_REFUSED: u32 = ffi::CHASH_MASK_REFUSED;

// A node id the library answers as a bucket index; None for NO_BUCKET and
// MASK_REFUSED.
fn bucket(node: u32) -> Option<usize> {
    (node != NO_BUCKET && node != MASK_REFUSED).then_some(node as usize)
}

/// A server and its weight (pingora-ketama's `Bucket`).
#[derive(Clone, Debug, Eq, PartialEq, PartialOrd, Ord, Hash)]
pub struct Bucket {
    node: SocketAddr,
    weight: u32,
}

impl Bucket {
    /// A bucket of `weight` units: `weight × point_multiple` points.
    ///
    /// Never panics. Weight 0 is a drained bucket: it keeps its index and
    /// owns no points (pingora-ketama panics on 0).
    pub fn new(node: SocketAddr, weight: u32) -> Self {
        Bucket { node, weight }
    }

    pub fn node(&self) -> SocketAddr {
        self.node
    }

    pub fn weight(&self) -> u32 {
        self.weight
    }
}

/// Which ring to build (pingora-ketama's `Version`).
#[derive(Copy, Clone, Debug, Eq, PartialEq, Default)]
pub enum Version {
    /// 160 points per weight unit; a collision keeps the bucket listed first.
    #[default]
    V1,
    /// `point_multiple` points per weight unit (>= 1); a collision keeps the
    /// smallest socket address.
    V2 { point_multiple: u32 },
}

impl Version {
    /// Points per weight unit.
    pub fn point_multiple(&self) -> u32 {
        match self {
            Version::V1 => DEFAULT_POINT_MULTIPLE,
            Version::V2 { point_multiple } => *point_multiple,
        }
    }
}

/// What went wrong, by class.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An address the flavor cannot hash.
    BadAddress,
    /// Two buckets hash the same bytes (same IP and port).
    DuplicateNode,
    /// More than [`MAX_BUCKETS`] buckets.
    TooManyNodes,
    /// weight × multiple over 32 bits, or the ring over its point cap.
    TooManyPoints,
    /// Point multiple 0.
    BadMultiple,
    /// A bucket index past the end (of a mask).
    BadNodeId,
    /// Any other malformed argument (a balance factor, a mask's length).
    BadArgument,
    /// Out of memory; nothing was built.
    OutOfMemory,
    /// A weight out of range.
    BadWeight,
    /// A file could not be read (a snapshot, a key).
    Io,
    /// A snapshot fails a format or integrity check ([`SnapshotCheck`]).
    BadSnapshot,
    /// A snapshot fails the policy: key, signature, minimum version.
    Untrusted,
    /// An unexpected failure inside the C library (a bug).
    Internal,
    /// Any other error the C library reports (its code).
    Other(i32),
}

/// A failed build: its class and the library's message, which names the
/// bucket ("node 3 '10.0.0.1:443': ...").
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }

    // `detail` is the library's message when it has one, else strerror.
    fn from_code(code: c_int, detail: Option<String>) -> Self {
        let kind = match code {
            ffi::CHASH_E_BAD_ADDRESS => ErrorKind::BadAddress,
            ffi::CHASH_E_DUPLICATE_NODE => ErrorKind::DuplicateNode,
            ffi::CHASH_E_TOO_MANY_NODES => ErrorKind::TooManyNodes,
            ffi::CHASH_E_TOO_MANY_POINTS => ErrorKind::TooManyPoints,
            ffi::CHASH_E_BAD_MULTIPLE => ErrorKind::BadMultiple,
            ffi::CHASH_E_BAD_NODE_ID => ErrorKind::BadNodeId,
            ffi::CHASH_E_BAD_ARGUMENT => ErrorKind::BadArgument,
            ffi::CHASH_E_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            ffi::CHASH_E_BAD_WEIGHT => ErrorKind::BadWeight,
            ffi::CHASH_E_IO => ErrorKind::Io,
            ffi::CHASH_E_BAD_SNAPSHOT => ErrorKind::BadSnapshot,
            ffi::CHASH_E_UNTRUSTED => ErrorKind::Untrusted,
            ffi::CHASH_E_INTERNAL => ErrorKind::Internal,
            other => ErrorKind::Other(other),
        };
        let message = detail.filter(|m| !m.is_empty()).unwrap_or_else(|| strerror(code));
        Error { kind, message }
    }

    // The error of a call that failed on this thread with `code`, with the
    // library's message of it (chash_last_error).
    fn last(code: c_int) -> Self {
        Error::from_code(code, last_error())
    }
}

// Ok for a call that returned CHASH_OK, else its Error::last.
fn check(code: c_int) -> Result<(), Error> {
    if code == ffi::CHASH_OK {
        Ok(())
    } else {
        Err(Error::last(code))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

fn c_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: the library returns NUL-terminated strings it owns.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

// The message of this thread's last failed chash call.
fn last_error() -> Option<String> {
    // SAFETY: chash_last_error returns a thread-local NUL-terminated string.
    c_text(unsafe { ffi::chash_last_error() })
}

fn strerror(code: c_int) -> String {
    // SAFETY: chash_strerror returns a static string for any code.
    c_text(unsafe { ffi::chash_strerror(code) }).unwrap_or_else(|| format!("chash error {code}"))
}

/// CRC32 (IEEE, zlib's) of `data`: the hash a key is looked up by.
pub fn crc32(data: &[u8]) -> u32 {
    // SAFETY: data is a valid slice.
    unsafe { ffi::chash_crc32(data.as_ptr().cast(), data.len()) }
}

/// The version of the linked chash library.
pub fn library_version() -> String {
    // SAFETY: chash_version returns a static string.
    c_text(unsafe { ffi::chash_version() }).unwrap_or_default()
}

// The text pingora-ketama hashes for a bucket: `ip()` and `port()` as Rust
// prints them. For IPv6 that is SocketAddr's Display without the scope id;
// chash's pingora parser reads it back to the same bytes.
fn hashed_address(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(v4) => format!("{}:{}", v4.ip(), v4.port()),
        SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
    }
}

struct Builder(Owned<ffi::chash_builder>);

/// What a node carries beside its address and weight (`chash_node_fields`):
/// the library, not this crate, decides what the ring hashes of it.
struct NodeFields<'a> {
    server_id: u32,
    name: Option<&'a str>,
    hostname: Option<&'a str>,
    hash_key: Option<&'a str>,
    hash_hostname: bool,
    real_weight: Option<f64>,
}

impl Builder {
    fn new(flavor: u32, point_multiple: u32) -> Result<Self, Error> {
        // SAFETY: out is a valid out-pointer.
        Self::made(|out| unsafe { ffi::chash_builder_new(flavor, point_multiple, out) })
    }

    fn with_options(flavor: u32, options: &ffi::chash_ring_options) -> Result<Self, Error> {
        // SAFETY: options is a sized struct; out is a valid out-pointer.
        Self::made(|out| unsafe { ffi::chash_builder_new_with_options(flavor, options, out) })
    }

    // The builder a call made (`new` writes it to its out-pointer), or the
    // call's error with the library's message.
    fn made(new: impl FnOnce(*mut *mut ffi::chash_builder) -> c_int) -> Result<Self, Error> {
        let mut out = std::ptr::null_mut();
        let code = new(&mut out);
        // SAFETY: on success a new builder, owned here.
        unsafe { Owned::new(code, out) }.map(Builder).map_err(Error::last)
    }

    fn add(&mut self, address: &str, weight: u32) -> Result<(), Error> {
        // SAFETY: address is valid for its length; the builder is alive.
        let code = unsafe {
            ffi::chash_builder_add(self.0.as_ptr(), address.as_ptr().cast(), address.len(), weight)
        };
        self.added(code)
    }

    // chash_builder_add_fields: the node with what it carries beside its address.
    fn add_node(
        &mut self,
        address: &str,
        weight: u32,
        fields: &NodeFields<'_>,
    ) -> Result<(), Error> {
        let text =
            |t: Option<&str>| t.map_or((std::ptr::null(), 0), |t| (t.as_ptr().cast(), t.len()));
        let (name, name_len) = text(fields.name);
        let (hostname, hostname_len) = text(fields.hostname);
        let (hash_key, hash_key_len) = text(fields.hash_key);
        let raw = ffi::chash_node_fields {
            size: std::mem::size_of::<ffi::chash_node_fields>() as u32,
            server_id: fields.server_id,
            name,
            name_len,
            hostname,
            hostname_len,
            hash_key,
            hash_key_len,
            hash_hostname: u32::from(fields.hash_hostname),
            has_real_weight: u32::from(fields.real_weight.is_some()),
            real_weight: fields.real_weight.unwrap_or(0.0),
        };
        // SAFETY: address and the texts are valid for their lengths (NULL
        // with length 0); the builder is alive.
        let code = unsafe {
            ffi::chash_builder_add_fields(
                self.0.as_ptr(),
                address.as_ptr().cast(),
                address.len(),
                weight,
                &raw,
            )
        };
        self.added(code)
    }

    // Ok for an add that returned CHASH_OK, else its error with the
    // builder's message, which names the server.
    fn added(&self, code: c_int) -> Result<(), Error> {
        if code == ffi::CHASH_OK {
            return Ok(());
        }
        // SAFETY: the builder is alive.
        Err(Error::from_code(code, c_text(unsafe { ffi::chash_builder_error(self.0.as_ptr()) })))
    }

    fn build(self) -> Result<Ring, Error> {
        // Build frees the builder on success and on error alike; a failed
        // build leaves its message in chash_last_error.
        let builder = self.0.into_raw();
        let mut out = std::ptr::null_mut();
        // SAFETY: build consumes the builder (into_raw: never freed here).
        let code = unsafe { ffi::chash_builder_build(builder, &mut out) };
        // SAFETY: on success a new ring, owned by the Ring.
        unsafe { Owned::new(code, out) }.map(Ring::new).map_err(Error::last)
    }
}

/// The consistent-hash ring (pingora-ketama's `Continuum`).
// A pingora-flavored Ring and its buckets' SocketAddrs: the lookups the two
// share are the Ring's.
pub struct Continuum {
    ring: Ring,
    addrs: Box<[SocketAddr]>,
}

impl fmt::Debug for Continuum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Continuum")
            .field("buckets", &self.addrs.len())
            .field("points", &self.ring.num_points())
            .finish()
    }
}

impl Continuum {
    /// pingora-ketama's v1 ring of `buckets`.
    ///
    /// # Panics
    ///
    /// On any error [`Continuum::try_new`] returns (more than 65,536 buckets,
    /// duplicate addresses, too many points). Use `try_new` to handle them.
    pub fn new(buckets: &[Bucket]) -> Self {
        Self::new_with_version(buckets, Version::V1)
    }

    /// The ring of `buckets` for `version`.
    ///
    /// # Panics
    ///
    /// On any error [`Continuum::try_new_with_version`] returns.
    pub fn new_with_version(buckets: &[Bucket], version: Version) -> Self {
        match Self::try_new_with_version(buckets, version) {
            Ok(ring) => ring,
            Err(err) => {
                panic!("chash Continuum: {err} (Continuum::try_new returns this as an Error)")
            }
        }
    }

    /// The v1 ring of `buckets`, or why it cannot be built.
    pub fn try_new(buckets: &[Bucket]) -> Result<Self, Error> {
        Self::try_new_with_version(buckets, Version::V1)
    }

    /// The ring of `buckets` for `version`, or why it cannot be built.
    /// Bucket `i` is bucket index `i` of the lookups that return one.
    pub fn try_new_with_version(buckets: &[Bucket], version: Version) -> Result<Self, Error> {
        let (flavor, multiple) = match version {
            Version::V1 => (ffi::CHASH_FLAVOR_PINGORA_V1, DEFAULT_POINT_MULTIPLE),
            // The C API reads multiple 0 as "the default": refuse it here.
            Version::V2 { point_multiple: 0 } => {
                return Err(Error::new(
                    ErrorKind::BadMultiple,
                    "Version::V2 point_multiple must be at least 1",
                ))
            }
            Version::V2 { point_multiple } => (ffi::CHASH_FLAVOR_PINGORA_V2, point_multiple),
        };
        if buckets.len() > MAX_BUCKETS {
            return Err(Error::new(
                ErrorKind::TooManyNodes,
                format!("{} buckets; a ring holds at most {MAX_BUCKETS}", buckets.len()),
            ));
        }
        let mut builder = Builder::new(flavor, multiple)?;
        let mut address = String::with_capacity(64);
        for bucket in buckets {
            address.clear();
            address.push_str(&hashed_address(&bucket.node));
            builder.add(&address, bucket.weight)?;
        }
        let ring = builder.build()?;
        let addrs: Box<[SocketAddr]> = buckets.iter().map(|b| b.node).collect();
        Ok(Continuum { ring, addrs })
    }

    fn raw(&self) -> *const ffi::chash_ring {
        self.ring.raw()
    }

    /// The position of the point `input` lands on (the first point at or
    /// after its CRC32, wrapping), for [`Continuum::get_addr`]; 0 on an empty
    /// ring.
    ///
    /// Like pingora's, it is a token for `get_addr`, not an address. It is
    /// the point's hash here (points have distinct hashes) where pingora
    /// counts points: the same walk either way, but not the same number.
    pub fn node_idx(&self, input: &[u8]) -> usize {
        self.node_idx_by_hash(crc32(input))
    }

    /// [`Continuum::node_idx`] of a key whose CRC32 is `hash`.
    pub fn node_idx_by_hash(&self, hash: u32) -> usize {
        if self.num_points() == 0 {
            return 0;
        }
        let cursor = self.ring.cursor_at(hash);
        // SAFETY: the cursor stands on one of this ring's points.
        unsafe { ffi::chash_cursor_hash(&cursor) as usize }
    }

    /// The server of `hash_key`; `None` when the ring has no points.
    pub fn node(&self, hash_key: &[u8]) -> Option<SocketAddr> {
        self.bucket_idx(hash_key).map(|i| self.addrs[i])
    }

    /// The points from `hash_key`'s in ring order, forever (repeats
    /// included): pingora's failover walk. Empty on an empty ring.
    pub fn node_iter(&self, hash_key: &[u8]) -> NodeIterator<'_> {
        NodeIterator { buckets: self.ring.point_iter(hash_key), addrs: &self.addrs }
    }

    /// The server of the point at position `*idx` (from
    /// [`Continuum::node_idx`] or a previous call), advancing `*idx` to the
    /// next point, wrapping. `None`, `*idx` unchanged, on an empty ring or a
    /// position past `u32::MAX`. O(log n) a call; [`Continuum::node_iter`]
    /// walks in O(1) a step.
    pub fn get_addr(&self, idx: &mut usize) -> Option<&SocketAddr> {
        let hash = u32::try_from(*idx).ok().filter(|_| self.num_points() > 0)?;
        let mut cursor = self.ring.cursor_at(hash);
        // SAFETY: the cursor walks this ring's points.
        let node = unsafe { ffi::chash_cursor_next(&mut cursor) };
        *idx = unsafe { ffi::chash_cursor_hash(&cursor) } as usize;
        self.addrs.get(node as usize)
    }

    // ---- What chash adds ----

    /// Each server once, in ring order from `hash_key`'s point: the failover
    /// order (the distinct servers of [`Continuum::node_iter`]), ending after
    /// the last server that owns points. The C library's `chash_walk`: each
    /// point at most once in total; its seen-set (128 bytes and a bit a
    /// bucket) is one heap allocation a walk.
    pub fn distinct_iter(&self, hash_key: &[u8]) -> DistinctNodeIterator<'_> {
        self.distinct_iter_by_hash(crc32(hash_key))
    }

    /// [`Continuum::distinct_iter`] from a key whose CRC32 is `hash`.
    pub fn distinct_iter_by_hash(&self, hash: u32) -> DistinctNodeIterator<'_> {
        DistinctNodeIterator { buckets: self.ring.distinct_iter_by_hash(hash), addrs: &self.addrs }
    }

    /// Each server `mask` leaves available once, in the order the ring of
    /// only those servers would walk them from `hash_key`'s point: the
    /// failover order among healthy servers, without a rebuild. Its first
    /// server is [`Continuum::node_available`]'s answer; the rules and the
    /// cost are [`Ring::distinct_iter_available`]'s.
    pub fn distinct_iter_available<'a>(
        &'a self,
        hash_key: &[u8],
        mask: &'a NodeMask,
    ) -> impl Iterator<Item = &'a SocketAddr> + 'a {
        self.distinct_iter_available_by_hash(crc32(hash_key), mask)
    }

    /// [`Continuum::distinct_iter_available`] from a key whose CRC32 is `hash`.
    pub fn distinct_iter_available_by_hash<'a>(
        &'a self,
        hash: u32,
        mask: &'a NodeMask,
    ) -> impl Iterator<Item = &'a SocketAddr> + 'a {
        self.ring.distinct_iter_available_by_hash(hash, mask).map(move |idx| &self.addrs[idx])
    }

    /// The index in the `buckets` slice of `hash_key`'s server; `None` when
    /// the ring has no points.
    pub fn bucket_idx(&self, hash_key: &[u8]) -> Option<usize> {
        self.ring.bucket_idx(hash_key)
    }

    /// The bucket index of a key whose CRC32 is `hash`.
    pub fn bucket_idx_by_hash(&self, hash: u32) -> Option<usize> {
        self.ring.bucket_idx_by_hash(hash)
    }

    /// Bucket indices of many keys at once (several times the throughput of
    /// single lookups): `out[i]` for `keys[i]`, [`NO_BUCKET`] on an empty ring.
    /// No heap allocation.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `keys`.
    pub fn bucket_idxs<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [u32]) {
        self.ring.find_keys("bucket_idxs", keys, ring::Among::All, out);
    }

    /// Bucket indices of many key hashes at once: `out[i]` for `hashes[i]`.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `hashes`.
    pub fn bucket_idxs_by_hash(&self, hashes: &[u32], out: &mut [u32]) {
        assert!(
            out.len() >= hashes.len(),
            "bucket_idxs_by_hash: out holds {} < {} hashes",
            out.len(),
            hashes.len()
        );
        // SAFETY: hashes.len() inputs, out holds as many.
        let code = unsafe {
            ffi::chash_ring_find_hashes(self.raw(), hashes.as_ptr(), hashes.len(), out.as_mut_ptr())
        };
        debug_assert_eq!(code, ffi::CHASH_OK, "{}", strerror(code));
    }

    /// The servers, by bucket index (the `buckets` order).
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The number of buckets, drained ones included.
    pub fn num_buckets(&self) -> usize {
        self.addrs.len()
    }

    /// Points on the ring, after collisions: a walk returns to its start
    /// after this many steps.
    pub fn num_points(&self) -> usize {
        self.ring.num_points()
    }

    /// Points generated (the sum of weight × multiple), before collisions.
    pub fn points_generated(&self) -> u64 {
        self.ring.points_generated()
    }

    /// The weight of bucket `idx`, as given.
    pub fn weight(&self, idx: usize) -> Option<u32> {
        self.ring.weight(idx)
    }
}

/// Keys a batch lookup passes to the library at once.
const KEY_CHUNK: usize = 256;

// Calls `find(keys, key_lens, out)` on chunks of KEY_CHUNK keys, their
// pointers and lengths in arrays on the stack, `out` the chunk's answers (as
// many as its keys): batch lookups without heap allocation. `what` names the
// caller in the panic when `out` is shorter than `keys`.
fn for_key_chunks<K: AsRef<[u8]>, T>(
    what: &str,
    keys: &[K],
    out: &mut [T],
    mut find: impl FnMut(*const *const c_char, *const usize, &mut [T]) -> c_int,
) {
    assert!(out.len() >= keys.len(), "{what}: out holds {} < {} keys", out.len(), keys.len());
    let mut pointers = [std::ptr::null::<c_char>(); KEY_CHUNK];
    let mut lengths = [0usize; KEY_CHUNK];
    for (chunk, out) in keys.chunks(KEY_CHUNK).zip(out.chunks_mut(KEY_CHUNK)) {
        for (i, key) in chunk.iter().enumerate() {
            let key = key.as_ref();
            pointers[i] = key.as_ptr().cast();
            lengths[i] = key.len();
        }
        let code = find(pointers.as_ptr(), lengths.as_ptr(), &mut out[..chunk.len()]);
        // Only NULL arguments fail, and none is NULL here.
        debug_assert_eq!(code, ffi::CHASH_OK, "{what}: {}", strerror(code));
    }
}

// A public iterator of a continuum's servers: `$buckets`, an iterator of
// its ring's bucket indices, through the continuum's addresses.
macro_rules! servers_of {
    ($(#[$meta:meta])* $name:ident($buckets:ident)) => {
        $(#[$meta])*
        pub struct $name<'a> {
            buckets: $buckets<'a>,
            addrs: &'a [SocketAddr],
        }

        impl<'a> Iterator for $name<'a> {
            type Item = &'a SocketAddr;

            fn next(&mut self) -> Option<Self::Item> {
                let addrs = self.addrs;
                self.buckets.next().and_then(|idx| addrs.get(idx))
            }
        }
    };
}

servers_of!(
    /// The points from a key's in ring order (pingora-ketama's `NodeIterator`).
    /// Endless on a non-empty ring.
    NodeIterator(PointIter)
);

servers_of!(
    /// Each server once from a key's point (see [`Continuum::distinct_iter`]).
    DistinctNodeIterator(DistinctBuckets)
);
