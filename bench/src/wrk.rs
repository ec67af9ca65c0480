//! The transcript poll as a load generator sees it: `wrk` (Debian's package) against a bare
//! axum server and against a tail poll of the real service, in alternating rounds (A B A B …),
//! each round's requests/s printed, then the median ratio of the rounds. wrk is a lighter
//! client than either server, so the ratio is the servers', not the client's.
//!
//! Each round also gives the CPU time this process (the servers) spent per request, user and
//! system, from `/proc/self/stat`: on a shared machine, where the rate depends on what else
//! runs, that cost does not.
//!
//! Pinning (`--server-cpus`, `--wrk-cpus`, on by default): this process, both servers in it,
//! runs on the first CPUs and wrk on the last, so that neither takes the other's core when the
//! scheduler would hand it over unevenly; each round's figures are then those of one server
//! core against one load-generator core, the same for A and B.

use std::process::Command;

/// How the rounds are run. Parsed from `transcript-poll wrk [--rounds N] [--seconds S]
/// [--connections C] [--threads T] [--server-cpus LIST|none] [--wrk-cpus LIST]
/// [--only tail|bare]`.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Pairs of rounds (A then B) measured.
    pub rounds: usize,
    /// Length of one round.
    pub seconds: u64,
    /// Keep-alive connections wrk holds open.
    pub connections: usize,
    /// wrk's threads.
    pub threads: usize,
    /// CPUs of this process (`taskset` list), `None` for no pinning.
    pub server_cpus: Option<String>,
    /// CPUs of wrk, when the servers are pinned.
    pub wrk_cpus: String,
    /// Rounds of one of the two alone (`tail` or `bare`), no ratio: to profile it (`perf
    /// record -p`, or the whole run under `valgrind --tool=callgrind`).
    pub only: Option<String>,
}

impl Plan {
    /// The plan of the arguments after `wrk`; defaults for what they leave out. On a machine of
    /// one CPU nothing is pinned. Panics on an unknown or malformed argument (a benchmark's
    /// command line).
    pub fn parse(args: &[String]) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let mut plan = Plan {
            rounds: 5,
            seconds: 8,
            connections: 8,
            threads: 1,
            server_cpus: match cpus {
                1 => None,
                2 => Some("0".to_owned()),
                _ => Some(format!("0-{}", cpus - 2)),
            },
            wrk_cpus: (cpus - 1).to_string(),
            only: None,
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args
                .next()
                .unwrap_or_else(|| panic!("{flag} needs a value"));
            let number = || value.parse().unwrap_or_else(|_| panic!("{flag} {value}"));
            match flag.as_str() {
                "--rounds" => plan.rounds = number(),
                "--seconds" => plan.seconds = number() as u64,
                "--connections" => plan.connections = number(),
                "--threads" => plan.threads = number(),
                "--server-cpus" if value == "none" => plan.server_cpus = None,
                "--server-cpus" => plan.server_cpus = Some(value.clone()),
                "--wrk-cpus" => plan.wrk_cpus = value.clone(),
                "--only" if value == "tail" || value == "bare" => plan.only = Some(value.clone()),
                _ => panic!("unknown argument {flag}"),
            }
        }
        plan
    }

    /// Pins this process to [`Plan::server_cpus`]. Called before any other thread starts:
    /// threads inherit the mask of the thread that starts them.
    pub fn pin_this_process(&self) {
        if let Some(cpus) = &self.server_cpus {
            let pid = std::process::id().to_string();
            let status = Command::new("taskset")
                .args(["-p", "-c", cpus, &pid])
                .stdout(std::process::Stdio::null())
                .status()
                .expect("taskset (util-linux)");
            assert!(status.success(), "taskset -p -c {cpus} failed");
        }
    }

    /// One wrk round against `url` with `cookie`: its requests/s, and this process's CPU time
    /// per request in µs. Panics when wrk is missing or when any answer was not a success (a
    /// refused cookie would be measured as fast).
    fn round(&self, url: &str, cookie: &str, seconds: u64) -> (f64, f64) {
        let mut command = match &self.server_cpus {
            Some(_) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &self.wrk_cpus, "wrk"]);
                c
            }
            None => Command::new("wrk"),
        };
        let cpu = cpu_seconds();
        let out = command
            .args(["-t", &self.threads.to_string()])
            .args(["-c", &self.connections.to_string()])
            .args(["-d", &format!("{seconds}s")])
            .args(["-H", &format!("Cookie: {cookie}")])
            .arg(url)
            .output()
            .expect("wrk (apt-get install -y wrk)");
        let cpu = cpu_seconds() - cpu;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "wrk failed: {text}");
        assert!(
            !text.contains("Non-2xx") && !text.contains("Socket errors"),
            "wrk saw failures against {url}:\n{text}"
        );
        let rate: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("Requests/sec:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Requests/sec in wrk's output:\n{text}"));
        let requests: f64 = text
            .lines()
            .find(|l| l.contains(" requests in "))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no request count in wrk's output:\n{text}"));
        (rate, cpu / requests * 1e6)
    }

    /// Runs the rounds, bare axum (`bare`) then the tail poll (`tail`) in each, after one
    /// short warm-up round of each; prints a Markdown table and the medians.
    pub fn run(&self, bare: &str, tail: &str, cookie: &str) {
        let pinned = match &self.server_cpus {
            Some(cpus) => format!("servers on CPUs {cpus}, wrk on CPUs {}", self.wrk_cpus),
            None => "nothing pinned".to_owned(),
        };
        println!(
            "wrk, {} connections, {} thread(s), {} s rounds, {pinned}\n",
            self.connections, self.threads, self.seconds
        );
        if let Some(only) = &self.only {
            println!("pid {}", std::process::id());
            let url = if only == "tail" { tail } else { bare };
            for n in 1..=self.rounds {
                let (rate, cpu) = self.round(url, cookie, self.seconds);
                println!("round {n}: {only} {rate:.0} requests/s, {cpu:.1} µs of CPU each");
            }
            return;
        }
        self.round(bare, cookie, 2);
        self.round(tail, cookie, 2);
        println!(
            "| round | bare axum, requests/s | tail poll, requests/s | ratio \
             | CPU µs per request, bare | the same, tail |"
        );
        println!("|---:|---:|---:|---:|---:|---:|");
        let (mut bares, mut tails, mut ratios, mut costs) = (vec![], vec![], vec![], vec![]);
        for n in 1..=self.rounds {
            let (a, a_cpu) = self.round(bare, cookie, self.seconds);
            let (b, b_cpu) = self.round(tail, cookie, self.seconds);
            println!(
                "| {n} | {a:.0} | {b:.0} | {:.2} | {a_cpu:.1} | {b_cpu:.1} |",
                b / a
            );
            bares.push(a);
            tails.push(b);
            ratios.push(b / a);
            costs.push(a_cpu / b_cpu);
        }
        println!(
            "\nMedians: bare axum {:.0}, tail poll {:.0} requests/s; ratio {:.2} \
             (the median of the rounds' ratios); bare axum's CPU time per request over the \
             tail poll's, {:.2}.",
            median(&mut bares),
            median(&mut tails),
            median(&mut ratios),
            median(&mut costs)
        );
    }
}

/// The CPU time this process has used so far, user and system, in seconds
/// (`/proc/self/stat`, in clock ticks of `getconf CLK_TCK`).
fn cpu_seconds() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let per_second = *TICKS.get_or_init(|| {
        let out = Command::new("getconf").arg("CLK_TCK").output();
        out.ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    });
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // After the command name (in parentheses): the state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |field: usize| fields[field - 3].parse::<f64>().expect("clock ticks");
    (ticks(14) + ticks(15)) / per_second
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
