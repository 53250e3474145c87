//! Fuzz target `engine_wal`: see `zkv_fuzz::targets::engine_wal`.
fn main() {
    zkv_fuzz::run("engine_wal", zkv_fuzz::targets::engine_wal);
}
