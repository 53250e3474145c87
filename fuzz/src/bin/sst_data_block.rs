//! Fuzz target `sst_data_block`: see `zkv_fuzz::targets::sst_data_block`.
fn main() {
    zkv_fuzz::run("sst_data_block", zkv_fuzz::targets::sst_data_block);
}
