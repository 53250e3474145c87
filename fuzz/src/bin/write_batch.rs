//! Fuzz target `write_batch`: see `zkv_fuzz::targets::write_batch`.
fn main() {
    zkv_fuzz::run("write_batch", zkv_fuzz::targets::write_batch);
}
