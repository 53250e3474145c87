//! Fuzz target `blob_file`: see `zkv_fuzz::targets::blob_file`.
fn main() {
    zkv_fuzz::run("blob_file", zkv_fuzz::targets::blob_file);
}
