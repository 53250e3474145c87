//! Fuzz target `meta_superblock`: see `zkv_fuzz::targets::meta_superblock`.
fn main() {
    zkv_fuzz::run("meta_superblock", zkv_fuzz::targets::meta_superblock);
}
