//! Fuzz target `sst_index_block`: see `zkv_fuzz::targets::sst_index_block`.
fn main() {
    zkv_fuzz::run("sst_index_block", zkv_fuzz::targets::sst_index_block);
}
