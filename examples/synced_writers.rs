//! Synced writes from several threads: how group commit lets them share WAL syncs.
//!
//!     cargo run --release --example synced_writers -- DEVICE THREADS WRITES_PER_THREAD
//!
//! e.g. `file:/var/tmp/zkv-sync.img 8 500` (a new image: remove it between runs). Prints
//! the writes per second and how many writes joined another write's group.

use std::time::Instant;

use zkv::{Db, DbOptions, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [device, threads, writes] = &args[..] else {
        return Err("usage: synced_writers DEVICE THREADS WRITES_PER_THREAD".into());
    };
    let (threads, writes): (u64, u64) = (threads.parse()?, writes.parse()?);
    let db = Db::open(device, DbOptions::default())?;
    let start = Instant::now();
    let failures: Vec<zkv::Error> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let db = &db;
                s.spawn(move || -> zkv::Result<()> {
                    for i in 0..writes {
                        let key = format!("t{t}-{i:08}");
                        db.put_opt(key, [7u8; 100], &WriteOptions::synced())?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .filter_map(|w| w.join().ok().and_then(Result::err))
            .collect()
    });
    if let Some(e) = failures.into_iter().next() {
        return Err(e.into());
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = db.engine().stats();
    println!(
        "{threads} threads x {writes} synced puts: {:.0} writes/s, {} of {} writes joined a group",
        (threads * writes) as f64 / seconds,
        stats.grouped_writes,
        stats.writes
    );
    db.close()?;
    Ok(())
}
