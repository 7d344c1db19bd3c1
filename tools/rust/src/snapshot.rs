//! Snapshots: rings written once (`chash build`), loaded by every process
//! (a sealed copy by default), checked before use (format, checksum,
//! signature, version, expiry), with named subsets. The file format and its
//! checks are include/chash/snapshot.h's.

use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::ops::NodeMask;
use crate::owned::{sized, Owned};
use crate::ring::{Flavor, Ring};
use crate::{c_text, check, ffi, last_error, Continuum, Error, ErrorKind};

/// Bytes of an Ed25519 public key.
pub const PUBLIC_KEY_SIZE: usize = ffi::CHASH_PUBLIC_KEY_SIZE;
/// Bytes of the key id a signed snapshot names.
pub const KEY_ID_SIZE: usize = ffi::CHASH_KEY_ID_SIZE;

/// An Ed25519 public key that may sign snapshots (`chash keygen` writes
/// it as `BASE.pub`).
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
pub struct PublicKey([u8; PUBLIC_KEY_SIZE]);

impl PublicKey {
    pub fn from_bytes(bytes: [u8; PUBLIC_KEY_SIZE]) -> Self {
        PublicKey(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; PUBLIC_KEY_SIZE] {
        &self.0
    }

    /// Reads a public key file of `chash keygen`. Errors: [`ErrorKind::Io`]
    /// (unreadable), [`ErrorKind::BadArgument`] (not a key file).
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = c_path(path.as_ref()).map_err(|e| Error::new(ErrorKind::BadArgument, e))?;
        let mut out = [0u8; PUBLIC_KEY_SIZE];
        // SAFETY: a NUL-terminated path; out holds PUBLIC_KEY_SIZE bytes.
        check(unsafe { ffi::chash_public_key_read(path.as_ptr(), out.as_mut_ptr()) })?;
        Ok(PublicKey(out))
    }
}

/// Where a loaded ring's columns live (`CHASH_LOAD_*`).
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum LoadMode {
    /// The default: the file read once into a sealed memory file (memfd)
    /// and checked there. Nothing done to the file afterwards (a write in
    /// place, a truncation) can change or crash the ring, and a
    /// [`crate::Reloader`] with a state directory shares it with the host's
    /// other processes (one copy of the columns a host).
    #[default]
    Sealed,
    /// Map the file read-only, zero-copy: its pages are the ring's columns.
    /// Only for files nothing rewrites in place: a truncation raises
    /// SIGBUS. Replace such a file by a rename, as `chash build` does.
    Map,
    /// Read the file into this process's own memory: immune to the file,
    /// not shared.
    Copy,
}

impl LoadMode {
    fn code(self) -> u32 {
        match self {
            LoadMode::Sealed => ffi::CHASH_LOAD_SEALED,
            LoadMode::Map => ffi::CHASH_LOAD_MAP,
            LoadMode::Copy => ffi::CHASH_LOAD_COPY,
        }
    }

    fn from_code(code: u32) -> LoadMode {
        match code {
            ffi::CHASH_LOAD_MAP => LoadMode::Map,
            ffi::CHASH_LOAD_COPY => LoadMode::Copy,
            _ => LoadMode::Sealed,
        }
    }
}

/// How a snapshot is loaded and what it must satisfy. The default reads a
/// sealed copy, runs every check, needs no signature, takes any config
/// version and files up to 2 GiB, and hashes on the CPUs the process may
/// use.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct LoadOptions {
    mode: LoadMode,
    skip_checksum: bool,
    verify_points_digest: bool,
    threads: u32,
    min_config_version: u64,
    max_file_bytes: u64,
    trusted_keys: Vec<PublicKey>,
}

// Setters of a builder: `self` with `field` set to the argument.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $field:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$field = $arg;
            self
        }
    )*};
}

impl LoadOptions {
    pub fn new() -> Self {
        Self::default()
    }

    setters! {
        mode(mode: LoadMode) => mode;

        /// Skips the checksum pass (files this process verified before); every
        /// structural check still runs.
        skip_checksum(skip: bool) => skip_checksum;

        /// Also recomputes the points digest (SHA-256 of every point: seconds
        /// for 200M points) and compares it with the header's
        /// ([`SnapshotCheck::PointsDigest`]).
        verify_points_digest(verify: bool) => verify_points_digest;

        /// Threads a load may hash on, the caller's included: 0 (the default)
        /// = the CPUs this process may run on (at most 64), 1 = the calling
        /// thread only.
        threads(threads: u32) => threads;

        /// Refuses a snapshot whose config version is lower
        /// ([`SnapshotCheck::MinVersion`]).
        min_config_version(version: u64) => min_config_version;

        /// Refuses a larger file before a byte of its body is read
        /// ([`SnapshotCheck::MaxSize`]); 0 (the default) = 2 GiB.
        max_file_bytes(bytes: u64) => max_file_bytes;
    }

    /// Adds a key the snapshot may be signed by. With one key or more, an
    /// unsigned snapshot or one signed by another key is refused
    /// ([`SnapshotCheck::Signature`]).
    pub fn trust(mut self, key: PublicKey) -> Self {
        self.trusted_keys.push(key);
        self
    }

    pub fn trusted_keys(&self) -> &[PublicKey] {
        &self.trusted_keys
    }

    pub fn load_mode(&self) -> LoadMode {
        self.mode
    }

    // The C struct borrows `keys`, which must outlive its use.
    pub(crate) fn to_c(&self, keys: &[u8]) -> ffi::chash_snapshot_options {
        let mut flags = 0;
        if self.skip_checksum {
            flags |= ffi::CHASH_LOAD_SKIP_CHECKSUM;
        }
        if self.verify_points_digest {
            flags |= ffi::CHASH_LOAD_VERIFY_POINTS_DIGEST;
        }
        ffi::chash_snapshot_options {
            size: std::mem::size_of::<ffi::chash_snapshot_options>() as u32,
            mode: self.mode.code(),
            flags,
            threads: self.threads,
            min_config_version: self.min_config_version,
            max_file_bytes: self.max_file_bytes,
            trusted_keys: if keys.is_empty() { std::ptr::null() } else { keys.as_ptr() },
            n_trusted_keys: self.trusted_keys.len(),
        }
    }

    pub(crate) fn key_bytes(&self) -> Vec<u8> {
        self.trusted_keys.iter().flat_map(|k| k.0).collect()
    }
}

/// The check a snapshot failed: the C library's `CHASH_CHECK_*`, in the
/// order a load runs them (include/chash/snapshot.h, "LOADING"), then the
/// reload policy's and an embedder's. [`SnapshotCheck::name`] is the
/// library's own spelling (`chash_check_name`), the word its messages start
/// with.
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum SnapshotCheck {
    /// No check: an error of another kind (a bad argument, say).
    #[default]
    None,
    /// The file could not be stat'ed, opened or read (or the path holds a
    /// NUL byte).
    Io,
    /// A FIFO, device, socket or directory: never opened blocking.
    NotRegular,
    /// Larger than [`LoadOptions::max_file_bytes`].
    MaxSize,
    /// The file has holes.
    Sparse,
    /// The file is smaller than a header and trailer, or not the size its
    /// header says (truncated or extended).
    Size,
    /// Not a chash snapshot.
    Magic,
    /// A major format version this library does not read.
    Version,
    /// Header fields out of range.
    Header,
    /// Section offsets or lengths malformed.
    Sections,
    /// Policy: the config version is below the minimum.
    MinVersion,
    /// Policy: the file's expiry has passed.
    Expired,
    /// Policy: unsigned, signed by an untrusted key, or a bad signature.
    Signature,
    /// The XXH3-128 checksum differs: the file is damaged.
    Checksum,
    /// The label is not UTF-8 text without NUL.
    Label,
    /// The node table: an entry overruns, a bad address, duplicates, or the
    /// point count does not add up.
    NodeTable,
    /// Hashes not strictly ascending.
    HashColumn,
    /// A node id out of range or of weight 0.
    NodeColumn,
    /// The collision table is inconsistent.
    Collisions,
    /// A subset is malformed.
    Subsets,
    /// The stored search index is wrong, or one cannot be built.
    Index,
    /// The header's fingerprint is not the node table's.
    Fingerprint,
    /// The points differ from the header's digest.
    PointsDigest,
    /// The reload policy: a config version below the highest served.
    Rollback,
    /// The reload policy: the version served, with another ring.
    SameVersion,
    /// Memory ran out while loading (not a property of the file: a
    /// [`crate::Reloader`] tries it again).
    OutOfMemory,
    /// An embedder's check: not the flavor it routes with.
    Flavor,
    /// An embedder's check: addresses it cannot use.
    Address,
    /// An embedder's check: a migration partner's backends differ.
    BackendMismatch,
    /// Any other check of an embedder.
    Embedder,
    /// Format 1.4: a flavor options section (the other programs' rings).
    Options,
    /// Format 1.4: envoy-ring's low halves of its 64-bit points.
    LowColumn,
    /// A check of a newer library this crate does not name: its code.
    Unknown(u32),
}

impl SnapshotCheck {
    // Each check beside its code in the header (tests/snapshot_checks.rs
    // checks that every code of the header is here).
    const BY_CODE: [(u32, SnapshotCheck); 32] = [
        (ffi::CHASH_CHECK_NONE, SnapshotCheck::None),
        (ffi::CHASH_CHECK_IO, SnapshotCheck::Io),
        (ffi::CHASH_CHECK_NOT_REGULAR, SnapshotCheck::NotRegular),
        (ffi::CHASH_CHECK_MAX_SIZE, SnapshotCheck::MaxSize),
        (ffi::CHASH_CHECK_SPARSE, SnapshotCheck::Sparse),
        (ffi::CHASH_CHECK_SIZE, SnapshotCheck::Size),
        (ffi::CHASH_CHECK_MAGIC, SnapshotCheck::Magic),
        (ffi::CHASH_CHECK_VERSION, SnapshotCheck::Version),
        (ffi::CHASH_CHECK_HEADER, SnapshotCheck::Header),
        (ffi::CHASH_CHECK_SECTIONS, SnapshotCheck::Sections),
        (ffi::CHASH_CHECK_MIN_VERSION, SnapshotCheck::MinVersion),
        (ffi::CHASH_CHECK_EXPIRED, SnapshotCheck::Expired),
        (ffi::CHASH_CHECK_SIGNATURE, SnapshotCheck::Signature),
        (ffi::CHASH_CHECK_CHECKSUM, SnapshotCheck::Checksum),
        (ffi::CHASH_CHECK_LABEL, SnapshotCheck::Label),
        (ffi::CHASH_CHECK_NODE_TABLE, SnapshotCheck::NodeTable),
        (ffi::CHASH_CHECK_HASH_COLUMN, SnapshotCheck::HashColumn),
        (ffi::CHASH_CHECK_NODE_COLUMN, SnapshotCheck::NodeColumn),
        (ffi::CHASH_CHECK_COLLISIONS, SnapshotCheck::Collisions),
        (ffi::CHASH_CHECK_SUBSETS, SnapshotCheck::Subsets),
        (ffi::CHASH_CHECK_INDEX, SnapshotCheck::Index),
        (ffi::CHASH_CHECK_FINGERPRINT, SnapshotCheck::Fingerprint),
        (ffi::CHASH_CHECK_POINTS_DIGEST, SnapshotCheck::PointsDigest),
        (ffi::CHASH_CHECK_ROLLBACK, SnapshotCheck::Rollback),
        (ffi::CHASH_CHECK_SAME_VERSION, SnapshotCheck::SameVersion),
        (ffi::CHASH_CHECK_OUT_OF_MEMORY, SnapshotCheck::OutOfMemory),
        (ffi::CHASH_CHECK_FLAVOR, SnapshotCheck::Flavor),
        (ffi::CHASH_CHECK_ADDRESS, SnapshotCheck::Address),
        (ffi::CHASH_CHECK_BACKEND_MISMATCH, SnapshotCheck::BackendMismatch),
        (ffi::CHASH_CHECK_EMBEDDER, SnapshotCheck::Embedder),
        (ffi::CHASH_CHECK_OPTIONS, SnapshotCheck::Options),
        (ffi::CHASH_CHECK_LOW_COLUMN, SnapshotCheck::LowColumn),
    ];

    /// The check of a `CHASH_CHECK_*` code; [`SnapshotCheck::Unknown`] past
    /// the ones this crate names.
    pub fn from_code(code: u32) -> SnapshotCheck {
        Self::BY_CODE
            .iter()
            .find(|&&(c, _)| c == code)
            .map_or(SnapshotCheck::Unknown(code), |&(_, check)| check)
    }

    /// Its `CHASH_CHECK_*` code.
    pub fn code(self) -> u32 {
        match self {
            SnapshotCheck::Unknown(code) => code,
            known => Self::BY_CODE.iter().find(|&&(_, c)| c == known).map_or(0, |&(code, _)| code),
        }
    }

    /// The check's name as the library spells it (`chash_check_name`:
    /// "checksum", "not_regular", "rollback", ...; "unknown" for a code it
    /// does not know). Static storage.
    pub fn name(self) -> &'static str {
        // SAFETY: chash_check_name returns a static NUL-terminated string
        // for any code.
        let name = unsafe { std::ffi::CStr::from_ptr(ffi::chash_check_name(self.code())) };
        name.to_str().unwrap_or("unknown")
    }

    /// The check of a name the library gives ("checksum", "signature",
    /// ...); `None` for a name it does not use.
    pub fn from_name(name: &str) -> Option<SnapshotCheck> {
        Self::BY_CODE.into_iter().map(|(_, check)| check).find(|c| c.name() == name)
    }

    /// True for the policy's refusals (signature, expiry, versions), false
    /// for damaged or unreadable files and an embedder's checks.
    pub fn is_policy(self) -> bool {
        matches!(
            self,
            SnapshotCheck::MinVersion
                | SnapshotCheck::Expired
                | SnapshotCheck::Signature
                | SnapshotCheck::Rollback
                | SnapshotCheck::SameVersion
        )
    }

    // The check the failed call on this thread named (chash_last_check).
    fn last() -> SnapshotCheck {
        // SAFETY: a thread-local read.
        SnapshotCheck::from_code(unsafe { ffi::chash_last_check() })
    }
}

impl fmt::Display for SnapshotCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A refused snapshot: the check it failed (as the library names it), the
/// error's class ([`ErrorKind::BadSnapshot`] for format and integrity,
/// [`ErrorKind::Untrusted`] for the policy, [`ErrorKind::Io`], ...), and the
/// library's message, which starts with the check's name.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct SnapshotError {
    check: SnapshotCheck,
    error: Error,
}

impl SnapshotError {
    pub fn check(&self) -> SnapshotCheck {
        self.check
    }

    pub fn kind(&self) -> ErrorKind {
        self.error.kind()
    }

    pub fn message(&self) -> &str {
        self.error.message()
    }

    /// True for the policy's refusals (signature, key, expiry, versions),
    /// false for damaged or unreadable files.
    pub fn is_untrusted(&self) -> bool {
        self.check.is_policy()
    }

    pub(crate) fn new(check: SnapshotCheck, kind: ErrorKind, message: String) -> Self {
        SnapshotError { check, error: Error::new(kind, message) }
    }

    // A refusal the library described by its check, CHASH_E_* code and
    // message (a reload result or report).
    pub(crate) fn with_code(check: SnapshotCheck, code: i32, message: String) -> Self {
        SnapshotError { check, error: Error::from_code(code, Some(message)) }
    }

    // The error of a failed call on this thread: its code, the library's
    // message and the check the library names (chash_last_check).
    pub(crate) fn from_code(code: i32) -> Self {
        let check = SnapshotCheck::last();
        let error = Error::from_code(code, last_error());
        let check = match check {
            SnapshotCheck::None if code == ffi::CHASH_E_OUT_OF_MEMORY => SnapshotCheck::OutOfMemory,
            check => check,
        };
        SnapshotError { check, error }
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.check == SnapshotCheck::None || self.message().starts_with(self.check.name()) {
            f.write_str(self.message())
        } else {
            write!(f, "{}: {}", self.check, self.message())
        }
    }
}

impl std::error::Error for SnapshotError {}

impl From<SnapshotError> for Error {
    fn from(error: SnapshotError) -> Error {
        error.error
    }
}

/// What a snapshot's header says (`chash inspect`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct SnapshotInfo {
    pub major_version: u16,
    pub minor_version: u16,
    pub file_bytes: u64,
    /// The writer's `--config-version`: the order of snapshots in time.
    pub config_version: u64,
    pub created_unix_seconds: i64,
    /// The Unix time from which readers refuse the file
    /// ([`SnapshotCheck::Expired`]); `None`: never.
    pub expires_unix_seconds: Option<i64>,
    /// `None` for a flavor this crate does not name.
    pub flavor: Option<Flavor>,
    pub point_multiple: u32,
    pub buckets: u32,
    pub points: u64,
    pub points_generated: u64,
    pub subsets: u32,
    /// The id of the key that signed it; `None` if unsigned.
    pub key_id: Option<[u8; KEY_ID_SIZE]>,
    /// The ring's fingerprint as the header states it (what
    /// [`Ring::fingerprint`] computes).
    pub fingerprint: [u8; crate::FINGERPRINT_SIZE],
    /// Where the columns live.
    pub mode: LoadMode,
}

/// A loaded, checked snapshot: its ring (shared as an `Arc`), header,
/// label and named subsets. Immutable; `Send + Sync`.
///
/// Its [`Ring`] keeps the mapping alive by itself, so a ring may outlive
/// the snapshot; what is borrowed from the snapshot (label, subset masks)
/// cannot:
///
/// ```compile_fail,E0505
/// fn label_after_drop(snapshot: chash::Snapshot) -> usize {
///     let label = snapshot.label();
///     drop(snapshot);
///     label.len() // error: `snapshot` moved while borrowed
/// }
/// ```
///
/// ```compile_fail,E0505
/// fn subset_after_drop(snapshot: chash::Snapshot) -> usize {
///     let mask = snapshot.subset("canary").unwrap();
///     drop(snapshot);
///     mask.len() // error: `snapshot` moved while borrowed
/// }
/// ```
///
/// ```
/// // The ring is an Arc of its own: it may outlive the snapshot.
/// fn ring_after_drop(snapshot: chash::Snapshot) -> Option<usize> {
///     let ring = snapshot.ring();
///     drop(snapshot);
///     ring.bucket_idx(b"key")
/// }
/// ```
pub struct Snapshot {
    raw: Owned<ffi::chash_snapshot>,
    info: SnapshotInfo,
    label: String,
    subsets: Vec<(String, NodeMask)>,
    ring: Arc<Ring>,
    // Built on the first continuum() call.
    continuum: OnceLock<Arc<Continuum>>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("info", &self.info)
            .field("label", &self.label)
            .field("subsets", &self.subset_names().collect::<Vec<_>>())
            .finish()
    }
}

// A Unix time of the C structs, where 0 stands for none.
pub(crate) fn unix_seconds(seconds: i64) -> Option<i64> {
    (seconds != 0).then_some(seconds)
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("io: the path '{}' holds a NUL byte", path.display()))
}

impl Snapshot {
    /// Loads and checks the snapshot at `path`: O(file) (a checksum pass, or
    /// with trusted keys the signature's SHA-256 pass in its place, a pass
    /// over each column, the stored search index checked or, for a file
    /// without one, built). Every refusal names its check
    /// ([`SnapshotError::check`]).
    pub fn load(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Snapshot, SnapshotError> {
        let path = c_path(path.as_ref())
            .map_err(|m| SnapshotError::new(SnapshotCheck::Io, ErrorKind::BadArgument, m))?;
        let keys = options.key_bytes();
        let c_options = options.to_c(&keys);
        let mut out = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; the options borrow `keys`, alive
        // for the call; out is a valid out-pointer.
        let code = unsafe { ffi::chash_snapshot_load(path.as_ptr(), &c_options, &mut out) };
        Self::adopt(code, out)
    }

    /// The same checks on bytes in memory (copied: the mode is ignored).
    pub fn from_bytes(bytes: &[u8], options: &LoadOptions) -> Result<Snapshot, SnapshotError> {
        let keys = options.key_bytes();
        let c_options = options.to_c(&keys);
        let mut out = std::ptr::null_mut();
        // SAFETY: bytes is a valid slice; as in load.
        let code = unsafe {
            ffi::chash_snapshot_load_bytes(bytes.as_ptr().cast(), bytes.len(), &c_options, &mut out)
        };
        Self::adopt(code, out)
    }

    /// Loads, checks and releases: the header of a file that passes every
    /// check and the policy, else the refusal [`Snapshot::load`] gives.
    pub fn verify(
        path: impl AsRef<Path>,
        options: &LoadOptions,
    ) -> Result<SnapshotInfo, SnapshotError> {
        Snapshot::load(path, options).map(|snapshot| snapshot.info)
    }

    // Takes ownership of `out` (a new handle when code is CHASH_OK).
    pub(crate) fn adopt(
        code: i32,
        out: *mut ffi::chash_snapshot,
    ) -> Result<Snapshot, SnapshotError> {
        // SAFETY: on success a new snapshot, owned here (freed by Owned if
        // anything below fails; rings taken from it keep their own
        // reference).
        let raw = unsafe { Owned::new(code, out) }.map_err(SnapshotError::from_code)?;
        let ring = Self::take_ring(&raw)?;
        let mut info: ffi::chash_snapshot_info = sized();
        // SAFETY: the snapshot is alive; info is a valid out-struct.
        let code = unsafe { ffi::chash_snapshot_get_info(raw.as_ptr(), &mut info) };
        if code != ffi::CHASH_OK {
            return Err(SnapshotError::from_code(code));
        }
        let info = SnapshotInfo {
            major_version: info.major_version,
            minor_version: info.minor_version,
            file_bytes: info.file_bytes,
            config_version: info.config_version,
            created_unix_seconds: info.created_unix_seconds,
            expires_unix_seconds: unix_seconds(info.expires_unix_seconds),
            flavor: Flavor::from_code(info.flavor),
            point_multiple: info.point_multiple,
            buckets: info.nodes,
            points: info.points,
            points_generated: info.points_generated,
            subsets: info.subsets,
            key_id: (info.is_signed != 0).then_some(info.key_id),
            fingerprint: info.fingerprint,
            mode: LoadMode::from_code(info.mode),
        };
        // SAFETY: the snapshot is alive; the label is NUL-terminated.
        let label = c_text(unsafe { ffi::chash_snapshot_label(raw.as_ptr()) }).unwrap_or_default();
        let mut subsets = Vec::with_capacity(info.subsets as usize);
        for i in 0..info.subsets {
            // SAFETY: i < subsets: a NUL-terminated name owned by the snapshot.
            let name_ptr = unsafe { ffi::chash_snapshot_subset_name(raw.as_ptr(), i) };
            let Some(name) = c_text(name_ptr) else {
                return Err(SnapshotError::new(
                    SnapshotCheck::Subsets,
                    ErrorKind::Internal,
                    format!(
                        "subsets: the header counts {} but subset {i} has no name",
                        info.subsets
                    ),
                ));
            };
            let mut mask = std::ptr::null_mut();
            // SAFETY: name_ptr is the snapshot's NUL-terminated name.
            let code = unsafe { ffi::chash_snapshot_subset(raw.as_ptr(), name_ptr, &mut mask) };
            // SAFETY: on success a new mask, owned here.
            let mask = unsafe { Owned::new(code, mask) }.map_err(SnapshotError::from_code)?;
            subsets.push((name, NodeMask::from_raw(mask)));
        }
        Ok(Snapshot { raw, info, label, subsets, ring: Arc::new(ring), continuum: OnceLock::new() })
    }

    fn take_ring(raw: &Owned<ffi::chash_snapshot>) -> Result<Ring, SnapshotError> {
        let mut ring = std::ptr::null_mut();
        // SAFETY: the snapshot is alive; ring is a valid out-pointer.
        let code = unsafe { ffi::chash_snapshot_ring(raw.as_ptr(), &mut ring) };
        // SAFETY: on success a new ring handle, owned by the Ring.
        unsafe { Owned::new(code, ring) }.map(Ring::new).map_err(SnapshotError::from_code)
    }

    /// The snapshot's ring: an `Arc` clone, O(1). It stays valid after the
    /// snapshot is dropped.
    pub fn ring(&self) -> Arc<Ring> {
        Arc::clone(&self.ring)
    }

    /// The ring as pingora-ketama's [`Continuum`], for a pingora snapshot
    /// whose addresses read as `SocketAddr`s; an error naming the bucket
    /// otherwise. Built on the first call (its own handle on the same
    /// mapped columns: no copy of the points; O(buckets) to parse the
    /// addresses), then an `Arc` clone. It too stays valid after the
    /// snapshot is dropped.
    pub fn continuum(&self) -> Result<Arc<Continuum>, Error> {
        if let Some(continuum) = self.continuum.get() {
            return Ok(Arc::clone(continuum));
        }
        let built = Snapshot::take_ring(&self.raw).map_err(Error::from)?.into_continuum()?;
        // A concurrent first call may have won: both are the same ring.
        let _ = self.continuum.set(Arc::new(built));
        Ok(Arc::clone(self.continuum.get().expect("set above")))
    }

    pub fn info(&self) -> &SnapshotInfo {
        &self.info
    }

    pub fn config_version(&self) -> u64 {
        self.info.config_version
    }

    /// The writer's `--label` ("" if none).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The names of the subsets, in the file's order.
    pub fn subset_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.subsets.iter().map(|(name, _)| name.as_str())
    }

    /// The subset `name` as a mask for the ring's masked lookups
    /// ([`Ring::bucket_idx_available`]): they answer exactly as a ring of
    /// only those servers would. Borrowed from the snapshot (built once, at
    /// load). [`ErrorKind::BadArgument`] naming the subsets there are if
    /// there is none of that name.
    pub fn subset(&self, name: &str) -> Result<&NodeMask, Error> {
        self.subsets.iter().find(|(n, _)| n == name).map(|(_, mask)| mask).ok_or_else(|| {
            let names: Vec<&str> = self.subset_names().collect();
            Error::new(
                ErrorKind::BadArgument,
                format!("no subset '{name}' in the snapshot (subsets: [{}])", names.join(", ")),
            )
        })
    }
}
