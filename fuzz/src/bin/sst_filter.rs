//! Fuzz target `sst_filter`: see `zkv_fuzz::targets::sst_filter`.
fn main() {
    zkv_fuzz::run("sst_filter", zkv_fuzz::targets::sst_filter);
}
