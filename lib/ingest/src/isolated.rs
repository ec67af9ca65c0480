//! Parsing in a process of its own, so that its bounds are hard. In the process, [`parse`]'s
//! time is checked between pages and parts, and its memory follows from the file's size and
//! the expanded bytes a DOCX may hold, but one PDF stream compressed a million to one, or one
//! page a library takes minutes over, is beyond any check between steps. [`Isolated`] runs
//! each parse in a child process (the service's own binary, started with [`CHILD_ARG`]) whose
//! address space and CPU time the kernel limits, and which the parent kills at the time bound:
//! a file that breaks either ends `failed` with that reason, and the worker (and every other
//! organisation's work) carries on.
//!
//! The child reads the file on its standard input and writes its passages, or its refusal, as
//! one JSON document on its standard output ([`Answer`]).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use knowledge_core::domain::{Format, Passage};
use knowledge_core::ports::Parser;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Bounds, Refusal, parse};

/// The first argument that makes the service's binary a parser child ([`serve_if_child`]).
pub const CHILD_ARG: &str = "__knowledge-parse";

/// The address space a parse may use by default: the binary mapped, a 25 MiB file, its
/// passages and what the libraries hold while reading it (a 25 MiB PDF takes about 130 MiB
/// more than the file, `docs/performance.md`), with room to spare.
pub const DEFAULT_MEMORY: u64 = 1 << 30;

/// The most bytes of answer read from a child: its passages, which [`Bounds::max_passages`]
/// already bounds.
const MAX_ANSWER: u64 = 256 << 20;

/// What a child answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Answer {
    Passages(Vec<WirePassage>),
    Refused(String),
}

#[derive(Debug, Serialize, Deserialize)]
struct WirePassage {
    headings: Vec<String>,
    page: Option<u32>,
    text: String,
}

/// The core's `Parser` port on a child process per parse.
#[derive(Clone, Debug)]
pub struct Isolated {
    program: PathBuf,
    /// Arguments before the child's own.
    args: Vec<OsString>,
    bounds: Bounds,
    memory: u64,
}

impl Isolated {
    /// Parses in children started as `program args… CHILD_ARG …`, within `bounds` and `memory`
    /// bytes of address space: `program` must call [`serve_if_child`] first thing in `main`.
    pub fn new(program: PathBuf, args: Vec<OsString>, bounds: Bounds, memory: u64) -> Self {
        Self {
            program,
            args,
            bounds,
            memory,
        }
    }

    /// Parses in children of this very binary, within the default bounds and memory.
    /// Errors: the binary's path cannot be told.
    pub fn this_binary() -> std::io::Result<Self> {
        let program = std::env::current_exe()?;
        Ok(Self::new(
            program,
            Vec::new(),
            Bounds::DEFAULT,
            DEFAULT_MEMORY,
        ))
    }

    /// The child's answer for `bytes`, or why it gave none.
    async fn run(&self, format: Format, bytes: Bytes) -> Result<Answer, String> {
        let bounds = &self.bounds;
        let mut child = tokio::process::Command::new(&self.program)
            .args(&self.args)
            .arg(CHILD_ARG)
            .arg(format.as_str())
            .arg(self.memory.to_string())
            .arg(bounds.max_time.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                tracing::error!(error = %e, program = ?self.program, "the parser's process could not start");
                "the service could not start its reader: upload the file again later".to_owned()
            })?;
        let (mut stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let talk = async {
            if let Some(stdin) = stdin.as_mut() {
                // A child that refuses early closes its input: what it says is the answer.
                let _ = stdin.write_all(&bytes).await;
            }
            drop(stdin);
            let mut answer = Vec::new();
            if let Some(stdout) = stdout {
                let mut bounded = stdout.take(MAX_ANSWER);
                let _ = bounded.read_to_end(&mut answer).await;
            }
            let status = child.wait().await;
            (answer, status)
        };
        // The child limits its own CPU time to the bound; the wall clock gets a second more.
        let allowed = bounds.max_time + Duration::from_secs(1);
        let Ok((answer, status)) = tokio::time::timeout(allowed, talk).await else {
            // Dropping `talk` dropped the child, which kills it.
            return Err(Refusal::TooSlow(bounds.max_time).to_string());
        };
        let status = status.map_err(|e| format!("the reader failed: {e}"))?;
        match serde_json::from_slice(&answer) {
            Ok(answer) if status.success() => Ok(answer),
            _ => Err(self.stopped(status)),
        }
    }

    /// Why a child that gave no answer stopped: the kernel's limits (its CPU time: `SIGXCPU`
    /// or `SIGKILL`; its memory: an allocation refused aborts it), else a crash.
    fn stopped(&self, status: ExitStatus) -> String {
        use std::os::unix::process::ExitStatusExt;
        const SIGABRT: i32 = 6;
        const SIGKILL: i32 = 9;
        const SIGXCPU: i32 = 24;
        match status.signal() {
            Some(SIGXCPU | SIGKILL) => Refusal::TooSlow(self.bounds.max_time).to_string(),
            Some(SIGABRT) => format!(
                "reading the file needed more than {} MiB of memory",
                self.memory >> 20
            ),
            _ => {
                tracing::error!(%status, "the parser's process stopped without an answer");
                Refusal::Malformed("the reader stopped on it".into()).to_string()
            }
        }
    }
}

#[async_trait]
impl Parser for Isolated {
    /// The passages of `bytes`, parsed by a child process. Errors: the child's [`Refusal`], or
    /// the bound it broke (time, memory), in words a person can act on.
    async fn parse(&self, format: Format, bytes: Bytes) -> Result<Vec<Passage>, String> {
        match self.run(format, bytes).await? {
            Answer::Passages(passages) => Ok(passages
                .into_iter()
                .map(|p| Passage {
                    headings: p.headings,
                    page: p.page,
                    text: p.text,
                })
                .collect()),
            Answer::Refused(reason) => Err(reason),
        }
    }
}

/// When this process was started as a parser child (its first argument is [`CHILD_ARG`]):
/// limits itself, parses its standard input, writes its answer and exits. Otherwise returns
/// at once. Call it first thing in `main`, before any thread starts.
pub fn serve_if_child() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(CHILD_ARG.as_ref()) {
        return;
    }
    let args: Vec<String> = args.filter_map(|a| a.into_string().ok()).collect();
    let code = match child(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("parser child: {e}");
            2
        }
    };
    std::process::exit(code);
}

/// The child's work: `args` are the format, the address space in bytes and the time bound in
/// milliseconds.
fn child(args: &[String]) -> Result<(), String> {
    let [format, memory, millis] = args else {
        return Err(format!(
            "expected a format, a memory and a time, got {args:?}"
        ));
    };
    let format: Format = format.parse()?;
    let memory: u64 = memory.parse().map_err(|e| format!("memory: {e}"))?;
    let millis: u64 = millis.parse().map_err(|e| format!("time: {e}"))?;
    let bounds = Bounds {
        max_time: Duration::from_millis(millis),
        ..Bounds::DEFAULT
    };
    limit(memory, bounds.max_time).map_err(|e| format!("limits: {e}"))?;
    let mut bytes = Vec::new();
    let cap = bounds.max_bytes as u64 + 1;
    (std::io::stdin().lock().take(cap))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("input: {e}"))?;
    let answer = match parse(format, &bytes, &bounds) {
        Ok(passages) => Answer::Passages(
            passages
                .into_iter()
                .map(|p| WirePassage {
                    headings: p.headings,
                    page: p.page,
                    text: p.text,
                })
                .collect(),
        ),
        Err(refusal) => Answer::Refused(refusal.to_string()),
    };
    drop(bytes);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &answer).map_err(|e| format!("output: {e}"))?;
    out.flush().map_err(|e| format!("output: {e}"))
}

/// The kernel's bounds on this process: `memory` bytes of address space, the CPU time of
/// `time` rounded up (then `SIGXCPU`, and `SIGKILL` a second later), and death with its parent.
fn limit(memory: u64, time: Duration) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, Signal, setrlimit};
    let bytes = Rlimit {
        current: Some(memory),
        maximum: Some(memory),
    };
    setrlimit(Resource::As, bytes)?;
    let seconds = time.as_secs() + u64::from(time.subsec_nanos() > 0);
    let cpu = Rlimit {
        current: Some(seconds.max(1)),
        maximum: Some(seconds.max(1) + 1),
    };
    setrlimit(Resource::Cpu, cpu)?;
    #[cfg(target_os = "linux")]
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    Ok(())
}
