//! [`Reloader`]: the current snapshot of a path, replaced when the file at
//! the path is replaced and the new one passes every check. The policy is
//! the C library's (`chash_reloader`, include/chash/snapshot.h
//! `SnapshotReloader`), the one nginx, chash.resty and C programs use too;
//! this module only keeps the served [`Snapshot`] in an `Arc` for readers.

use std::ffi::CString;
use std::fmt;
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::owned::{sized, Owned};
use crate::ring::Ring;
use crate::snapshot::{unix_seconds, LoadOptions, Snapshot, SnapshotCheck, SnapshotError};
use crate::{ffi, Continuum, Error, ErrorKind};

/// How a [`Reloader`] loads and what it keeps.
///
/// The versions only go up: a file below the highest version served is
/// refused ([`SnapshotCheck::Rollback`]), the version served with another
/// ring too ([`SnapshotCheck::SameVersion`]). A rollback is a new, higher
/// version of the old servers (`chash build --from OLD.ring
/// --config-version N`).
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct ReloadOptions {
    /// The checks of every file, the first included: trusted keys, minimum
    /// version, size cap, threads, load mode ([`LoadOptions`]).
    pub load: LoadOptions,
    /// An existing directory (not a link, not writable by its group or
    /// others; only a process whose effective uid owns it writes in it)
    /// where the reloader keeps BASE.good (the last file that passed: served
    /// when the path's file is refused at start, and, once it passes every
    /// check itself, the version floor across restarts) and BASE.share (the
    /// host's processes with the same directory and policy map each other's
    /// sealed copy after every check: one copy of the columns a host).
    /// What is trusted there: SECURITY.md. `None`: nothing persists, this
    /// process reads every file into its own copy.
    pub state_dir: Option<PathBuf>,
    /// The reloader's name in `state_dir` (1..128 bytes of `[A-Za-z0-9._-]`);
    /// `None`: derived from the path.
    pub name: Option<String>,
    /// With `state_dir` and [`crate::LoadMode::Sealed`]: map the host's
    /// copies, after every check (default true).
    pub share: bool,
    /// With `state_dir`: keep BASE.good, which is also what keeps versions
    /// across restarts (default true).
    pub keep_last_good: bool,
    /// false: read the state directory but write nothing to it (a
    /// configuration test). Default true.
    pub write_state: bool,
}

impl Default for ReloadOptions {
    fn default() -> Self {
        ReloadOptions {
            load: LoadOptions::default(),
            state_dir: None,
            name: None,
            share: true,
            keep_last_good: true,
            write_state: true,
        }
    }
}

/// What a [`Reloader::poll`] did.
#[derive(Copy, Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Reload {
    /// The path names the file served, or one refused before (a refused
    /// file is never verified again): nothing changed.
    Unchanged,
    /// Another file holds the ring served (a copy, a touch): nothing to
    /// swap.
    SameRing,
    /// A new file passed every check and is now the served snapshot;
    /// `adopted`: another process of the host verified it.
    Reloaded { config_version: u64, adopted: bool },
}

/// What one look at the path found ([`Reloader::check`],
/// [`Reloader::adopt_shared`]); refusals are the `Err` of those calls.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReloadCheck<'a> {
    Unchanged,
    SameRing,
    /// A new ring passed every check of the library: run the embedder's own
    /// checks on it, then [`Candidate::accept`] or [`Candidate::refuse`].
    New(Candidate<'a>),
}

/// A new snapshot the library verified, not served yet. Dropping it serves
/// nothing (the next check looks at the path again).
pub struct Candidate<'a> {
    reloader: &'a Reloader,
    result: Box<ffi::chash_reload_result>,
    snapshot: Box<Snapshot>,
}

impl fmt::Debug for Candidate<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidate")
            .field("config_version", &self.config_version())
            .field("adopted", &self.adopted())
            .finish()
    }
}

impl Candidate<'_> {
    /// The candidate's snapshot (its ring, header, label, subsets).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    pub fn config_version(&self) -> u64 {
        self.result.config_version
    }

    /// True if another process of the host verified it.
    pub fn adopted(&self) -> bool {
        self.result.adopted != 0
    }

    /// Serves it: the library keeps it as BASE.good and
    /// publishes it; then [`Reloader::snapshot`] answers with it. An error
    /// ([`ErrorKind::BadArgument`]) if another check ran since this one.
    /// A failure to write the state directory does not stop the swap: it
    /// is in [`Reloader::report`]'s `state_error`.
    pub fn accept(self) -> Result<Reload, SnapshotError> {
        let reloader = self.reloader;
        // Accepts and publications in one order: a later accept never
        // publishes before an earlier one.
        let _order = reloader.accepting.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the reloader is alive (borrowed); the result is the one
        // its check wrote.
        let code = unsafe { ffi::chash_reloader_accept(reloader.raw.as_ptr(), &*self.result) };
        if code != ffi::CHASH_OK && code != ffi::CHASH_E_IO {
            return Err(SnapshotError::from_code(code));
        }
        let reload = Reload::Reloaded {
            config_version: self.result.config_version,
            adopted: self.result.adopted != 0,
        };
        *reloader.current.write().unwrap_or_else(|e| e.into_inner()) = Current::new(*self.snapshot);
        Ok(reload)
    }

    /// Refuses it with the embedder's check (typically
    /// [`SnapshotCheck::Flavor`], [`SnapshotCheck::Address`],
    /// [`SnapshotCheck::BackendMismatch`] or [`SnapshotCheck::Embedder`]):
    /// the library remembers the file and never loads it again; the report
    /// names the check and `message`.
    pub fn refuse(self, check: SnapshotCheck, message: &str) -> Result<(), Error> {
        let message = CString::new(message.replace('\0', " ")).expect("no NUL left");
        // SAFETY: as accept; the message is NUL-terminated.
        let code = unsafe {
            ffi::chash_reloader_refuse(
                self.reloader.raw.as_ptr(),
                &*self.result,
                check.code(),
                message.as_ptr(),
            )
        };
        crate::check(code)
    }
}

/// What a [`Reloader`] has done, for logs, status pages and alerts
/// (`chash_reload_report`).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct ReloadReport {
    pub served_version: u64,
    /// The highest config version ever served under this name, or proven
    /// by the state directory's last good file.
    pub highest_version: u64,
    /// Files served after the first.
    pub accepted: u64,
    /// Of those, mapped from another process's copy (after every check).
    pub adopted: u64,
    /// Files refused, each identity once.
    pub refused: u64,
    /// The check of the last refusal; [`SnapshotCheck::None`] if none.
    pub last_check: SnapshotCheck,
    /// The library's error code of the last refusal (`CHASH_E_*`), 0 if none.
    pub last_error: i32,
    pub last_message: String,
    pub last_refused_unix_seconds: Option<i64>,
    /// A check in flight since (Unix seconds).
    pub checking_since_unix_seconds: Option<i64>,
    /// The path's file was refused at start and BASE.good is served.
    pub serving_last_good: bool,
    /// The last write of BASE.good failed (the ring was served all the
    /// same); why.
    pub state_error: Option<String>,
    /// The served ring's expiry (Unix seconds), if it has one.
    pub served_expires_unix_seconds: Option<i64>,
    /// Past it: served only while nothing newer passes.
    pub serving_expired: bool,
    /// The last good file's path (SECURITY.md: what it is trusted for).
    pub state_file: Option<String>,
}

// The library's NUL-terminated message buffer as text.
fn message_text(buffer: &[c_char; ffi::CHASH_MESSAGE_SIZE]) -> String {
    let bytes: Vec<u8> = buffer.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
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

/// Owns the served [`Snapshot`] of a path and replaces it when the file at
/// the path is replaced, by the C library's reload policy:
///
/// - a file is its identity (device, inode, size, modification time; the
///   path is stat-ed, symlinks followed): the file served and the refused
///   ones are not loaded again, so a refused file is never verified twice;
/// - every check of a load, with [`ReloadOptions::load`];
/// - versions only go up ([`SnapshotCheck::Rollback`],
///   [`SnapshotCheck::SameVersion`]; with a state directory, across
///   restarts), and another file with the ring served is no swap
///   ([`Reload::SameRing`]);
/// - with a state directory: the last good file, and one copy a host
///   ([`ReloadOptions::state_dir`]);
/// - a ring that expires is served on, and says so
///   ([`ReloadReport::serving_expired`]).
///
/// Readers call [`Reloader::ring`] (a read lock for an `Arc` clone: tens of
/// ns, never waiting for a load); the ring they hold stays valid after any
/// number of reloads. `Send + Sync`: share the reloader in an `Arc`.
/// [`Reloader::new`], [`Reloader::poll`], [`Reloader::check`] and
/// [`Reloader::adopt_shared`] touch the file system and may block: call them
/// off any async executor's threads (or use [`Reloader::watch`]).
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
    // Freed first; snapshots taken from it keep their own references.
    raw: Owned<ffi::chash_reloader>,
    path: PathBuf,
    current: RwLock<Current>,
    accepting: Mutex<()>,
}

impl fmt::Debug for Reloader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloader")
            .field("path", &self.path)
            .field("config_version", &self.snapshot().config_version())
            .field("report", &self.report())
            .finish()
    }
}

fn c_string(what: &str, bytes: &[u8]) -> Result<CString, SnapshotError> {
    CString::new(bytes).map_err(|_| {
        SnapshotError::new(
            SnapshotCheck::None,
            ErrorKind::BadArgument,
            format!("{what} '{}' holds a NUL byte", String::from_utf8_lossy(bytes)),
        )
    })
}

impl Reloader {
    /// Serves the newest ring that passes every check: the path's file,
    /// else (with a state directory) the last good one; the refusal if
    /// neither passes. With a state directory, a file another process of
    /// the host verified is adopted (O(buckets)) instead of verified again.
    pub fn new(path: impl AsRef<Path>, options: ReloadOptions) -> Result<Reloader, SnapshotError> {
        let path = path.as_ref().to_path_buf();
        let c_path = c_string("the path", path.as_os_str().as_bytes()).map_err(|e| {
            SnapshotError::new(SnapshotCheck::Io, ErrorKind::BadArgument, e.message().into())
        })?;
        let state_dir = match &options.state_dir {
            Some(dir) => Some(c_string("state_dir", dir.as_os_str().as_bytes())?),
            None => None,
        };
        let name = match &options.name {
            Some(name) => Some(c_string("name", name.as_bytes())?),
            None => None,
        };
        let keys = options.load.key_bytes();
        let load = options.load.to_c(&keys);
        let mut flags = 0;
        if !options.share {
            flags |= ffi::CHASH_RELOAD_NO_SHARE;
        }
        if !options.keep_last_good {
            flags |= ffi::CHASH_RELOAD_NO_LAST_GOOD;
        }
        if !options.write_state {
            flags |= ffi::CHASH_RELOAD_NO_WRITE;
        }
        let c_options = ffi::chash_reloader_options {
            size: std::mem::size_of::<ffi::chash_reloader_options>() as u32,
            flags,
            load: &load,
            state_dir: state_dir.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()),
            name: name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
        };
        let mut out = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings and options that borrow `keys`,
        // `load`, `state_dir` and `name`, alive for the call.
        let code = unsafe { ffi::chash_reloader_new(c_path.as_ptr(), &c_options, &mut out) };
        // SAFETY: on success a new reloader, owned here (freed by Owned if
        // its snapshot is refused).
        let raw = unsafe { Owned::new(code, out) }.map_err(SnapshotError::from_code)?;
        let mut served = std::ptr::null_mut();
        // SAFETY: a live reloader; served is a valid out-pointer.
        let code = unsafe { ffi::chash_reloader_current(raw.as_ptr(), &mut served) };
        let snapshot = Snapshot::adopt(code, served)?;
        Ok(Reloader {
            raw,
            path,
            current: RwLock::new(Current::new(snapshot)),
            accepting: Mutex::new(()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The served snapshot: ring, header, label and subsets that belong
    /// together. An `Arc` clone under a read lock.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()).snapshot)
    }

    /// The served ring: an `Arc` that stays valid across reloads. A read
    /// lock and one reference count; no allocation.
    pub fn ring(&self) -> Arc<Ring> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()).ring)
    }

    /// The served ring as pingora-ketama's [`Continuum`] (see
    /// [`Snapshot::continuum`]: built once a snapshot, then an `Arc`
    /// clone), for pingora services that keep its API.
    pub fn continuum(&self) -> Result<Arc<Continuum>, Error> {
        self.snapshot().continuum()
    }

    fn found(
        &self,
        code: i32,
        result: Box<ffi::chash_reload_result>,
    ) -> Result<ReloadCheck<'_>, SnapshotError> {
        if code != ffi::CHASH_OK {
            return Err(SnapshotError::from_code(code));
        }
        match result.outcome {
            ffi::CHASH_RELOAD_NEW => {
                let mut result = result;
                let snapshot = std::mem::replace(&mut result.snapshot, std::ptr::null_mut());
                let snapshot = Box::new(Snapshot::adopt(ffi::CHASH_OK, snapshot)?);
                Ok(ReloadCheck::New(Candidate { reloader: self, result, snapshot }))
            }
            ffi::CHASH_RELOAD_SAME_RING => Ok(ReloadCheck::SameRing),
            ffi::CHASH_RELOAD_REFUSED => {
                let check = SnapshotCheck::from_code(result.check);
                Err(SnapshotError::with_code(check, result.error, message_text(&result.message)))
            }
            ffi::CHASH_RELOAD_UNCHANGED => Ok(ReloadCheck::Unchanged),
            // An outcome of a newer library: nothing this crate can serve.
            _ => Ok(ReloadCheck::Unchanged),
        }
    }

    /// Looks at the path once: [`ReloadCheck::New`] with a candidate the
    /// library verified (or adopted from another process of the host), for
    /// embedders with checks of their own; the refusal as an error (the
    /// served ring stays). [`Reloader::poll`] is check and accept.
    pub fn check(&self) -> Result<ReloadCheck<'_>, SnapshotError> {
        let mut result = Box::new(sized());
        // SAFETY: a live reloader; result is a sized out-struct.
        let code = unsafe { ffi::chash_reloader_check(self.raw.as_ptr(), &mut *result) };
        self.found(code, result)
    }

    /// The newest ring another process of the host verified (with a state
    /// directory), if it is newer than the one served; never reads the
    /// watched path. For a process that starts after its siblings.
    pub fn adopt_shared(&self) -> Result<ReloadCheck<'_>, SnapshotError> {
        let mut result = Box::new(sized());
        // SAFETY: as check.
        let code = unsafe { ffi::chash_reloader_adopt_shared(self.raw.as_ptr(), &mut *result) };
        self.found(code, result)
    }

    /// Checks the path once and serves a new file that passes every check.
    /// A refusal is the error (the served ring stays; the library remembers
    /// the file, counts it in [`Reloader::report`] and never loads it
    /// again, except after running out of memory). Thread-safe.
    pub fn poll(&self) -> Result<Reload, SnapshotError> {
        match self.check()? {
            ReloadCheck::New(candidate) => candidate.accept(),
            ReloadCheck::SameRing => Ok(Reload::SameRing),
            ReloadCheck::Unchanged => Ok(Reload::Unchanged),
        }
    }

    /// What the reloader has done (`chash_reload_report`); never waits for
    /// a check in flight.
    pub fn report(&self) -> ReloadReport {
        let mut raw: ffi::chash_reload_report = sized();
        // SAFETY: a live reloader; raw is a sized out-struct.
        let code = unsafe { ffi::chash_reloader_report(self.raw.as_ptr(), &mut raw) };
        debug_assert_eq!(code, ffi::CHASH_OK);
        ReloadReport {
            served_version: raw.served_version,
            highest_version: raw.highest_version,
            accepted: raw.accepted,
            adopted: raw.adopted,
            refused: raw.refused,
            last_check: SnapshotCheck::from_code(raw.last_check),
            last_error: raw.last_error,
            last_message: message_text(&raw.last_message),
            last_refused_unix_seconds: unix_seconds(raw.last_refused_unix_seconds),
            checking_since_unix_seconds: unix_seconds(raw.checking_since_unix_seconds),
            serving_last_good: raw.serving_last_good != 0,
            state_error: (raw.state_error != 0).then(|| message_text(&raw.state_message)),
            served_expires_unix_seconds: unix_seconds(raw.served_expires_unix_seconds),
            serving_expired: raw.serving_expired != 0,
            state_file: (raw.state_file[0] != 0).then(|| message_text(&raw.state_file)),
        }
    }

    /// Files served after the first (`report().accepted`).
    pub fn reloads(&self) -> u64 {
        self.report().accepted
    }

    /// Files refused, each once (`report().refused`).
    pub fn refusals(&self) -> u64 {
        self.report().refused
    }

    /// The last refusal; `None` if there was none.
    pub fn last_error(&self) -> Option<SnapshotError> {
        let report = self.report();
        (report.last_check != SnapshotCheck::None).then(|| {
            SnapshotError::with_code(report.last_check, report.last_error, report.last_message)
        })
    }

    /// Polls every `interval` on a thread of its own until the returned
    /// [`Watcher`] is dropped (which stops and joins it). Refusals go to
    /// [`Reloader::report`]. An error ([`ErrorKind::Other`]) only if the
    /// system refuses a thread.
    pub fn watch(self: &Arc<Self>, interval: Duration) -> Result<Watcher, Error> {
        let (stop, stopped) = mpsc::channel::<()>();
        let reloader = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("chash-reloader".into())
            .spawn(move || loop {
                match stopped.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => {
                        // The refusal is kept in the report.
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
