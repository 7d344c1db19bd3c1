//! Snapshots: rings written once (`chash build`), mapped by every process,
//! checked before use (format, checksum, signature, version), with named
//! subsets. The file format and its checks are include/chash/snapshot.h's.

use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use crate::ops::NodeMask;
use crate::ring::{Flavor, Ring};
use crate::{c_text, ffi, last_error, Continuum, Error, ErrorKind};

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
        let code = unsafe { ffi::chash_public_key_read(path.as_ptr(), out.as_mut_ptr()) };
        if code == ffi::CHASH_OK {
            Ok(PublicKey(out))
        } else {
            Err(Error::from_code(code, last_error()))
        }
    }
}

/// Where a loaded ring's columns live.
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, Hash)]
pub enum LoadMode {
    /// Map the file read-only, zero-copy: its pages are the ring's columns,
    /// shared by every process through the page cache. Never truncate or
    /// rewrite a mapped file in place (SIGBUS): replace it by a rename, as
    /// `chash build` does.
    #[default]
    Map,
    /// Read the file into this process's memory: immune to rewrites.
    Copy,
}

/// How a snapshot is loaded and what it must satisfy. The default maps the
/// file, runs every check, needs no signature and takes any config version.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct LoadOptions {
    mode: LoadMode,
    skip_checksum: bool,
    min_config_version: u64,
    trusted_keys: Vec<PublicKey>,
}

impl LoadOptions {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn mode(mut self, mode: LoadMode) -> Self {
        self.mode = mode;
        self
    }

    /// Skips the checksum pass (files this process verified before); every
    /// structural check still runs.
    pub fn skip_checksum(mut self, skip: bool) -> Self {
        self.skip_checksum = skip;
        self
    }

    /// Refuses a snapshot whose config version is lower
    /// ([`SnapshotCheck::MinVersion`]).
    pub fn min_config_version(mut self, version: u64) -> Self {
        self.min_config_version = version;
        self
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

    // The C struct borrows `keys`, which must outlive its use.
    fn to_c(&self, keys: &[u8]) -> ffi::chash_snapshot_options {
        ffi::chash_snapshot_options {
            copy: (self.mode == LoadMode::Copy).into(),
            skip_checksum: self.skip_checksum.into(),
            min_config_version: self.min_config_version,
            trusted_keys: if keys.is_empty() { std::ptr::null() } else { keys.as_ptr() },
            n_trusted_keys: self.trusted_keys.len(),
        }
    }

    fn key_bytes(&self) -> Vec<u8> {
        self.trusted_keys.iter().flat_map(|k| k.0).collect()
    }
}

/// The check a snapshot failed, in the order they run
/// (include/chash/snapshot.h, "LOADING").
#[derive(Copy, Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum SnapshotCheck {
    /// The file could not be opened, stat'ed, mapped or read (or the path
    /// holds a NUL byte).
    Io,
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
    /// The XXH3-128 checksum differs: the file is damaged.
    Checksum,
    /// Policy: the config version is below the minimum.
    MinVersion,
    /// Policy: unsigned, signed by an untrusted key, or a bad signature.
    Signature,
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
    /// The search index could not be built.
    Index,
    /// The header's fingerprint is not the node table's.
    Fingerprint,
    /// The points differ from the header's digest.
    PointsDigest,
    /// Memory ran out while loading (not a property of the file).
    OutOfMemory,
    /// A [`crate::Reloader`]'s policy: the config version is not above the
    /// current one (lower without `allow_rollback`, or equal with other
    /// content).
    ConfigVersion,
    /// A failure the library reports without naming a check.
    Other,
}

impl SnapshotCheck {
    /// The check's name as the library's messages start with it.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotCheck::Io => "io",
            SnapshotCheck::Size => "size",
            SnapshotCheck::Magic => "magic",
            SnapshotCheck::Version => "version",
            SnapshotCheck::Header => "header",
            SnapshotCheck::Sections => "sections",
            SnapshotCheck::Checksum => "checksum",
            SnapshotCheck::MinVersion => "min_version",
            SnapshotCheck::Signature => "signature",
            SnapshotCheck::Label => "label",
            SnapshotCheck::NodeTable => "node_table",
            SnapshotCheck::HashColumn => "hash_column",
            SnapshotCheck::NodeColumn => "node_column",
            SnapshotCheck::Collisions => "collisions",
            SnapshotCheck::Subsets => "subsets",
            SnapshotCheck::Index => "index",
            SnapshotCheck::Fingerprint => "fingerprint",
            SnapshotCheck::PointsDigest => "points_digest",
            SnapshotCheck::OutOfMemory => "out_of_memory",
            SnapshotCheck::ConfigVersion => "config_version",
            SnapshotCheck::Other => "other",
        }
    }

    const NAMED: [SnapshotCheck; 18] = [
        SnapshotCheck::Io,
        SnapshotCheck::Size,
        SnapshotCheck::Magic,
        SnapshotCheck::Version,
        SnapshotCheck::Header,
        SnapshotCheck::Sections,
        SnapshotCheck::Checksum,
        SnapshotCheck::MinVersion,
        SnapshotCheck::Signature,
        SnapshotCheck::Label,
        SnapshotCheck::NodeTable,
        SnapshotCheck::HashColumn,
        SnapshotCheck::NodeColumn,
        SnapshotCheck::Collisions,
        SnapshotCheck::Subsets,
        SnapshotCheck::Index,
        SnapshotCheck::Fingerprint,
        SnapshotCheck::PointsDigest,
    ];

    /// The check of a name the library's messages start with ("checksum",
    /// "signature", ...); `None` for a name it does not use.
    pub fn from_name(name: &str) -> Option<SnapshotCheck> {
        Self::NAMED.into_iter().find(|c| c.name() == name)
    }

    // The check the library's message names (its text before the first
    // ':'), as chash::FailedSnapshotCheck reads it.
    fn from_failure(code: i32, message: &str) -> SnapshotCheck {
        if code == ffi::CHASH_E_OUT_OF_MEMORY {
            return SnapshotCheck::OutOfMemory;
        }
        let named = message.split_once(':').map(|(name, _)| name.trim());
        let check = named.and_then(SnapshotCheck::from_name);
        match (check, code) {
            (Some(check), _) => check,
            (None, ffi::CHASH_E_IO) => SnapshotCheck::Io,
            _ => SnapshotCheck::Other,
        }
    }
}

impl fmt::Display for SnapshotCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A refused snapshot: the check it failed, the error's class
/// ([`ErrorKind::BadSnapshot`] for format and integrity,
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

    /// True for the policy's refusals (signature, key, versions), false for
    /// damaged or unreadable files.
    pub fn is_untrusted(&self) -> bool {
        matches!(
            self.check,
            SnapshotCheck::MinVersion | SnapshotCheck::Signature | SnapshotCheck::ConfigVersion
        )
    }

    pub(crate) fn new(check: SnapshotCheck, kind: ErrorKind, message: String) -> Self {
        SnapshotError { check, error: Error::new(kind, message) }
    }

    fn from_code(code: i32) -> Self {
        let error = Error::from_code(code, last_error());
        SnapshotError { check: SnapshotCheck::from_failure(code, error.message()), error }
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message().starts_with(self.check.name()) {
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
    /// `None` for a flavor this crate does not name.
    pub flavor: Option<Flavor>,
    pub point_multiple: u32,
    pub buckets: u32,
    pub points: u64,
    pub points_generated: u64,
    pub subsets: u32,
    /// The id of the key that signed it; `None` if unsigned.
    pub key_id: Option<[u8; KEY_ID_SIZE]>,
    /// True when the columns are the file's pages ([`LoadMode::Map`]).
    pub mapped: bool,
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
    raw: NonNull<ffi::chash_snapshot>,
    info: SnapshotInfo,
    label: String,
    subsets: Vec<(String, NodeMask)>,
    ring: Arc<Ring>,
    // Built on the first continuum() call.
    continuum: OnceLock<Arc<Continuum>>,
}

// SAFETY: the C snapshot is immutable and documented usable from any number
// of threads; the Rust fields are plain data and Send + Sync handles.
unsafe impl Send for Snapshot {}
unsafe impl Sync for Snapshot {}

impl Drop for Snapshot {
    fn drop(&mut self) {
        // SAFETY: freed once; rings taken from it keep their own reference.
        unsafe { ffi::chash_snapshot_free(self.raw.as_ptr()) }
    }
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

    fn adopt(code: i32, out: *mut ffi::chash_snapshot) -> Result<Snapshot, SnapshotError> {
        let raw = match NonNull::new(out) {
            Some(raw) if code == ffi::CHASH_OK => raw,
            _ => return Err(SnapshotError::from_code(code)),
        };
        let ring = match Self::take_ring(raw) {
            Ok(ring) => ring,
            Err(error) => {
                // SAFETY: the snapshot is freed once, here.
                unsafe { ffi::chash_snapshot_free(raw.as_ptr()) };
                return Err(error);
            }
        };
        // Freed by Drop if anything below fails.
        let mut snapshot = Snapshot {
            raw,
            info: SnapshotInfo::default(),
            label: String::new(),
            subsets: Vec::new(),
            ring: Arc::new(ring),
            continuum: OnceLock::new(),
        };
        let mut info = ffi::chash_snapshot_info::default();
        // SAFETY: the snapshot is alive; info is a valid out-struct.
        let code = unsafe { ffi::chash_snapshot_get_info(raw.as_ptr(), &mut info) };
        if code != ffi::CHASH_OK {
            return Err(SnapshotError::from_code(code));
        }
        snapshot.info = SnapshotInfo {
            major_version: info.major_version,
            minor_version: info.minor_version,
            file_bytes: info.file_bytes,
            config_version: info.config_version,
            created_unix_seconds: info.created_unix_seconds,
            flavor: Flavor::from_code(info.flavor),
            point_multiple: info.point_multiple,
            buckets: info.nodes,
            points: info.points,
            points_generated: info.points_generated,
            subsets: info.subsets,
            key_id: (info.is_signed != 0).then_some(info.key_id),
            mapped: info.mapped != 0,
        };
        // SAFETY: the snapshot is alive; the label is NUL-terminated.
        snapshot.label =
            c_text(unsafe { ffi::chash_snapshot_label(raw.as_ptr()) }).unwrap_or_default();
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
            match NonNull::new(mask) {
                // SAFETY: a new mask, owned here.
                Some(mask) if code == ffi::CHASH_OK => {
                    snapshot.subsets.push((name, unsafe { NodeMask::from_raw(mask) }))
                }
                _ => return Err(SnapshotError::from_code(code)),
            }
        }
        Ok(snapshot)
    }

    fn take_ring(raw: NonNull<ffi::chash_snapshot>) -> Result<Ring, SnapshotError> {
        let mut ring = std::ptr::null_mut();
        // SAFETY: the snapshot is alive; ring is a valid out-pointer.
        let code = unsafe { ffi::chash_snapshot_ring(raw.as_ptr(), &mut ring) };
        match NonNull::new(ring) {
            // SAFETY: a new ring handle, owned by the Ring.
            Some(ring) if code == ffi::CHASH_OK => Ok(unsafe { Ring::from_raw(ring) }),
            _ => Err(SnapshotError::from_code(code)),
        }
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
        let built = Snapshot::take_ring(self.raw).map_err(Error::from)?.into_continuum()?;
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

    // Same routing, label and subsets: the same content for a reloader.
    pub(crate) fn same_content(&self, other: &Snapshot) -> bool {
        let masks_equal = |a: &NodeMask, b: &NodeMask| {
            a.len() == b.len() && (0..a.len()).all(|i| a.get(i) == b.get(i))
        };
        self.label == other.label
            && self.subsets.len() == other.subsets.len()
            && self
                .subsets
                .iter()
                .zip(&other.subsets)
                .all(|((n1, m1), (n2, m2))| n1 == n2 && masks_equal(m1, m2))
            && matches!((self.ring.fingerprint(), other.ring.fingerprint()), (Ok(a), Ok(b)) if a == b)
    }
}
