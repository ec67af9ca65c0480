//! Latencies and what a process holds.

use std::time::Duration;

/// Latencies of one scenario.
#[derive(Default)]
pub struct Latencies(Vec<Duration>);

impl Latencies {
    pub fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    pub fn push_ms(&mut self, ms: f64) {
        self.0.push(Duration::from_secs_f64(ms / 1000.0));
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The nearest-rank percentile `p` (0 to 1), in milliseconds.
    pub fn ms(&self, p: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort();
        let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[at].as_secs_f64() * 1000.0
    }

    pub fn mean_ms(&self) -> f64 {
        self.0.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / self.0.len() as f64
    }
}

/// `VmRSS` and `VmHWM` of this process, in MiB, from `/proc/self/status`.
pub fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = |key: &str| -> f64 {
        let line = status.lines().find(|l| l.starts_with(key)).expect(key);
        let n: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        n / 1024.0
    };
    (kib("VmRSS:"), kib("VmHWM:"))
}

/// MB (10^6 bytes) a second.
pub fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// The CPU time this process has used, user and system, from `/proc/self/stat`.
pub fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command's name, which is in parentheses and may hold spaces.
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // The kernel's USER_HZ, 100 on every Linux this runs on.
    Duration::from_millis(ticks * 10)
}
