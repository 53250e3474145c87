//! Fuzz target `sst_table`: see `zkv_fuzz::targets::sst_table`.
fn main() {
    zkv_fuzz::run("sst_table", zkv_fuzz::targets::sst_table);
}
