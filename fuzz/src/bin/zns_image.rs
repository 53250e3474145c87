//! Fuzz target `zns_image`: see `zkv_fuzz::targets::zns_image`.
fn main() {
    zkv_fuzz::run("zns_image", zkv_fuzz::targets::zns_image);
}
