//! Fuzz target `meta_frame`: see `zkv_fuzz::targets::meta_frame`.
fn main() {
    zkv_fuzz::run("meta_frame", zkv_fuzz::targets::meta_frame);
}
