//! Writes the seed corpus: `make-corpus [DIR]` (default: the crate's `corpus/`) writes
//! `DIR/<target>/<seed>` for every seed of `zkv_fuzz::seeds`. Files already there (the
//! fuzzer's finds, regressions) are kept; seeds are overwritten with the same bytes.
use std::path::PathBuf;

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(zkv_fuzz::corpus_dir);
    let mut total = (0, 0);
    for (target, seeds) in zkv_fuzz::seeds::all() {
        let sub = dir.join(target);
        std::fs::create_dir_all(&sub).expect("create the corpus directory");
        for (name, bytes) in &seeds {
            std::fs::write(sub.join(format!("seed-{name}")), bytes).expect("write a seed");
            total.0 += 1;
            total.1 += bytes.len();
        }
        println!("{target}: {} seeds", seeds.len());
    }
    println!("{} seeds, {} bytes, in {}", total.0, total.1, dir.display());
}
