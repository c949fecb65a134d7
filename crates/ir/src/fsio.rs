//! Writing result files so that none is ever lost or left half written: every file goes
//! to a temporary name in its directory and is renamed into place when complete, and
//! tensor outputs get file names that stay distinct after sanitizing.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A file being written: data goes to `.<name>.tmp-<pid>` beside the target and becomes
/// `path` only on [`AtomicFile::commit`]. Dropped without commit, the temporary file is
/// removed, so an error or a panic leaves nothing under the final name.
pub struct AtomicFile {
    tmp: PathBuf,
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl AtomicFile {
    pub fn create(path: &Path) -> std::io::Result<AtomicFile> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path.file_name().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name")
        })?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        // Registered before it exists: an interrupt between the two steps still finds it.
        register_temp(&tmp);
        let file = std::fs::File::create(&tmp).inspect_err(|_| unregister_temp(&tmp))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
            file: Some(std::io::BufWriter::new(file)),
        })
    }

    /// Flush, then rename the temporary file to the target name.
    pub fn commit(mut self) -> std::io::Result<()> {
        if let Some(f) = self.file.take() {
            f.into_inner().map_err(|e| e.into_error())?.sync_all().ok();
        }
        // Renamed under the registry's lock: an interrupt handler removing the temporaries
        // holds it until the process exits (`remove_temps_and_exit`), so a Ctrl-C never
        // makes this rename fail on a vanished file (an I/O error, exit 2, not 130).
        let mut temps = TEMPS.lock().unwrap_or_else(|e| e.into_inner());
        std::fs::rename(&self.tmp, &self.path)?;
        temps.retain(|x| x != &self.tmp);
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(std::io::Error::other("file already committed")),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
            unregister_temp(&self.tmp);
        }
    }
}

/// Write `bytes` to `path` through an [`AtomicFile`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Temporary files in flight, so an interrupt handler can remove them
/// ([`remove_temps`]).
static TEMPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn register_temp(p: &Path) {
    if let Ok(mut t) = TEMPS.lock() {
        t.push(p.to_path_buf());
    }
}

fn unregister_temp(p: &Path) {
    if let Ok(mut t) = TEMPS.lock() {
        t.retain(|x| x != p);
    }
}

/// Remove every temporary file still being written (call from a Ctrl-C handler before
/// exiting).
pub fn remove_temps() {
    if let Ok(t) = TEMPS.lock() {
        for p in t.iter() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Remove every temporary file still being written and exit with `code` (a Ctrl-C or
/// SIGTERM handler). The registry stays locked until the process is gone, so no new
/// temporary file can appear in between (files are registered before they are created).
pub fn remove_temps_and_exit(code: i32) -> ! {
    let t = TEMPS.lock().unwrap_or_else(|e| e.into_inner());
    for p in t.iter() {
        let _ = std::fs::remove_file(p);
    }
    std::process::exit(code)
}

/// Characters other than [A-Za-z0-9_.-] become '_' (file names from tensor names).
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // "." and ".." (and hidden names) would not be the files they look like.
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// One file stem per output name: the sanitized name, or `<sanitized>-2`, `-3`, ... when
/// an earlier output already sanitizes to it (so `a/b` and `a_b` never overwrite each
/// other). The same names always map to the same stems, in order.
pub fn output_file_stems(names: &[String]) -> Vec<String> {
    let mut used = std::collections::HashSet::new();
    names
        .iter()
        .map(|n| {
            let base = sanitize(n);
            let mut stem = base.clone();
            let mut k = 2;
            while !used.insert(stem.to_lowercase()) {
                stem = format!("{base}-{k}");
                k += 1;
            }
            stem
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_names_stay_distinct() {
        let names: Vec<String> = ["a/b", "a_b", "A_B", "..", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            output_file_stems(&names),
            ["a_b", "a_b-2", "A_B-3", "_..", "_"]
        );
    }

    #[test]
    fn atomic_files_appear_only_when_committed() {
        let dir = std::env::temp_dir().join(format!("pimkit-fsio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.bin");
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"partial").unwrap();
            // dropped without commit
        }
        assert!(!p.exists());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "no temporary file left"
        );
        write_atomic(&p, b"done").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"done");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
