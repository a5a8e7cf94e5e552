//! Output files that appear whole or not at all.
//!
//! CONVENTIONS.md: a failed command leaves no OUT and an existing OUT untouched. So every output is
//! written to a temporary file in OUT's directory (same file system, so the final `rename` is atomic) and
//! renamed over OUT only after everything succeeded. The temporary file is removed when the writer is
//! dropped without [`AtomicOutput::commit`], which also covers errors and panics (the CLI unwinds).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A temporary file that becomes `target` on [`AtomicOutput::commit`].
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
        let base = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        // A few attempts in case a stale temporary file of a crashed run has the same name.
        let mut last_err = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = dir.join(format!(".{base}.bitsparse-tmp-{}-{n}", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => return Ok(AtomicOutput { target: target.to_path_buf(), tmp, file: Some(BufWriter::new(f)) }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_err.unwrap_or_else(|| std::io::Error::other("cannot create a temporary file")))
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut impl Write {
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
    }
}

/// Writes to `target` atomically (for subcommands that produce their output in one go).
#[allow(dead_code)]
pub fn write_atomic(target: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut out = AtomicOutput::create(target)?;
    write(out.writer())?;
    out.commit()
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
        // No temporary files left behind either way.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn refuses_a_directory_target() {
        let d = scratch("b");
        assert!(AtomicOutput::create(&d).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
