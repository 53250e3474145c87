//! Fuzz target `blob_index`: see `zkv_fuzz::targets::blob_index`.
fn main() {
    zkv_fuzz::run("blob_index", zkv_fuzz::targets::blob_index);
}
