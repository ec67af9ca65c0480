//! The table of functions in `functions/README.md`: what each serves, and its names in the
//! binaries, the template and the sample events.

use std::fmt::Write;

use knowledge_assembly::functions::ALL;

use crate::binaries::constant;
use crate::pascal;
use crate::template::description;

/// The table, a row of it per function.
pub fn tables() -> String {
    let mut out = String::from(
        "| function | serves | row | `template.yaml` | sample event | timeout |\n\
         |---|---|---|---|---|---:|\n",
    );
    for row in ALL {
        let _ = writeln!(
            out,
            "| [`{name}`](src/bin/{name}.rs) | {serves} | `{constant}` | `{pascal}Function` | \
             [`events/{name}.json`](../events/{name}.json) | {timeout} s |",
            name = row.name,
            serves = description(row).replace('|', "\\|"),
            constant = constant(row.name),
            pascal = pascal(row.name),
            timeout = row.lambda.timeout_secs,
        );
    }
    out
}
