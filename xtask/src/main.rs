//! `cargo xtask derive`: writes every file derived from the rows of functions and from the
//! routes' declarations; `cargo xtask derive --check` lists the stale ones and fails.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let root = xtask::root();
    let result = match args.as_slice() {
        ["derive"] => xtask::write(&root).map(|written| {
            for path in &written {
                println!("wrote {}", path.display());
            }
            if written.is_empty() {
                println!("every derived file is up to date");
            }
            true
        }),
        ["derive", "--check"] => xtask::stale(&root).map(|stale| {
            for file in &stale {
                println!("stale: {}", file.path.display());
            }
            stale.is_empty()
        }),
        _ => {
            eprintln!("usage: cargo xtask derive [--check]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("run `cargo xtask derive` and commit what it writes");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
