//! How the CLI reads its input and writes its output: once, through whatever the user names.
//!
//! **Input** is read exactly once, whole, into memory ([`read_input`]), and the file kind is sniffed from
//! those bytes (`files::detect`). An earlier version opened the input a second time just to sniff its
//! first 16 bytes: for a pipe, `/dev/stdin`, `<(…)` or a FIFO those bytes were then gone from the real
//! read, and the container silently lacked them. `-` means standard input.
//!
//! **Output** ([`Output::open`]), by what OUT is:
//! - a regular file, or a name that does not exist yet: written to a temporary file in the same
//!   directory and renamed over OUT only after everything succeeded (docs/CONVENTIONS.md: a failed command
//!   leaves no OUT and an existing OUT untouched). The temporary name is short and fixed-length
//!   (`.bitsparse-tmp-PID-N`), so an OUT name at the file system's 255-byte limit still works;
//! - a symbolic link: followed to its final target, which is then treated as above — a link to a
//!   regular file has its target replaced atomically and stays a link;
//! - anything else that exists (a character device such as `/dev/null`, a FIFO, a socket): opened and
//!   written through, never replaced. Running as root, replacing `/dev/null` by a regular file would
//!   break the system;
//! - `-`: standard output. The one case without an atomic rename: the commands compute and check the
//!   whole result before writing its first byte, so any failure before that leaves stdout empty; a
//!   failure while writing (the reader closed the pipe, the disk is full) leaves the bytes written so far
//!   in the pipe, and the command exits 1 with one `error:` line.
//!
//! **Interrupts**: SIGINT, SIGTERM and SIGHUP remove every temporary file still open (a watcher thread,
//! [`install_signal_cleanup`]) and exit 128 + the signal number, as a shell reports a killed command.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use super::CliError;

/// `-`: standard input as IN, standard output as OUT.
pub fn is_std(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads the whole input once: the file at `path`, or standard input for `-`.
pub fn read_input(path: &Path) -> Result<Vec<u8>, CliError> {
    let r = if is_std(path) {
        let mut v = Vec::new();
        std::io::stdin().lock().read_to_end(&mut v).map(|_| v)
    } else {
        std::fs::read(path)
    };
    r.map_err(|e| CliError::file(path, format!("cannot read: {e}")))
}

/// Refuses an OUT that is the same file as IN — the same path, or the same inode through another name,
/// a hard link or a symbolic link — as a usage error, before anything is read or written: writing the
/// output would destroy the input. Standard input and output are never "the same file" here, and only
/// an IN that is a regular file can be (`/dev/stdin` and `/dev/stdout` may both be one terminal).
pub fn check_distinct(input: &Path, output: &Path) {
    if is_std(input) || is_std(output) {
        return;
    }
    let Ok(im) = std::fs::metadata(input) else { return };
    if !im.is_file() {
        return;
    }
    let Ok(om) = std::fs::metadata(output) else { return };
    if same_file(&im, &om) {
        super::file_cmds::usage_error(&format!(
            "OUT `{}` is the same file as IN `{}`: writing it would destroy the input",
            output.display(),
            input.display()
        ));
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    // No portable inode identity in std: only the same path is caught, by the caller's canonicalisation.
    false
}

/// Follows symbolic links from `path` to the name that is not a link (which need not exist: a dangling
/// link's target is where the output goes). Relative link targets resolve against the link's directory.
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // Linux's own limit on links followed in one lookup.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Where the output goes; see the module documentation.
pub enum Output {
    /// A temporary file renamed over the (link-resolved) target on [`Output::commit`].
    Atomic(AtomicOutput),
    /// An existing special file (device, FIFO, socket), written through; `true` when it is the
    /// process's own standard output (`/dev/stdout`, `/proc/self/fd/1`).
    Direct(BufWriter<File>, bool),
    /// Standard output (`-`).
    Stdout(BufWriter<std::io::Stdout>),
}

impl Output {
    /// Opens OUT for writing. A directory, or a missing parent directory, fails here, before any work.
    pub fn open(path: &Path) -> Result<Output, CliError> {
        let err = |e: std::io::Error| CliError::file(path, format!("cannot write: {e}"));
        if is_std(path) {
            return Ok(Output::Stdout(BufWriter::new(std::io::stdout())));
        }
        // The kernel follows the links (including `/proc` magic links such as `/dev/stdout` →
        // `/proc/self/fd/1` → `pipe:[…]`, which no textual resolution can follow).
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Err(err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a directory"))),
            Ok(m) if m.is_file() => {
                // Replace the link's final target, not the link.
                let target = std::fs::canonicalize(path).map_err(err)?;
                AtomicOutput::create(&target).map(Output::Atomic).map_err(err)
            }
            Ok(m) => {
                let f = OpenOptions::new().write(true).open(path).map_err(err)?;
                Ok(Output::Direct(BufWriter::new(f), is_our_stdout(&m)))
            }
            // Nothing there yet, or a dangling link: create the file the link names.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let target = resolve_links(path).map_err(err)?;
                AtomicOutput::create(&target).map(Output::Atomic).map_err(err)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// Whether the output is standard output (then the summary line goes to stderr and `--json` is refused).
    pub fn is_stdout(&self) -> bool {
        matches!(self, Output::Stdout(_) | Output::Direct(_, true))
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut dyn Write {
        match self {
            Output::Atomic(a) => a.writer(),
            Output::Direct(w, _) => w,
            Output::Stdout(w) => w,
        }
    }

    /// Finishes the output: renames the temporary file into place, or flushes a written-through one.
    pub fn commit(self) -> std::io::Result<()> {
        match self {
            Output::Atomic(a) => a.commit(),
            Output::Direct(w, _) => w.into_inner().map_err(|e| e.into_error())?.sync_all().or_else(ignore_unsyncable),
            Output::Stdout(mut w) => w.flush(),
        }
    }
}

/// Whether `m` describes the same file as this process's standard output.
#[cfg(unix)]
fn is_our_stdout(m: &std::fs::Metadata) -> bool {
    use std::os::fd::AsFd;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else { return false };
    File::from(fd).metadata().map(|s| same_file(&s, m)).unwrap_or(false)
}

#[cfg(not(unix))]
fn is_our_stdout(_: &std::fs::Metadata) -> bool {
    false
}

/// `fsync` on a FIFO or a character device fails with EINVAL on Linux: there is nothing to sync.
fn ignore_unsyncable(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::InvalidInput {
        Ok(())
    } else {
        Err(e)
    }
}

/// The temporary files open right now, for the signal watcher to remove.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the thread that, on SIGINT, SIGTERM or SIGHUP, removes the temporary files and exits
/// 128 + the signal number. Without it a `^C` during a long compress left a `.bitsparse-tmp-*` file.
#[cfg(unix)]
pub fn install_signal_cleanup() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else { return };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            for p in temporaries().iter() {
                let _ = std::fs::remove_file(p);
            }
            eprintln!("error: interrupted by signal {sig}: no output written");
            // `_exit`, not `exit`: the main thread may be inside a driver, and running the exit-time
            // teardown of Mesa's libraries under it aborted the process now and then on lavapipe (LLVM's
            // "CommandLine Error", then SIGABRT instead of the exit status). Nothing of ours needs it.
            signal_hook::low_level::exit(128 + sig);
        }
    });
}

#[cfg(not(unix))]
pub fn install_signal_cleanup() {}

/// A temporary file that becomes `target` on [`AtomicOutput::commit`]. The temporary file is removed
/// when the writer is dropped without a commit, which also covers errors and panics (the CLI unwinds).
pub struct AtomicOutput {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
}

impl AtomicOutput {
    /// Creates the temporary file beside `target`. Refuses a `target` that is a directory now, rather
    /// than after all the work.
    pub fn create(target: &Path) -> std::io::Result<AtomicOutput> {
        if target.is_dir() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a directory"));
        }
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        // A few attempts in case a stale temporary file of a crashed run has the same name.
        let mut last_err = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            // Not derived from OUT's name: OUT may already be as long as a name can be.
            let tmp = dir.join(format!(".bitsparse-tmp-{}-{n}", std::process::id()));
            // Registered before it exists, so a signal between the two still finds it.
            temporaries().push(tmp.clone());
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => return Ok(AtomicOutput { target: target.to_path_buf(), tmp, file: Some(BufWriter::new(f)) }),
                Err(e) => {
                    temporaries().retain(|p| p != &tmp);
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| std::io::Error::other("cannot create a temporary file")))
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.file.as_mut().expect("writer used after commit")
    }

    /// Flushes, syncs and renames the temporary file to the target.
    pub fn commit(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("commit called twice");
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.tmp, &self.target)
        // On a rename error, Drop removes the temporary file.
    }
}

impl Drop for AtomicOutput {
    fn drop(&mut self) {
        self.file = None;
        // After a successful rename the temporary name no longer exists: this is then a harmless no-op.
        let _ = std::fs::remove_file(&self.tmp);
        temporaries().retain(|p| p != &self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bitsparse-output-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write_atomic(target: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
        let mut out = AtomicOutput::create(target)?;
        write(out.writer())?;
        out.commit()
    }

    #[test]
    fn commit_replaces_and_failure_keeps_the_old_file() {
        let d = scratch("a");
        let t = d.join("out.bin");
        std::fs::write(&t, b"old").unwrap();
        let r = write_atomic(&t, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("boom"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&t).unwrap(), b"old");
        write_atomic(&t, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&t).unwrap(), b"new");
        // No temporary files left behind either way, and none still registered for the signal watcher.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        assert!(!temporaries().iter().any(|p| p.starts_with(&d)));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn refuses_a_directory_target() {
        let d = scratch("b");
        assert!(AtomicOutput::create(&d).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn links_resolve_to_their_final_target() {
        let d = scratch("c");
        std::os::unix::fs::symlink("real.bin", d.join("l1")).unwrap();
        std::os::unix::fs::symlink(d.join("l1"), d.join("l2")).unwrap();
        assert_eq!(resolve_links(&d.join("l2")).unwrap(), d.join("real.bin"));
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert!(resolve_links(&d.join("loop")).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
