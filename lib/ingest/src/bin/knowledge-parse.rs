//! A parser child and nothing else (`knowledge_ingest::isolated`), for this crate's tests: the
//! service's binaries serve the same way when started with its argument.

fn main() {
    knowledge_ingest::isolated::serve_if_child();
    eprintln!(
        "usage: knowledge-parse {} FORMAT MEMORY MILLIS < FILE",
        knowledge_ingest::isolated::CHILD_ARG
    );
    std::process::exit(2);
}
