//! Fuzz target `meta_record`: see `zkv_fuzz::targets::meta_record`.
fn main() {
    zkv_fuzz::run("meta_record", zkv_fuzz::targets::meta_record);
}
