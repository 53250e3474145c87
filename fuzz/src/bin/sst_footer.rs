//! Fuzz target `sst_footer`: see `zkv_fuzz::targets::sst_footer`.
fn main() {
    zkv_fuzz::run("sst_footer", zkv_fuzz::targets::sst_footer);
}
