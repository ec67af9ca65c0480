#!/usr/bin/env python3
"""What a function binary is made of: its sections, and its code by crate.

Usage: bench/binary_sizes.py PATH [N]
PATH is an unstripped binary (build it with cargo-lambda's settings and strip off, e.g.
`cargo build --release --bin me --config 'profile.release.opt-level="s"'
 --config 'profile.release.lto="thin"' --config 'profile.release.codegen-units=1'
 --config 'profile.release.panic="abort"'`); N is how many crates to list (default 30).
Symbols are attributed to the first segment of their demangled path (`nm -S -C`); generic code
is counted where it was instantiated from (`core`, `alloc`, ...), C code as "(C / unnamed)".
"""

import collections
import re
import subprocess
import sys


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    sections = subprocess.run(["size", "-A", path], check=True, capture_output=True, text=True)
    print("| section | MB |\n|---|---:|")
    rows = [line.split() for line in sections.stdout.splitlines()[2:]]
    for name, size, *_ in sorted((r for r in rows if len(r) >= 2 and r[1].isdigit()),
                                 key=lambda r: -int(r[1]))[:8]:
        print(f"| `{name}` | {int(size) / 1e6:.2f} |")

    nm = subprocess.run(["nm", "-S", "--size-sort", "-C", path], check=True,
                        capture_output=True, text=True)
    by_crate: collections.Counter[str] = collections.Counter()
    for line in nm.stdout.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        name = re.sub(r"^(<|&|\*const |\*mut |dyn )+", "", parts[3].strip())
        crate = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
        by_crate[crate.group(1) if crate else "(C / unnamed)"] += int(parts[1], 16)
    print(f"\nsymbols: {sum(by_crate.values()) / 1e6:.2f} MB\n\n| crate | MB |\n|---|---:|")
    for crate, size in by_crate.most_common(top):
        print(f"| `{crate}` | {size / 1e6:.3f} |")


if __name__ == "__main__":
    main()
