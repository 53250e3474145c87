//! zkv embedded in a program: creates a store on an image file in a temporary directory,
//! writes to it, closes it, opens it again and checks that every write is there. Exits
//! with an error (and status 1) on any mismatch.

use std::error::Error;
use std::path::PathBuf;

use zkv::{Db, DbOptions, WriteBatch};

const KEYS: u32 = 1000;

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("zkv-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = round_trip(dir.join("store.img"));
    std::fs::remove_dir_all(&dir)?;
    result
}

fn round_trip(image: PathBuf) -> Result<(), Box<dyn Error>> {
    let device = format!("file:{}", image.display());

    let db = Db::open(&device, DbOptions::default())?;
    for i in 0..KEYS {
        db.put(key(i), value(i))?;
    }
    let mut batch = WriteBatch::new();
    batch.delete(&key(0));
    batch.put(b"last", b"written in a batch");
    db.write(batch)?;
    db.close()?;

    let reopen = DbOptions {
        create_if_missing: false,
        ..DbOptions::default()
    };
    let db = Db::open(&device, reopen)?;
    expect(&db, &key(0), None)?;
    for i in 1..KEYS {
        expect(&db, &key(i), Some(&value(i)))?;
    }
    expect(&db, b"last", Some(b"written in a batch"))?;
    let entries = db.iter()?.count();
    if entries != KEYS as usize {
        return Err(format!("{entries} entries after the reopen, expected {KEYS}").into());
    }
    db.close()?;
    println!("zkv-embed: {KEYS} keys written, closed, reopened and read back from {device}");
    Ok(())
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i}").into_bytes()
}

fn expect(db: &Db, key: &[u8], want: Option<&[u8]>) -> Result<(), Box<dyn Error>> {
    let got = db.get(key)?;
    if got.as_deref() != want {
        return Err(format!(
            "{}: read {:?}, expected {:?}",
            String::from_utf8_lossy(key),
            got.as_deref().map(String::from_utf8_lossy),
            want.map(String::from_utf8_lossy)
        )
        .into());
    }
    Ok(())
}
