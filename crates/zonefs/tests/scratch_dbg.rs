mod common;
use common::*;
use zonefs::meta::*;
#[test]
fn dbg() {
    for seed in 0..50 {
        let (_mem, dev) = mem_device(small_geometry());
        let mut h = Harness::format(dev, 3, seed);
        let mut recs: Vec<Record> = vec![];
        for _ in 0..3000 {
            let rec = h.work.next_record();
            if let Err(e) = h.state.apply(&rec) {
                for r in recs.iter().rev().take(400).rev() {
                    let s = format!("{r:?}");
                    if s.contains("FileId(0)") || s.contains("zone: 3") { }
                }
                eprintln!("seed {seed} err {e:?} rec {rec:?}");
                let id = match e { StateError::Overlap{ other, ..} => other, _ => panic!() };
                for r in &recs { let s = format!("{r:?}"); if s.contains(&format!("FileId({})", id.0)) { eprintln!("  {s}"); } }
                panic!();
            }
            recs.push(rec);
        }
    }
}
