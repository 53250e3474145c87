//! Fuzz target `sst_props`: see `zkv_fuzz::targets::sst_props`.
fn main() {
    zkv_fuzz::run("sst_props", zkv_fuzz::targets::sst_props);
}
