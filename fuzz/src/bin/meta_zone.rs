//! Fuzz target `meta_zone`: see `zkv_fuzz::targets::meta_zone`.
fn main() {
    zkv_fuzz::run("meta_zone", zkv_fuzz::targets::meta_zone);
}
