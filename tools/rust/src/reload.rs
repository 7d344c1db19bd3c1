//! [`Reloader`]: the current snapshot of a path, replaced when the file at
//! the path is replaced, only after the new file passes every check.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::ring::Ring;
use crate::snapshot::{LoadOptions, Snapshot, SnapshotCheck, SnapshotError};
use crate::{Continuum, Error, ErrorKind};

/// How a [`Reloader`] loads and what a new file must satisfy.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct ReloadOptions {
    /// The checks and policy of every load, the first included.
    pub load: LoadOptions,
    /// Accept a lower config version (a deliberate rollback). The better
    /// rollback is a new, higher version of the old servers (`chash build
    /// --from OLD.ring --config-version N`).
    pub allow_rollback: bool,
}

/// What a [`Reloader::poll`] did.
#[derive(Copy, Clone, Debug, Eq, PartialEq)]
pub enum Reload {
    /// The path names the current file (or a file with the same config
    /// version and content, or one refused before): nothing changed.
    Unchanged,
    /// A new file passed every check and is now the current snapshot.
    Reloaded { config_version: u64 },
}

// What names a file at a path (stat, following symlinks): a rename over the
// path, a retargeted symlink or a rewrite change at least one of these.
#[derive(Copy, Clone, Debug, Eq, PartialEq)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl FileIdentity {
    fn of(path: &Path) -> Result<FileIdentity, SnapshotError> {
        let meta = std::fs::metadata(path).map_err(|e| {
            SnapshotError::new(
                SnapshotCheck::Io,
                ErrorKind::Io,
                format!("io: cannot stat '{}': {e}", path.display()),
            )
        })?;
        Ok(FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        })
    }
}

// What readers copy out. The ring's Arc is kept beside the snapshot's so
// that ring() costs one reference count, not two.
struct Current {
    snapshot: Arc<Snapshot>,
    ring: Arc<Ring>,
}

impl Current {
    fn new(snapshot: Snapshot) -> Current {
        let ring = snapshot.ring();
        Current { snapshot: Arc::new(snapshot), ring }
    }
}

// Serializes polls; readers never take it.
struct PollState {
    current: FileIdentity,
    // The last file refused: not loaded again until the path changes.
    refused: Option<FileIdentity>,
    last_error: Option<SnapshotError>,
}

/// Owns the current [`Snapshot`] of a path and replaces it when the file at
/// the path is replaced (`chash build` renames a new file over it).
///
/// A new file is loaded and checked with the reloader's options off the
/// readers' path, and published only if every check passes and its config
/// version is higher than the current one (equal with the same routing,
/// label and subsets: the same file, nothing to do). Otherwise the current
/// ring stays and [`Reloader::last_error`] says why. A refused file is not
/// loaded again until the path changes, except one refused for want of
/// memory.
///
/// Readers call [`Reloader::ring`] (a read lock for an `Arc` clone: tens of
/// ns, never waiting for a load); the ring they hold stays valid after any
/// number of reloads. `Send + Sync`: share the reloader in an `Arc`.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let reloader = Arc::new(chash::Reloader::new("/etc/app/backends.ring", Default::default())?);
/// let _watching = reloader.watch(Duration::from_millis(500))?; // stops when dropped
/// // per request, any thread:
/// let ring = reloader.ring();
/// let server = ring.node(b"/some/url");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// What a reader holds is an `Arc`; what it borrows from it cannot outlive it:
///
/// ```compile_fail,E0505
/// fn address_after_drop(reloader: &chash::Reloader) -> usize {
///     let ring = reloader.ring();
///     let address = ring.address(0).unwrap();
///     drop(ring);
///     address.len() // error: `ring` moved while borrowed
/// }
/// ```
pub struct Reloader {
    path: PathBuf,
    options: ReloadOptions,
    current: RwLock<Current>,
    poll: Mutex<PollState>,
    reloads: AtomicU64,
    refusals: AtomicU64,
}

impl fmt::Debug for Reloader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloader")
            .field("path", &self.path)
            .field("config_version", &self.snapshot().config_version())
            .field("reloads", &self.reloads())
            .field("refusals", &self.refusals())
            .finish()
    }
}

impl Reloader {
    /// Loads `path` now; the refusal if that first load fails.
    pub fn new(path: impl AsRef<Path>, options: ReloadOptions) -> Result<Reloader, SnapshotError> {
        let path = path.as_ref().to_path_buf();
        // Stat before the load: the file loaded is this one or a newer one,
        // and a newer one is loaded (again) by the next poll.
        let identity = FileIdentity::of(&path)?;
        let snapshot = Snapshot::load(&path, &options.load)?;
        Ok(Reloader {
            path,
            options,
            current: RwLock::new(Current::new(snapshot)),
            poll: Mutex::new(PollState { current: identity, refused: None, last_error: None }),
            reloads: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current snapshot: ring, header, label and subsets that belong
    /// together. An `Arc` clone under a read lock.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.read_current().snapshot)
    }

    /// The current ring: an `Arc` that stays valid across reloads. A read
    /// lock and one reference count; no allocation.
    pub fn ring(&self) -> Arc<Ring> {
        Arc::clone(&self.read_current().ring)
    }

    /// The current ring as pingora-ketama's [`Continuum`] (see
    /// [`Snapshot::continuum`]: built once a snapshot, then an `Arc`
    /// clone), for pingora services that keep its API.
    pub fn continuum(&self) -> Result<Arc<Continuum>, Error> {
        self.snapshot().continuum()
    }

    fn read_current(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        // A poisoned lock still holds a valid value: publishing is one store.
        self.current.read().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_poll(&self) -> MutexGuard<'_, PollState> {
        self.poll.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks the path once (a `stat`, following symlinks): if it names
    /// another file than the current one (device, inode, size or
    /// modification time), loads, checks and publishes it. The refusal
    /// otherwise, also kept in [`Reloader::last_error`]. Thread-safe
    /// (polls serialize); costs a load of the file when it changed.
    pub fn poll(&self) -> Result<Reload, SnapshotError> {
        let mut state = self.lock_poll();
        let result = self.poll_locked(&mut state);
        if let Err(error) = &result {
            state.last_error = Some(error.clone());
        }
        result
    }

    fn poll_locked(&self, state: &mut PollState) -> Result<Reload, SnapshotError> {
        let before = FileIdentity::of(&self.path)?;
        if before == state.current || Some(before) == state.refused {
            return Ok(Reload::Unchanged);
        }
        // Stat before the load (as in new): if the path is replaced while
        // loading, the next poll sees an identity other than `before` and
        // loads the newer file.
        let loaded = Snapshot::load(&self.path, &self.options.load);
        let refuse = |state: &mut PollState, error: SnapshotError| {
            // A load that ran out of memory is tried again at the next poll.
            if error.check() != SnapshotCheck::OutOfMemory {
                state.refused = Some(before);
            }
            self.refusals.fetch_add(1, Ordering::Relaxed);
            Err(error)
        };
        let snapshot = match loaded {
            Ok(snapshot) => snapshot,
            Err(error) => return refuse(state, error),
        };
        let current = self.snapshot();
        let (old, new) = (current.config_version(), snapshot.config_version());
        if new == old && snapshot.same_content(&current) {
            state.current = before;
            state.refused = None;
            return Ok(Reload::Unchanged);
        }
        if new <= old && !(new < old && self.options.allow_rollback) {
            let why = if new == old { "the same as" } else { "below" };
            let error = SnapshotError::new(
                SnapshotCheck::ConfigVersion,
                ErrorKind::Untrusted,
                format!(
                    "config_version: '{}' has config version {new}, {why} the current {old} \
                     (publish a higher version; a rollback needs allow_rollback)",
                    self.path.display()
                ),
            );
            return refuse(state, error);
        }
        let previous = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
            Current::new(snapshot),
        );
        // The previous snapshot is released here (outside the lock), or by
        // its last reader.
        drop((previous, current));
        state.current = before;
        state.refused = None;
        self.reloads.fetch_add(1, Ordering::Relaxed);
        Ok(Reload::Reloaded { config_version: new })
    }

    /// Files published after the first.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// Files refused.
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Why the last poll that failed failed; `None` if none has.
    pub fn last_error(&self) -> Option<SnapshotError> {
        self.lock_poll().last_error.clone()
    }

    /// Polls every `interval` on a thread of its own until the returned
    /// [`Watcher`] is dropped (which stops and joins it). Refusals go to
    /// [`Reloader::last_error`] and [`Reloader::refusals`]. An error
    /// ([`ErrorKind::Other`]) only if the system refuses a thread.
    pub fn watch(self: &Arc<Self>, interval: Duration) -> Result<Watcher, Error> {
        let (stop, stopped) = mpsc::channel::<()>();
        let reloader = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("chash-reloader".into())
            .spawn(move || loop {
                match stopped.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => {
                        // The refusal is kept in last_error.
                        let _ = reloader.poll();
                    }
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            })
            .map_err(|e| Error::new(ErrorKind::Other(0), format!("no reloader thread: {e}")))?;
        Ok(Watcher { stop: Some(stop), thread: Some(thread) })
    }
}

/// The polling thread of [`Reloader::watch`]; dropping it stops the thread
/// and waits for it (at most one poll).
#[derive(Debug)]
pub struct Watcher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panic in a poll is the thread's own; nothing to do here.
            let _ = thread.join();
        }
    }
}
